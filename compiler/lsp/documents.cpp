#include "lsp/documents.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <stdexcept>

namespace linnet::lsp {

namespace {

// The length of the UTF-8 sequence starting with byte `c` (1 for a stray
// continuation byte or invalid lead, so malformed text still advances).
uint32_t sequenceLength(unsigned char c) {
  if (c >= 0xF0 && c < 0xF8) return 4;
  if (c >= 0xE0) return c < 0xF0 ? 3 : 1;
  if (c >= 0xC0) return 2;
  return 1;
}

uint32_t lineStart(std::string_view text, uint32_t line) {
  uint32_t offset = 0;
  for (uint32_t l = 0; l < line; ++l) {
    auto nl = text.find('\n', offset);
    if (nl == std::string_view::npos) return static_cast<uint32_t>(text.size());
    offset = static_cast<uint32_t>(nl + 1);
  }
  return offset;
}

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

uint32_t offsetOf(std::string_view text, Position p) {
  uint32_t offset = lineStart(text, p.line);
  uint32_t units = 0;
  while (offset < text.size() && text[offset] != '\n' && units < p.character) {
    uint32_t n = sequenceLength(static_cast<unsigned char>(text[offset]));
    if (offset + n > text.size()) n = 1;
    units += n == 4 ? 2 : 1;  // a 4-byte sequence is a UTF-16 surrogate pair
    offset += n;
  }
  return offset;
}

Position positionOf(std::string_view text, uint32_t offset) {
  if (offset > text.size()) offset = static_cast<uint32_t>(text.size());
  Position p;
  uint32_t start = 0;
  for (uint32_t i = 0; i < offset; ++i)
    if (text[i] == '\n') ++p.line, start = i + 1;
  for (uint32_t i = start; i < offset;) {
    uint32_t n = sequenceLength(static_cast<unsigned char>(text[i]));
    if (i + n > text.size()) n = 1;
    p.character += n == 4 ? 2 : 1;
    i += n;
  }
  return p;
}

std::optional<std::string> pathOfUri(const std::string& uri) {
  const std::string scheme = "file://";
  if (uri.compare(0, scheme.size(), scheme) != 0) return std::nullopt;
  std::string path;
  for (size_t i = scheme.size(); i < uri.size(); ++i) {
    if (uri[i] == '%' && i + 2 < uri.size() && hexValue(uri[i + 1]) >= 0 && hexValue(uri[i + 2]) >= 0) {
      path += static_cast<char>(hexValue(uri[i + 1]) * 16 + hexValue(uri[i + 2]));
      i += 2;
    } else {
      path += uri[i];
    }
  }
  if (path.empty() || path[0] != '/') return std::nullopt;  // file://host/... is not a local file
  return path;
}

std::string uriOfPath(const std::string& path) {
  static const char* hex = "0123456789ABCDEF";
  std::string uri = "file://";
  for (unsigned char c : path) {
    if (std::isalnum(c) || c == '/' || c == '-' || c == '_' || c == '.' || c == '~') {
      uri += static_cast<char>(c);
    } else {
      uri += '%';
      uri += hex[c >> 4];
      uri += hex[c & 15];
    }
  }
  return uri;
}

Position positionFrom(const nlohmann::json& j) {
  auto natural = [&](const char* key) {
    return j.contains(key) && (j[key].is_number_unsigned() || (j[key].is_number_integer() && j[key].get<int64_t>() >= 0));
  };
  if (!j.is_object() || !natural("line") || !natural("character"))
    throw std::invalid_argument("a position is {\"line\": N, \"character\": N} with N >= 0");
  auto clamp = [](uint64_t v) { return static_cast<uint32_t>(std::min<uint64_t>(v, UINT32_MAX)); };
  return {clamp(j["line"].get<uint64_t>()), clamp(j["character"].get<uint64_t>())};
}

nlohmann::json toJson(Position p) { return {{"line", p.line}, {"character", p.character}}; }

std::string canonicalPath(const std::string& path) {
  std::error_code ec;
  auto canonical = std::filesystem::weakly_canonical(path, ec);
  return ec ? path : canonical.string();
}

void Documents::open(const std::string& path, std::string text, int64_t version) {
  docs_[canonicalPath(path)] = {std::move(text), version};
}

void Documents::change(const std::string& path, const nlohmann::json& change, int64_t version) {
  auto it = docs_.find(canonicalPath(path));
  if (it == docs_.end()) throw std::invalid_argument("didChange for a document that is not open: " + path);
  if (!change.is_object() || !change.contains("text") || !change["text"].is_string())
    throw std::invalid_argument("a content change needs a \"text\" string");
  std::string& text = it->second.text;
  if (!change.contains("range")) {
    text = change["text"].get<std::string>();
  } else {
    const auto& range = change["range"];
    if (!range.is_object() || !range.contains("start") || !range.contains("end"))
      throw std::invalid_argument("a change's range needs \"start\" and \"end\"");
    uint32_t begin = offsetOf(text, positionFrom(range["start"]));
    uint32_t end = offsetOf(text, positionFrom(range["end"]));
    if (end < begin) std::swap(begin, end);
    text.replace(begin, end - begin, change["text"].get<std::string>());
  }
  it->second.version = version;
}

void Documents::close(const std::string& path) { docs_.erase(canonicalPath(path)); }

const std::string* Documents::text(const std::string& path) const {
  auto it = docs_.find(canonicalPath(path));
  return it == docs_.end() ? nullptr : &it->second.text;
}

std::map<std::string, std::string> Documents::texts() const {
  std::map<std::string, std::string> out;
  for (const auto& [path, doc] : docs_) out[path] = doc.text;
  return out;
}

}  // namespace linnet::lsp
