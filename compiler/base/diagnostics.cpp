#include "base/diagnostics.h"

#include <fmt/format.h>

namespace linnet {

Diagnostic& Diagnostics::error(SourceRange range, std::string message) {
  // A definition checked from several places reports each problem once.
  for (Diagnostic& d : diags_)
    if (d.range.file == range.file && d.range.begin == range.begin && d.range.end == range.end &&
        d.message == message) {
      overflow_ = {};
      return overflow_;
    }
  ++errorCount_;
  if (diags_.size() >= kMaxErrors) {
    overflow_ = {};
    return overflow_;
  }
  diags_.push_back({Severity::Error, range, std::move(message), {}});
  return diags_.back();
}

void Diagnostics::note(Diagnostic& d, SourceRange range, std::string message) {
  d.notes.push_back({Severity::Note, range, std::move(message), {}});
}

void Diagnostics::renderOne(const Diagnostic& d, std::string& out) const {
  const char* label = d.severity == Severity::Error     ? "error"
                      : d.severity == Severity::Warning ? "warning"
                                                        : "note";
  if (!d.range.valid()) {
    out += fmt::format("{}: {}\n", label, d.message);
    return;
  }
  const SourceFile& file = sources_.file(d.range.file);
  LineCol lc = file.lineCol(d.range.begin);
  out += fmt::format("{}:{}:{}: {}: {}\n", file.path(), lc.line, lc.col, label, d.message);
  std::string_view line = file.lineText(lc.line);
  // A NUL byte shows as U+2400 (one column, like the byte it stands for).
  std::string shown;
  for (char c : line) {
    if (c == '\0') shown += "\xE2\x90\x80";
    else shown += c;
  }
  out += fmt::format("    {}\n", shown);
  // Caret under the first character, tildes under the rest of the range on this line.
  std::string marker(lc.col - 1, ' ');
  for (size_t i = 0; i < marker.size() && i < line.size(); ++i)
    if (line[i] == '\t') marker[i] = '\t';
  size_t width = d.range.end > d.range.begin ? d.range.end - d.range.begin : 1;
  size_t room = line.size() >= lc.col - 1 ? line.size() - (lc.col - 1) : 1;
  width = std::max<size_t>(1, std::min(width, room));
  marker += '^';
  marker += std::string(width - 1, '~');
  out += fmt::format("    {}\n", marker);
}

std::string Diagnostics::render(const Diagnostic& d) const {
  std::string out;
  renderOne(d, out);
  for (const Diagnostic& n : d.notes) renderOne(n, out);
  return out;
}

std::string Diagnostics::render() const {
  std::string out;
  for (const Diagnostic& d : diags_) out += render(d);
  if (errorCount_ > diags_.size())
    out += fmt::format("error: {} more errors not shown\n", errorCount_ - diags_.size());
  return out;
}

}  // namespace linnet
