// The standard library read, parsed, resolved and checked once, then shared
// read-only by any number of Programs in one process (tests, fuzzing, a tool
// that checks many packages): each skips reading, parsing and checking the
// library again, which costs more than most packages themselves.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "base/diagnostics.h"
#include "sema/program.h"

namespace linnet::sema {

class Stdlib {
 public:
  // Every module under dir/std (dir as Program's stdlibDir). Null when one
  // does not parse or check; `errors` then holds the rendered diagnostics.
  static std::shared_ptr<const Stdlib> load(const std::string& dir, std::string& errors);

  const std::string& dir() const { return dir_; }
  const SourceManager& sources() const { return sources_; }
  // The module read from this (weakly canonical) path, or null.
  const Module* find(const std::string& canonicalPath) const;
  const Module* moduleOf(const syntax::BlockDecl* block) const { return program_.moduleOf(block); }
  size_t moduleCount() const { return program_.modules().size(); }

  Stdlib(const Stdlib&) = delete;
  Stdlib& operator=(const Stdlib&) = delete;

 private:
  explicit Stdlib(std::string dir);
  std::string dir_;
  SourceManager sources_;
  Diagnostics diags_;
  Program program_;
};

}  // namespace linnet::sema
