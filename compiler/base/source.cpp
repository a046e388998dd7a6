#include "base/source.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace linnet {

SourceFile::SourceFile(std::string path, std::string text)
    : path_(std::move(path)), text_(std::move(text)) {
  lineStarts_.push_back(0);
  for (uint32_t i = 0; i < text_.size(); ++i)
    if (text_[i] == '\n') lineStarts_.push_back(i + 1);
}

LineCol SourceFile::lineCol(uint32_t offset) const {
  auto it = std::upper_bound(lineStarts_.begin(), lineStarts_.end(), offset);
  uint32_t line = static_cast<uint32_t>(it - lineStarts_.begin());
  return {line, offset - lineStarts_[line - 1] + 1};
}

std::string_view SourceFile::lineText(uint32_t line) const {
  if (line == 0 || line > lineStarts_.size()) return {};
  uint32_t begin = lineStarts_[line - 1];
  uint32_t end = line < lineStarts_.size() ? lineStarts_[line] : text_.size();
  while (end > begin && (text_[end - 1] == '\n' || text_[end - 1] == '\r')) --end;
  return std::string_view(text_).substr(begin, end - begin);
}

uint32_t SourceManager::add(std::string path, std::string text) {
  files_.push_back(std::make_shared<const SourceFile>(std::move(path), std::move(text)));
  return static_cast<uint32_t>(files_.size());
}

void SourceManager::share(const SourceManager& other) {
  files_.insert(files_.end(), other.files_.begin(), other.files_.end());
}

uint32_t SourceManager::load(const std::string& path) {
  if (!overlay_.empty()) {
    std::error_code ec;
    auto canonical = std::filesystem::weakly_canonical(path, ec);
    if (!ec)
      if (auto it = overlay_.find(canonical.string()); it != overlay_.end()) return add(path, it->second);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return 0;
  std::stringstream buffer;
  buffer << in.rdbuf();
  return add(path, buffer.str());
}

std::string_view SourceManager::text(SourceRange r) const {
  if (!r.valid()) return {};
  return file(r.file).text().substr(r.begin, r.end - r.begin);
}

}  // namespace linnet
