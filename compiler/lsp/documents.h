// The editor's open documents: their texts as the editor has them (applied
// edits included), URIs to paths and back, and LSP positions (a line and a
// column in UTF-16 code units) to byte offsets and back.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace linnet::lsp {

struct Position {
  uint32_t line = 0;       // 0-based
  uint32_t character = 0;  // UTF-16 code units from the line's start
};

// The byte offset of a position in `text`; a position past a line's end
// means the end of that line, past the last line the end of the text.
uint32_t offsetOf(std::string_view text, Position p);
Position positionOf(std::string_view text, uint32_t offset);

// `file:///a/b%20c.linnet` -> `/a/b c.linnet`; nullopt for another scheme.
std::optional<std::string> pathOfUri(const std::string& uri);
std::string uriOfPath(const std::string& path);

// Reads a position from its JSON (`{"line": 3, "character": 7}`); throws
// std::invalid_argument naming what is wrong.
Position positionFrom(const nlohmann::json& j);
nlohmann::json toJson(Position p);

class Documents {
 public:
  // By weakly canonical path.
  void open(const std::string& path, std::string text, int64_t version);
  // One entry of didChange's contentChanges: a whole text, or a range and
  // its replacement. Throws std::invalid_argument for a malformed change.
  void change(const std::string& path, const nlohmann::json& change, int64_t version);
  void close(const std::string& path);
  const std::string* text(const std::string& path) const;
  // Every open document's text: the overlay the checker reads.
  std::map<std::string, std::string> texts() const;

 private:
  struct Document {
    std::string text;
    int64_t version = 0;
  };
  std::map<std::string, Document> docs_;
};

// The key Documents and SourceManager's overlay use for a path.
std::string canonicalPath(const std::string& path);

}  // namespace linnet::lsp
