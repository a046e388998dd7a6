#include "syntax/lexer.h"

#include <fmt/format.h>

#include <cctype>
#include <string>
#include <unordered_map>

namespace linnet::syntax {

std::string_view spelling(TokenKind kind) {
  switch (kind) {
#define TOKEN(Name, Spelling) \
  case TokenKind::Name:       \
    return Spelling;
#include "syntax/token_kinds.def"
  }
  return "?";
}

namespace {

const std::unordered_map<std::string_view, TokenKind>& keywords() {
  static const std::unordered_map<std::string_view, TokenKind> table = {
#define TOKEN(Name, Spelling)
#define KEYWORD(Name, Spelling) {Spelling, TokenKind::Name},
#include "syntax/token_kinds.def"
  };
  return table;
}

bool isIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool isIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool isDigit(char c) { return std::isdigit(static_cast<unsigned char>(c)); }

class Lexer {
 public:
  Lexer(const SourceManager& sources, uint32_t file, Diagnostics& diags)
      : file_(file), text_(sources.file(file).text()), diags_(diags) {}

  std::vector<Token> run() {
    std::vector<Token> tokens;
    while (true) {
      bool newline = skipTrivia();
      bool space = pos_ > 0 && (newline || (pos_ > lastEnd_));
      Token t = next();
      t.afterNewline = newline || tokens.empty();
      t.afterSpace = space;
      lastEnd_ = pos_;
      tokens.push_back(t);
      if (t.kind == TokenKind::EndOfFile) break;
    }
    return tokens;
  }

 private:
  // Skips whitespace and comments; returns whether a line break was seen.
  bool skipTrivia() {
    bool newline = false;
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == '\n') {
        newline = true;
        ++pos_;
      } else if (c == ' ' || c == '\t' || c == '\r') {
        ++pos_;
      } else if (c == '/' && peek(1) == '/') {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else if (c == '/' && peek(1) == '*') {
        uint32_t start = pos_;
        pos_ += 2;
        while (pos_ < text_.size() && !(text_[pos_] == '*' && peek(1) == '/')) {
          if (text_[pos_] == '\n') newline = true;
          ++pos_;
        }
        if (pos_ >= text_.size()) {
          diags_.error({file_, start, start + 2}, "unterminated block comment; close it with `*/`");
        } else {
          pos_ += 2;
        }
      } else {
        break;
      }
    }
    return newline;
  }

  char peek(uint32_t ahead) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }

  Token make(TokenKind kind, uint32_t start) {
    return {kind, {file_, start, pos_}, text_.substr(start, pos_ - start)};
  }

  Token next() {
    uint32_t start = pos_;
    if (pos_ >= text_.size()) return make(TokenKind::EndOfFile, start);
    char c = text_[pos_];
    if (isIdentStart(c)) {
      while (pos_ < text_.size() && isIdentChar(text_[pos_])) ++pos_;
      Token t = make(TokenKind::Identifier, start);
      auto it = keywords().find(t.text);
      if (it != keywords().end()) t.kind = it->second;
      return t;
    }
    if (isDigit(c)) return number(start);
    auto two = [&](char second, TokenKind yes, TokenKind no) {
      if (peek(1) == second) {
        pos_ += 2;
        return make(yes, start);
      }
      ++pos_;
      return make(no, start);
    };
    switch (c) {
      case '{': ++pos_; return make(TokenKind::LBrace, start);
      case '}': ++pos_; return make(TokenKind::RBrace, start);
      case '(': ++pos_; return make(TokenKind::LParen, start);
      case ')': ++pos_; return make(TokenKind::RParen, start);
      case '[': ++pos_; return make(TokenKind::LBracket, start);
      case ']': ++pos_; return make(TokenKind::RBracket, start);
      case ',': ++pos_; return make(TokenKind::Comma, start);
      case ';': ++pos_; return make(TokenKind::Semicolon, start);
      case '+': ++pos_; return make(TokenKind::Plus, start);
      case '*': ++pos_; return make(TokenKind::Star, start);
      case '/': ++pos_; return make(TokenKind::Slash, start);
      case '%': ++pos_; return make(TokenKind::Percent, start);
      case '^': ++pos_; return make(TokenKind::Caret, start);
      // `>` is always a single token so that nested generic lists close;
      // the parser joins adjacent `>` `>` into a shift and `>` `=` into `>=`.
      case '>': ++pos_; return make(TokenKind::Greater, start);
      case '-': return two('>', TokenKind::Arrow, TokenKind::Minus);
      case '=': return two('=', TokenKind::EqualEqual, TokenKind::Equal);
      case '!': return two('=', TokenKind::BangEqual, TokenKind::Bang);
      case '&': return two('&', TokenKind::AmpAmp, TokenKind::Amp);
      case '|': return two('|', TokenKind::PipePipe, TokenKind::Pipe);
      case ':': return two(':', TokenKind::ColonColon, TokenKind::Colon);
      case '.': return two('.', TokenKind::DotDot, TokenKind::Dot);
      case '<':
        if (peek(1) == '=') { pos_ += 2; return make(TokenKind::LessEqual, start); }
        if (peek(1) == '<') { pos_ += 2; return make(TokenKind::LessLess, start); }
        ++pos_;
        return make(TokenKind::Less, start);
      default:
        break;
    }
    // A control byte (NUL above all) would not print: name it by its code.
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      ++pos_;
      Token t = make(TokenKind::Error, start);
      diags_.error(t.range, fmt::format("unexpected {} byte 0x{:02X} in the source; a source file "
                                        "is text: remove it",
                                        c == '\0' ? "NUL" : "control", static_cast<unsigned>(c)));
      return t;
    }
    // One UTF-8 sequence at a time, so the message quotes a whole character.
    ++pos_;
    while (pos_ < text_.size() && (static_cast<unsigned char>(text_[pos_]) & 0xC0) == 0x80) ++pos_;
    Token t = make(TokenKind::Error, start);
    diags_.error(t.range, fmt::format("unexpected character `{}`", t.text));
    return t;
  }

  Token number(uint32_t start) {
    bool isFloat = false;
    if (text_[pos_] == '0' && (peek(1) == 'x' || peek(1) == 'X')) {
      pos_ += 2;
      while (pos_ < text_.size() && std::isxdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
      return make(TokenKind::IntLiteral, start);
    }
    while (pos_ < text_.size() && (isDigit(text_[pos_]) || text_[pos_] == '_')) ++pos_;
    // `0..N` is a range, not the float `0.`.
    if (peek(0) == '.' && isDigit(peek(1))) {
      isFloat = true;
      ++pos_;
      while (pos_ < text_.size() && (isDigit(text_[pos_]) || text_[pos_] == '_')) ++pos_;
    }
    if ((peek(0) == 'e' || peek(0) == 'E') &&
        (isDigit(peek(1)) || ((peek(1) == '-' || peek(1) == '+') && isDigit(peek(2))))) {
      isFloat = true;
      pos_ += 2;
      while (pos_ < text_.size() && isDigit(text_[pos_])) ++pos_;
    }
    if (pos_ < text_.size() && isIdentChar(text_[pos_])) {
      while (pos_ < text_.size() && isIdentChar(text_[pos_])) ++pos_;
      Token t = make(TokenKind::Error, start);
      diags_.error(t.range, fmt::format("malformed number `{}`", t.text));
      return t;
    }
    return make(isFloat ? TokenKind::FloatLiteral : TokenKind::IntLiteral, start);
  }

  uint32_t file_;
  std::string_view text_;
  Diagnostics& diags_;
  uint32_t pos_ = 0;
  uint32_t lastEnd_ = 0;
};

}  // namespace

std::vector<Token> lex(const SourceManager& sources, uint32_t file, Diagnostics& diags) {
  return Lexer(sources, file, diags).run();
}

}  // namespace linnet::syntax
