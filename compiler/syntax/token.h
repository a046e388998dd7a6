// Tokens produced by the lexer.
#pragma once

#include <cstdint>
#include <string_view>

#include "base/source.h"

namespace linnet::syntax {

enum class TokenKind : uint8_t {
#define TOKEN(Name, Spelling) Name,
#include "syntax/token_kinds.def"
};

std::string_view spelling(TokenKind kind);

struct Token {
  TokenKind kind = TokenKind::EndOfFile;
  SourceRange range;
  std::string_view text;
  // True when a line break separates this token from the previous one: `(` or
  // `[` after a line break starts a new statement instead of a call or index.
  bool afterNewline = false;
  // True when whitespace separates this token from the previous one: `> >`
  // closes two generic lists, `>>` is a shift.
  bool afterSpace = false;
};

}  // namespace linnet::syntax
