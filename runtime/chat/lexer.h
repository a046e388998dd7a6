// Tokenizer for the Jinja subset, with transformers' environment settings:
// trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False
// (internal header).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace linnet::chat::detail {

enum class Tok : uint8_t {
  Data,        // template text
  VarBegin,    // {{
  VarEnd,      // }}
  BlockBegin,  // {%
  BlockEnd,    // %}
  Name,
  String,
  Int,
  Float,
  Op,  // operator; text holds it
  Eof,
};

struct Token {
  Tok type;
  std::string text;  // Data text, name, decoded string literal, operator
  int64_t ival = 0;
  double fval = 0;
  size_t offset = 0;  // byte offset in the normalized source
};

struct SourceMap {
  std::string source;  // newlines normalized to \n, one trailing newline removed
  // 1-based line and column (in code points) of a byte offset.
  void location(size_t offset, size_t& line, size_t& column) const;
};

// Throws TemplateSyntaxError.
std::vector<Token> tokenize(const std::string& rawSource, const std::string& templateName, SourceMap& map);

const char* tokName(Tok t);

}  // namespace linnet::chat::detail
