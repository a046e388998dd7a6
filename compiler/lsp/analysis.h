// One check of the package a document belongs to, with the editor's unsaved
// texts in place of the disk's: the checked program and its diagnostics, the
// semantic index (every expression's type, every name's declaration) and the
// shape obligations with their proofs. The server keeps the latest one per
// package and answers hovers and definitions from it without checking again.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/diagnostics.h"
#include "sema/explain.h"
#include "sema/index.h"
#include "sema/program.h"
#include "sema/stdlib.h"

namespace linnet::lsp {

struct Analysis {
  SourceManager sources;
  Diagnostics diags{sources};
  std::unique_ptr<sema::Program> program;
  sema::SemanticIndex index;
  sema::Explainer explainer;
  std::string root;  // the package folder, or the lone file
  double seconds = 0;  // how long the check took
  // Every source's id by its canonical path, computed once per check: each
  // request looks its document up here.
  std::map<std::string, uint32_t> fileIds;

  // The source id of a file of this program (canonical path), else 0.
  uint32_t fileOf(const std::string& canonical) const;
  // The module read from source `file`, null when none is.
  const sema::Module* moduleOf(uint32_t file) const;
  // The files of the program's own modules (not the shared standard
  // library's): where diagnostics are published.
  std::vector<uint32_t> ownFiles() const;
};

// The package folder holding `path`: the nearest folder above it with a
// linnet.toml. Empty for a file of no package.
std::string packageOf(const std::string& path);

// Checks the package holding `path` (else `path` alone), definitions first,
// then the root block at the package's generics. `overlay` maps canonical
// paths to the editor's texts. Never throws for bad source: every problem is
// a diagnostic.
std::unique_ptr<Analysis> analyze(const std::string& path, const std::map<std::string, std::string>& overlay,
                                  const std::shared_ptr<const sema::Stdlib>& stdlib, const std::string& stdlibDir);

}  // namespace linnet::lsp
