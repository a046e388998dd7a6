// Diagnostics: `file:line:col: error: message`, the source line with a caret
// under the range, then notes. Errors are collected, not thrown, so one run
// reports as many independent problems as it can find.
#pragma once

#include <string>
#include <vector>

#include "base/source.h"

namespace linnet {

enum class Severity { Error, Warning, Note };

struct Diagnostic {
  Severity severity = Severity::Error;
  SourceRange range;
  std::string message;
  std::vector<Diagnostic> notes;
};

class Diagnostics {
 public:
  explicit Diagnostics(const SourceManager& sources) : sources_(sources) {}

  // Returns the new diagnostic so callers can attach notes.
  Diagnostic& error(SourceRange range, std::string message);
  static void note(Diagnostic& d, SourceRange range, std::string message);

  bool hasErrors() const { return errorCount_ > 0; }
  size_t errorCount() const { return errorCount_; }
  const std::vector<Diagnostic>& all() const { return diags_; }

  // Renders every diagnostic in order.
  std::string render() const;
  std::string render(const Diagnostic& d) const;

  // Stop collecting after this many errors (a broken file should not flood).
  static constexpr size_t kMaxErrors = 50;

 private:
  void renderOne(const Diagnostic& d, std::string& out) const;
  const SourceManager& sources_;
  std::vector<Diagnostic> diags_;
  Diagnostic overflow_;
  size_t errorCount_ = 0;
};

}  // namespace linnet
