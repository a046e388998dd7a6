#include "chat/lexer.h"

#include <cmath>
#include <cstring>

#include "chat/errors.h"
#include "chat/unicode.h"

namespace linnet::chat::detail {

const char* tokName(Tok t) {
  switch (t) {
    case Tok::Data: return "template data";
    case Tok::VarBegin: return "'{{'";
    case Tok::VarEnd: return "end of print statement '}}'";
    case Tok::BlockBegin: return "'{%'";
    case Tok::BlockEnd: return "end of statement block '%}'";
    case Tok::Name: return "name";
    case Tok::String: return "string";
    case Tok::Int: return "integer";
    case Tok::Float: return "float";
    case Tok::Op: return "operator";
    case Tok::Eof: return "end of template";
  }
  return "token";
}

void SourceMap::location(size_t offset, size_t& line, size_t& column) const {
  if (offset > source.size()) offset = source.size();
  line = 1;
  size_t lineStart = 0;
  for (size_t i = 0; i < offset; ++i) {
    if (source[i] == '\n') {
      ++line;
      lineStart = i + 1;
    }
  }
  column = codePointCount(std::string_view(source).substr(lineStart, offset - lineStart)) + 1;
}

namespace {

// Whitespace as Python's re \s sees it, at byte position i; returns its length or 0.
size_t wsLen(const std::string& s, size_t i) {
  if (i >= s.size()) return 0;
  size_t len;
  uint32_t cp = decodeUtf8(s, i, len);
  if (len == 1 && cp >= 0x80) return 0;
  return isPyWhitespace(cp) ? len : 0;
}

size_t skipWs(const std::string& s, size_t i) {
  while (size_t n = wsLen(s, i)) i += n;
  return i;
}

bool allWhitespace(const std::string& s, size_t from) {
  size_t i = from;
  while (i < s.size()) {
    size_t n = wsLen(s, i);
    if (!n) return false;
    i += n;
  }
  return true;
}

std::string rstripWs(const std::string& s) { return pyStrip(s, nullptr, false, true); }

bool startsWith(const std::string& s, size_t i, const char* lit) {
  size_t n = std::strlen(lit);
  return i + n <= s.size() && s.compare(i, n, lit) == 0;
}

bool isNameStart(unsigned char c) { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80; }
bool isNameChar(unsigned char c) { return isNameStart(c) || (c >= '0' && c <= '9'); }
bool isDigit(char c) { return c >= '0' && c <= '9'; }

class Lexer {
 public:
  Lexer(const std::string& src, const std::string& name, const SourceMap& map)
      : s_(src), name_(name), map_(map) {}

  std::vector<Token> run() {
    size_t pos = 0;
    bool lineStarting = true;
    while (pos < s_.size()) {
      // Find the next tag opener.
      size_t open = std::string::npos;
      for (size_t i = s_.find('{', pos); i != std::string::npos; i = s_.find('{', i + 1)) {
        if (i + 1 < s_.size() && (s_[i + 1] == '{' || s_[i + 1] == '%' || s_[i + 1] == '#')) {
          open = i;
          break;
        }
      }
      if (open == std::string::npos) {
        emitData(s_.substr(pos), pos);
        break;
      }
      std::string text = s_.substr(pos, open - pos);
      const char kindChar = s_[open + 1];
      size_t p = open + 2;
      char sign = 0;
      if (p < s_.size() && (s_[p] == '-' || s_[p] == '+')) sign = s_[p++];

      // {% raw %}
      bool isRaw = false;
      size_t rawBodyStart = 0;
      if (kindChar == '%') {
        size_t q = skipWs(s_, p);
        if (startsWith(s_, q, "raw")) {
          size_t r = skipWs(s_, q + 3);
          if (startsWith(s_, r, "-%}")) {
            isRaw = true;
            rawBodyStart = skipWs(s_, r + 3);
          } else if (startsWith(s_, r, "%}")) {
            isRaw = true;
            rawBodyStart = r + 2;
          }
        }
      }

      text = applyLeftStrip(text, sign, kindChar != '{', lineStarting);
      emitData(text, pos);

      if (isRaw) {
        pos = lexRaw(rawBodyStart, open);
        lineStarting = pos > 0 && s_[pos - 1] == '\n';
        continue;
      }
      if (kindChar == '#') {
        pos = lexComment(p, open);
      } else {
        pos = lexTag(p, open, kindChar == '%');
      }
      lineStarting = pos > 0 && s_[pos - 1] == '\n';
    }
    Token eof{Tok::Eof, {}, 0, 0, s_.size()};
    toks_.push_back(eof);
    return std::move(toks_);
  }

 private:
  const std::string& s_;
  const std::string& name_;
  const SourceMap& map_;
  std::vector<Token> toks_;

  [[noreturn]] void fail(size_t offset, const std::string& msg) {
    size_t line, col;
    map_.location(offset, line, col);
    throw TemplateSyntaxError(name_, line, col, msg);
  }

  void emitData(std::string text, size_t offset) {
    if (text.empty()) return;
    toks_.push_back(Token{Tok::Data, std::move(text), 0, 0, offset});
  }

  // jinja2's OptionalLStrip: "-" strips all trailing whitespace of the text
  // before the tag; otherwise lstrip_blocks removes the indentation before a
  // block or comment tag when only whitespace precedes it on its line.
  std::string applyLeftStrip(const std::string& text, char sign, bool blockOrComment, bool lineStarting) {
    if (sign == '-') return rstripWs(text);
    if (sign != '+' && blockOrComment) {
      size_t nl = text.rfind('\n');
      size_t lpos = nl == std::string::npos ? 0 : nl + 1;
      if ((lpos > 0 || lineStarting) && lpos < text.size() && allWhitespace(text, lpos)) return text.substr(0, lpos);
    }
    return text;
  }

  size_t lexComment(size_t p, size_t open) {
    size_t i = p;
    while (true) {
      size_t f = s_.find("#}", i);
      if (f == std::string::npos) fail(open, "missing end of comment tag '#}'");
      // The lazy regex tries "+#}", "-#}\s*" and "#}\n?" at each position, so a
      // sign right before "#}" belongs to the end tag.
      if (f > p && s_[f - 1] == '-') return skipWs(s_, f + 2);
      if (f > p && s_[f - 1] == '+') return f + 2;
      size_t e = f + 2;
      if (e < s_.size() && s_[e] == '\n') ++e;
      return e;
    }
  }

  size_t lexRaw(size_t bodyStart, size_t open) {
    size_t i = bodyStart;
    while (true) {
      size_t f = s_.find("{%", i);
      if (f == std::string::npos) fail(open, "missing end of raw directive '{% endraw %}'");
      size_t p = f + 2;
      char sign = 0;
      if (p < s_.size() && (s_[p] == '-' || s_[p] == '+')) sign = s_[p++];
      size_t q = skipWs(s_, p);
      if (startsWith(s_, q, "endraw")) {
        size_t r = skipWs(s_, q + 6);
        size_t end = std::string::npos;
        if (startsWith(s_, r, "+%}")) {
          end = r + 3;
        } else if (startsWith(s_, r, "-%}")) {
          end = skipWs(s_, r + 3);
        } else if (startsWith(s_, r, "%}")) {
          end = r + 2;
          if (end < s_.size() && s_[end] == '\n') ++end;
        }
        if (end != std::string::npos) {
          std::string body = s_.substr(bodyStart, f - bodyStart);
          // The text before {% endraw %} gets the same stripping as data
          // before any block tag.
          body = applyLeftStrip(body, sign, true, bodyStart > 0 && s_[bodyStart - 1] == '\n');
          emitData(body, bodyStart);
          return end;
        }
      }
      i = f + 2;
    }
  }

  size_t lexTag(size_t p, size_t open, bool block) {
    toks_.push_back(Token{block ? Tok::BlockBegin : Tok::VarBegin, {}, 0, 0, open});
    std::vector<char> balance;
    size_t i = p;
    while (true) {
      if (i >= s_.size()) fail(open, block ? "unexpected end of template: missing '%}'" : "unexpected end of template: missing '}}'");
      if (balance.empty()) {
        if (block) {
          if (startsWith(s_, i, "+%}")) {
            toks_.push_back(Token{Tok::BlockEnd, {}, 0, 0, i});
            return i + 3;
          }
          if (startsWith(s_, i, "-%}")) {
            toks_.push_back(Token{Tok::BlockEnd, {}, 0, 0, i});
            return skipWs(s_, i + 3);
          }
          if (startsWith(s_, i, "%}")) {
            toks_.push_back(Token{Tok::BlockEnd, {}, 0, 0, i});
            size_t e = i + 2;
            if (e < s_.size() && s_[e] == '\n') ++e;  // trim_blocks
            return e;
          }
        } else {
          if (startsWith(s_, i, "-}}")) {
            toks_.push_back(Token{Tok::VarEnd, {}, 0, 0, i});
            return skipWs(s_, i + 3);
          }
          if (startsWith(s_, i, "}}")) {
            toks_.push_back(Token{Tok::VarEnd, {}, 0, 0, i});
            return i + 2;
          }
        }
      }
      if (size_t n = wsLen(s_, i)) {
        i += n;
        continue;
      }
      const unsigned char c = static_cast<unsigned char>(s_[i]);
      if (isDigit(static_cast<char>(c))) {
        i = lexNumber(i);
        continue;
      }
      if (isNameStart(c)) {
        size_t j = i;
        while (j < s_.size() && isNameChar(static_cast<unsigned char>(s_[j]))) ++j;
        toks_.push_back(Token{Tok::Name, s_.substr(i, j - i), 0, 0, i});
        i = j;
        continue;
      }
      if (c == '\'' || c == '"') {
        i = lexString(i);
        continue;
      }
      static const char* ops[] = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/", "*", "%", "~", "[", "]", "(",
                                  ")", "{", "}", ">", "<", "=", ".", ":", "|", ",", ";"};
      const char* matched = nullptr;
      for (const char* op : ops) {
        if (startsWith(s_, i, op)) {
          matched = op;
          break;
        }
      }
      if (!matched) {
        size_t len;
        uint32_t cp = decodeUtf8(s_, i, len);
        std::string ch;
        appendUtf8(ch, cp);
        fail(i, "unexpected character '" + ch + "'");
      }
      std::string op(matched);
      if (op == "(" || op == "[" || op == "{") {
        balance.push_back(op == "(" ? ')' : op == "[" ? ']' : '}');
      } else if (op == ")" || op == "]" || op == "}") {
        if (balance.empty()) fail(i, "unexpected '" + op + "'");
        char expected = balance.back();
        balance.pop_back();
        if (expected != op[0]) fail(i, "unexpected '" + op + "', expected '" + std::string(1, expected) + "'");
      }
      toks_.push_back(Token{Tok::Op, op, 0, 0, i});
      i += op.size();
    }
  }

  // Digits with optional single underscores between them, starting at i; returns the end.
  size_t digitRun(size_t i) const {
    if (i >= s_.size() || !isDigit(s_[i])) return i;
    size_t j = i + 1;
    while (j < s_.size()) {
      if (isDigit(s_[j])) {
        ++j;
      } else if (s_[j] == '_' && j + 1 < s_.size() && isDigit(s_[j + 1])) {
        j += 2;
      } else {
        break;
      }
    }
    return j;
  }

  size_t lexNumber(size_t i) {
    // Floats: digits, then (.digits)?e[+-]?digits or .digits.
    size_t j = digitRun(i);
    size_t end = std::string::npos;
    bool prevDot = i > 0 && s_[i - 1] == '.';
    if (!prevDot) {
      size_t k = j;
      bool frac = false;
      if (k < s_.size() && s_[k] == '.' && k + 1 < s_.size() && isDigit(s_[k + 1])) {
        k = digitRun(k + 1);
        frac = true;
      }
      size_t e = k;
      if (e < s_.size() && (s_[e] == 'e' || s_[e] == 'E')) {
        size_t f = e + 1;
        if (f < s_.size() && (s_[f] == '+' || s_[f] == '-')) ++f;
        if (f < s_.size() && isDigit(s_[f])) {
          end = digitRun(f);
        }
      }
      if (end == std::string::npos && frac) end = k;
    }
    if (end != std::string::npos) {
      std::string t;
      for (size_t k = i; k < end; ++k)
        if (s_[k] != '_') t.push_back(s_[k]);
      Token tok{Tok::Float, s_.substr(i, end - i), 0, std::strtod(t.c_str(), nullptr), i};
      toks_.push_back(tok);
      return end;
    }
    // Integers: 0b / 0o / 0x prefixes, decimal.
    int base = 10;
    size_t k = i;
    if (s_[i] == '0' && i + 2 < s_.size() + 1 && i + 1 < s_.size()) {
      char x = s_[i + 1];
      if (x == 'b' || x == 'B') base = 2;
      if (x == 'o' || x == 'O') base = 8;
      if (x == 'x' || x == 'X') base = 16;
    }
    auto digitVal = [](char ch) -> int {
      if (ch >= '0' && ch <= '9') return ch - '0';
      if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
      if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
      return 99;
    };
    std::string digits;
    if (base != 10) {
      k = i + 2;
      size_t startDigits = k;
      while (k < s_.size()) {
        if (s_[k] == '_' && k + 1 < s_.size() && digitVal(s_[k + 1]) < base) {
          ++k;
          continue;
        }
        if (digitVal(s_[k]) < base) {
          digits.push_back(s_[k]);
          ++k;
          continue;
        }
        break;
      }
      if (k == startDigits) {
        base = 10;  // just "0"
        digits = "0";
        k = i + 1;
      }
    } else if (s_[i] == '0') {
      // 0(_?0)*
      k = i + 1;
      while (k < s_.size()) {
        if (s_[k] == '0') {
          ++k;
        } else if (s_[k] == '_' && k + 1 < s_.size() && s_[k + 1] == '0') {
          k += 2;
        } else {
          break;
        }
      }
      digits = "0";
    } else {
      k = digitRun(i);
      for (size_t m = i; m < k; ++m)
        if (s_[m] != '_') digits.push_back(s_[m]);
    }
    int64_t v = 0;
    for (char ch : digits) {
      int d = digitVal(ch);
      if (__builtin_mul_overflow(v, static_cast<int64_t>(base), &v) || __builtin_add_overflow(v, d, &v))
        fail(i, "integer literal too large");
    }
    toks_.push_back(Token{Tok::Int, s_.substr(i, k - i), v, 0, i});
    return k;
  }

  size_t lexString(size_t i) {
    const char q = s_[i];
    size_t j = i + 1;
    while (j < s_.size() && s_[j] != q) {
      if (s_[j] == '\\') ++j;
      ++j;
    }
    if (j >= s_.size()) fail(i, "unterminated string literal");
    std::string raw = s_.substr(i + 1, j - i - 1);
    toks_.push_back(Token{Tok::String, unescape(raw, i), 0, 0, i});
    return j + 1;
  }

  // Python's "unicode-escape" decoding, as jinja2 applies to string literals.
  std::string unescape(const std::string& r, size_t offset) {
    std::string out;
    out.reserve(r.size());
    auto hexv = [](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      return -1;
    };
    for (size_t i = 0; i < r.size(); ++i) {
      if (r[i] != '\\' || i + 1 >= r.size()) {
        out.push_back(r[i]);
        continue;
      }
      char c = r[++i];
      switch (c) {
        case '\n': break;  // line continuation
        case '\\': out.push_back('\\'); break;
        case '\'': out.push_back('\''); break;
        case '"': out.push_back('"'); break;
        case 'a': out.push_back('\a'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'n': out.push_back('\n'); break;
        case 'r': out.push_back('\r'); break;
        case 't': out.push_back('\t'); break;
        case 'v': out.push_back('\v'); break;
        case 'x':
        case 'u':
        case 'U': {
          int n = c == 'x' ? 2 : c == 'u' ? 4 : 8;
          uint32_t v = 0;
          for (int k = 0; k < n; ++k) {
            if (i + 1 + k >= r.size() || hexv(r[i + 1 + k]) < 0)
              fail(offset, std::string("invalid \\") + c + " escape in string literal");
            v = v * 16 + static_cast<uint32_t>(hexv(r[i + 1 + k]));
          }
          i += n;
          if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
            fail(offset, "escape in string literal is not a valid code point");
          appendUtf8(out, v);
          break;
        }
        default:
          if (c >= '0' && c <= '7') {
            uint32_t v = static_cast<uint32_t>(c - '0');
            for (int k = 0; k < 2 && i + 1 < r.size() && r[i + 1] >= '0' && r[i + 1] <= '7'; ++k)
              v = v * 8 + static_cast<uint32_t>(r[++i] - '0');
            appendUtf8(out, v);
          } else {
            out.push_back('\\');
            out.push_back(c);
          }
      }
    }
    return out;
  }
};

}  // namespace

std::vector<Token> tokenize(const std::string& rawSource, const std::string& templateName, SourceMap& map) {
  std::string& s = map.source;
  s.clear();
  s.reserve(rawSource.size());
  for (size_t i = 0; i < rawSource.size(); ++i) {
    char c = rawSource[i];
    if (c == '\r') {
      s.push_back('\n');
      if (i + 1 < rawSource.size() && rawSource[i + 1] == '\n') ++i;
    } else {
      s.push_back(c);
    }
  }
  if (!s.empty() && s.back() == '\n') s.pop_back();  // keep_trailing_newline=False
  Lexer lx(s, templateName, map);
  return lx.run();
}

}  // namespace linnet::chat::detail
