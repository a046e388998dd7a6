// Source files and positions. Every AST node keeps a SourceRange into a file
// owned by the SourceManager, so diagnostics can quote the line they are about.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace linnet {

struct SourceRange {
  uint32_t file = 0;   // index into SourceManager; 0 means "no location"
  uint32_t begin = 0;  // byte offsets, [begin, end)
  uint32_t end = 0;
  bool valid() const { return file != 0; }
  // Whether byte `offset` of `f` is inside, or just past the end: an
  // editor's cursor sits between characters, so one right after a name means it.
  bool covers(uint32_t f, uint32_t offset) const { return file == f && begin <= offset && offset <= end; }
  static SourceRange merge(SourceRange a, SourceRange b) {
    if (!a.valid()) return b;
    if (!b.valid()) return a;
    return {a.file, std::min(a.begin, b.begin), std::max(a.end, b.end)};
  }
};

struct LineCol {
  uint32_t line = 0;  // 1-based
  uint32_t col = 0;   // 1-based, in bytes
};

class SourceFile {
 public:
  SourceFile(std::string path, std::string text);
  const std::string& path() const { return path_; }
  std::string_view text() const { return text_; }
  LineCol lineCol(uint32_t offset) const;
  std::string_view lineText(uint32_t line) const;

 private:
  std::string path_;
  std::string text_;
  std::vector<uint32_t> lineStarts_;
};

class SourceManager {
 public:
  // Returns the file id (>= 1).
  uint32_t add(std::string path, std::string text);
  // Reads a file from disk, or its text from the overlay; returns 0 when it
  // cannot be read.
  uint32_t load(const std::string& path);
  // Texts that load() takes instead of the disk's, by weakly canonical path:
  // an editor's unsaved buffers (linnetc lsp).
  void setOverlay(std::map<std::string, std::string> texts) { overlay_ = std::move(texts); }
  // Appends every file of `other`, shared read-only (files never change once
  // added): into an empty manager, the ids stay those of `other`, so ranges
  // into ASTs parsed there stay valid here (sema::Stdlib).
  void share(const SourceManager& other);
  size_t fileCount() const { return files_.size(); }
  const SourceFile& file(uint32_t id) const { return *files_.at(id - 1); }
  std::string_view text(SourceRange r) const;

 private:
  std::vector<std::shared_ptr<const SourceFile>> files_;
  std::map<std::string, std::string> overlay_;
};

}  // namespace linnet
