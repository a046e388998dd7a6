#include "chat/unicode.h"

#include "base/utf8.h"

#include <algorithm>

namespace linnet::chat::detail {

uint32_t decodeUtf8(std::string_view s, size_t i, size_t& len) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  len = 1;
  if (b0 < 0x80) return b0;
  int need = 0;
  uint32_t cp = 0;
  uint32_t minCp = 0;
  if ((b0 & 0xE0) == 0xC0) {
    need = 1;
    cp = b0 & 0x1F;
    minCp = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    need = 2;
    cp = b0 & 0x0F;
    minCp = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    need = 3;
    cp = b0 & 0x07;
    minCp = 0x10000;
  } else {
    return b0;  // stray continuation or invalid lead byte
  }
  if (i + static_cast<size_t>(need) >= s.size()) return b0;
  for (int k = 1; k <= need; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) return b0;
    cp = (cp << 6) | (b & 0x3F);
  }
  if (cp < minCp || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return b0;
  len = static_cast<size_t>(need) + 1;
  return cp;
}

void appendUtf8(std::string& out, uint32_t cp) { utf8::append(out, static_cast<char32_t>(cp)); }

std::vector<size_t> codePointOffsets(std::string_view s) {
  std::vector<size_t> offs;
  offs.reserve(s.size() + 1);
  size_t i = 0;
  while (i < s.size()) {
    offs.push_back(i);
    size_t len;
    decodeUtf8(s, i, len);
    i += len;
  }
  offs.push_back(s.size());
  return offs;
}

size_t codePointCount(std::string_view s) {
  size_t n = 0;
  size_t i = 0;
  while (i < s.size()) {
    size_t len;
    decodeUtf8(s, i, len);
    i += len;
    ++n;
  }
  return n;
}

bool isPyWhitespace(uint32_t cp) {
  if (cp <= 0x20) return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C);
  if (cp < 0x85) return false;
  return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
         cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

namespace {

struct Cp {
  uint32_t cp;
  size_t begin;
  size_t end;
};

std::vector<Cp> decodeAll(std::string_view s) {
  std::vector<Cp> v;
  v.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    size_t len;
    uint32_t cp = decodeUtf8(s, i, len);
    v.push_back({cp, i, i + len});
    i += len;
  }
  return v;
}

bool inChars(uint32_t cp, const std::vector<uint32_t>& set) {
  return std::find(set.begin(), set.end(), cp) != set.end();
}

std::vector<uint32_t> cpSet(const std::string& chars) {
  std::vector<uint32_t> v;
  for (const auto& c : decodeAll(chars)) v.push_back(c.cp);
  return v;
}

}  // namespace

std::string pyStrip(std::string_view s, const std::string* chars, bool left, bool right) {
  std::vector<uint32_t> set;
  if (chars) set = cpSet(*chars);
  auto strippable = [&](uint32_t cp) { return chars ? inChars(cp, set) : isPyWhitespace(cp); };
  auto cps = decodeAll(s);
  size_t b = 0;
  size_t e = cps.size();
  if (left)
    while (b < e && strippable(cps[b].cp)) ++b;
  if (right)
    while (e > b && strippable(cps[e - 1].cp)) --e;
  if (b >= e) return {};
  return std::string(s.substr(cps[b].begin, cps[e - 1].end - cps[b].begin));
}

std::vector<std::string> pySplit(std::string_view s, const std::string* sep, long long maxsplit) {
  std::vector<std::string> out;
  if (sep) {
    if (maxsplit < 0) maxsplit = static_cast<long long>(s.size()) + 1;
    size_t pos = 0;
    while (maxsplit > 0) {
      size_t f = s.find(*sep, pos);
      if (f == std::string_view::npos) break;
      out.emplace_back(s.substr(pos, f - pos));
      pos = f + sep->size();
      --maxsplit;
    }
    out.emplace_back(s.substr(pos));
    return out;
  }
  auto cps = decodeAll(s);
  size_t i = 0;
  const size_t n = cps.size();
  if (maxsplit < 0) maxsplit = static_cast<long long>(n) + 1;
  while (i < n) {
    while (i < n && isPyWhitespace(cps[i].cp)) ++i;
    if (i >= n) break;
    if (maxsplit == 0) {
      // The rest, trailing whitespace included (as CPython does).
      out.emplace_back(s.substr(cps[i].begin));
      break;
    }
    size_t j = i;
    while (j < n && !isPyWhitespace(cps[j].cp)) ++j;
    out.emplace_back(s.substr(cps[i].begin, cps[j - 1].end - cps[i].begin));
    --maxsplit;
    i = j;
  }
  return out;
}

std::vector<std::string> pyRSplit(std::string_view s, const std::string* sep, long long maxsplit) {
  if (maxsplit < 0) return pySplit(s, sep, -1);
  std::vector<std::string> out;
  if (sep) {
    size_t end = s.size();
    while (maxsplit > 0) {
      if (end < sep->size()) break;
      size_t f = s.rfind(*sep, end - sep->size());
      if (f == std::string_view::npos) break;
      out.emplace_back(s.substr(f + sep->size(), end - f - sep->size()));
      end = f;
      --maxsplit;
    }
    out.emplace_back(s.substr(0, end));
    std::reverse(out.begin(), out.end());
    return out;
  }
  auto cps = decodeAll(s);
  size_t e = cps.size();
  while (e > 0) {
    while (e > 0 && isPyWhitespace(cps[e - 1].cp)) --e;
    if (e == 0) break;
    if (maxsplit == 0) {
      out.emplace_back(s.substr(0, cps[e - 1].end));
      break;
    }
    size_t b = e;
    while (b > 0 && !isPyWhitespace(cps[b - 1].cp)) --b;
    out.emplace_back(s.substr(cps[b].begin, cps[e - 1].end - cps[b].begin));
    --maxsplit;
    e = b;
  }
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<std::string> pySplitLines(std::string_view s, bool keepends) {
  std::vector<std::string> out;
  auto cps = decodeAll(s);
  size_t start = 0;  // byte offset
  for (size_t i = 0; i < cps.size(); ++i) {
    uint32_t cp = cps[i].cp;
    bool brk = cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || cp == 0x1C || cp == 0x1D || cp == 0x1E ||
               cp == 0x85 || cp == 0x2028 || cp == 0x2029;
    if (!brk) continue;
    size_t lineEnd = cps[i].begin;
    size_t next = cps[i].end;
    if (cp == '\r' && i + 1 < cps.size() && cps[i + 1].cp == '\n') {
      next = cps[i + 1].end;
      ++i;
    }
    out.emplace_back(s.substr(start, (keepends ? next : lineEnd) - start));
    start = next;
  }
  if (start < s.size()) out.emplace_back(s.substr(start));
  return out;
}

uint32_t toUpperCp(uint32_t cp) {
  if (cp < 0x80) return (cp >= 'a' && cp <= 'z') ? cp - 32 : cp;
  if (cp == 0xB5) return 0x39C;
  if (cp == 0xFF) return 0x178;
  if (cp >= 0xE0 && cp <= 0xFE && cp != 0xF7) return cp - 32;
  if (cp >= 0x100 && cp <= 0x17F) {
    if (cp == 0x131) return 'I';
    if (cp == 0x17F) return 'S';
    if ((cp >= 0x100 && cp <= 0x137) || (cp >= 0x14A && cp <= 0x177)) return (cp & 1) ? cp - 1 : cp;
    if ((cp >= 0x139 && cp <= 0x148) || (cp >= 0x179 && cp <= 0x17E)) return (cp & 1) ? cp : cp - 1;
    return cp;
  }
  if (cp >= 0x3B1 && cp <= 0x3C9 && cp != 0x3C2) return cp - 32;
  if (cp == 0x3C2) return 0x3A3;
  if (cp == 0x3AC) return 0x386;
  if (cp >= 0x3AD && cp <= 0x3AF) return cp - 37;
  if (cp == 0x3CC) return 0x38C;
  if (cp == 0x3CD || cp == 0x3CE) return cp - 63;
  if (cp >= 0x430 && cp <= 0x44F) return cp - 32;
  if (cp >= 0x450 && cp <= 0x45F) return cp - 80;
  if ((cp >= 0x460 && cp <= 0x481) || (cp >= 0x48A && cp <= 0x4BF) || (cp >= 0x4D0 && cp <= 0x52F))
    return (cp & 1) ? cp - 1 : cp;
  if (cp >= 0x4C1 && cp <= 0x4CE) return (cp & 1) ? cp : cp - 1;
  if (cp == 0x4CF) return 0x4C0;
  return cp;
}

uint32_t toLowerCp(uint32_t cp) {
  if (cp < 0x80) return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
  if (cp >= 0xC0 && cp <= 0xDE && cp != 0xD7) return cp + 32;
  if (cp >= 0x100 && cp <= 0x17F) {
    if (cp == 0x178) return 0xFF;
    if (cp == 0x130) return 'i';
    if ((cp >= 0x100 && cp <= 0x137) || (cp >= 0x14A && cp <= 0x177)) return (cp & 1) ? cp : cp + 1;
    if ((cp >= 0x139 && cp <= 0x148) || (cp >= 0x179 && cp <= 0x17E)) return (cp & 1) ? cp + 1 : cp;
    return cp;
  }
  if (cp >= 0x391 && cp <= 0x3A9 && cp != 0x3A2) return cp + 32;
  if (cp == 0x386) return 0x3AC;
  if (cp >= 0x388 && cp <= 0x38A) return cp + 37;
  if (cp == 0x38C) return 0x3CC;
  if (cp == 0x38E || cp == 0x38F) return cp + 63;
  if (cp >= 0x410 && cp <= 0x42F) return cp + 32;
  if (cp >= 0x400 && cp <= 0x40F) return cp + 80;
  if ((cp >= 0x460 && cp <= 0x481) || (cp >= 0x48A && cp <= 0x4BF) || (cp >= 0x4D0 && cp <= 0x52F))
    return (cp & 1) ? cp : cp + 1;
  if (cp >= 0x4C1 && cp <= 0x4CE) return (cp & 1) ? cp + 1 : cp;
  if (cp == 0x4C0) return 0x4CF;
  return cp;
}

bool isCasedLetter(uint32_t cp) { return toUpperCp(cp) != cp || toLowerCp(cp) != cp || cp == 0xDF; }

bool isAlphaCp(uint32_t cp) {
  if (cp < 0x80) return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z');
  if (isCasedLetter(cp)) return true;
  // Letters of common uncased scripts: CJK, kana, Hangul, Arabic, Hebrew, Thai, Devanagari.
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x3041 && cp <= 0x3096) ||
         (cp >= 0x30A1 && cp <= 0x30FA) || (cp >= 0xAC00 && cp <= 0xD7A3) || (cp >= 0x0621 && cp <= 0x064A) ||
         (cp >= 0x05D0 && cp <= 0x05EA) || (cp >= 0x0E01 && cp <= 0x0E30) || (cp >= 0x0905 && cp <= 0x0939) ||
         cp == 0xAA || cp == 0xBA;
}

namespace {
void appendUpper(std::string& out, uint32_t cp) {
  if (cp == 0xDF) {
    out += "SS";
    return;
  }
  appendUtf8(out, toUpperCp(cp));
}
void appendLower(std::string& out, uint32_t cp) {
  if (cp == 0x130) {
    out += "i\xCC\x87";
    return;
  }
  appendUtf8(out, toLowerCp(cp));
}
}  // namespace

std::string pyUpper(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const auto& c : decodeAll(s)) {
    if (c.end - c.begin == 1 && c.cp >= 0x80) {
      out.push_back(s[c.begin]);  // invalid byte: keep it
      continue;
    }
    appendUpper(out, c.cp);
  }
  return out;
}

std::string pyLower(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const auto& c : decodeAll(s)) {
    if (c.end - c.begin == 1 && c.cp >= 0x80) {
      out.push_back(s[c.begin]);
      continue;
    }
    appendLower(out, c.cp);
  }
  return out;
}

std::string pyCapitalize(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  bool first = true;
  for (const auto& c : decodeAll(s)) {
    if (c.end - c.begin == 1 && c.cp >= 0x80) {
      out.push_back(s[c.begin]);
    } else if (first) {
      appendUpper(out, c.cp);
    } else {
      appendLower(out, c.cp);
    }
    first = false;
  }
  return out;
}

std::string pyTitleMethod(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  bool prevCased = false;
  for (const auto& c : decodeAll(s)) {
    if (c.end - c.begin == 1 && c.cp >= 0x80) {
      out.push_back(s[c.begin]);
      prevCased = false;
      continue;
    }
    const bool cased = isCasedLetter(c.cp);
    if (cased) {
      if (prevCased)
        appendLower(out, c.cp);
      else
        appendUpper(out, c.cp);
    } else {
      appendUtf8(out, c.cp);
    }
    prevCased = cased;
  }
  return out;
}

std::string pyReplace(std::string_view s, std::string_view old, std::string_view repl, long long count,
                      size_t maxBytes) {
  std::string out;
  if (count == 0) return std::string(s);
  if (old.empty()) {
    // Python inserts repl before every code point and at the end.
    auto cps = decodeAll(s);
    long long done = 0;
    for (const auto& c : cps) {
      if (count < 0 || done < count) {
        out += repl;
        ++done;
      }
      out.append(s.substr(c.begin, c.end - c.begin));
      if (out.size() > maxBytes) return out;
    }
    if (count < 0 || done < count) out += repl;
    return out;
  }
  size_t pos = 0;
  long long done = 0;
  while (count < 0 || done < count) {
    size_t f = s.find(old, pos);
    if (f == std::string_view::npos) break;
    out.append(s.substr(pos, f - pos));
    out.append(repl);
    pos = f + old.size();
    ++done;
    if (out.size() > maxBytes) return out;
  }
  out.append(s.substr(pos));
  return out;
}

namespace {
bool isPrintableCp(uint32_t cp) {
  if (cp < 0x20 || cp == 0x7F) return false;
  if (cp < 0x7F) return true;
  if (cp <= 0xA0 || cp == 0xAD) return false;
  if (cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200F) || (cp >= 0x2028 && cp <= 0x202F) ||
      (cp >= 0x205F && cp <= 0x206F) || cp == 0x3000 || cp == 0xFEFF || (cp >= 0xFFF9 && cp <= 0xFFFB))
    return false;
  if (cp >= 0xD800 && cp <= 0xF8FF) return false;  // surrogates and private use
  if (cp >= 0xE0000) return false;
  return true;
}

void appendHex(std::string& out, uint32_t v, int digits) {
  static const char* hex = "0123456789abcdef";
  for (int k = digits - 1; k >= 0; --k) out.push_back(hex[(v >> (4 * k)) & 0xF]);
}
}  // namespace

std::string pyReprString(std::string_view s) {
  char quote = '\'';
  if (s.find('\'') != std::string_view::npos && s.find('"') == std::string_view::npos) quote = '"';
  std::string out;
  out.reserve(s.size() + 2);
  out.push_back(quote);
  for (const auto& c : decodeAll(s)) {
    uint32_t cp = c.cp;
    if (c.end - c.begin == 1 && cp >= 0x80) {
      // Not valid UTF-8: show the byte the way Python shows surrogateescape'd bytes.
      out += "\\udc";
      appendHex(out, cp, 2);
      continue;
    }
    if (cp == static_cast<uint32_t>(quote) || cp == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(cp));
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (!isPrintableCp(cp)) {
      if (cp < 0x100) {
        out += "\\x";
        appendHex(out, cp, 2);
      } else if (cp < 0x10000) {
        out += "\\u";
        appendHex(out, cp, 4);
      } else {
        out += "\\U";
        appendHex(out, cp, 8);
      }
    } else {
      out.append(s.substr(c.begin, c.end - c.begin));
    }
  }
  out.push_back(quote);
  return out;
}

void jsonEscapeString(std::string& out, std::string_view s, bool ensureAscii) {
  out.push_back('"');
  size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b < 0x80) {
      switch (b) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        default:
          if (b < 0x20) {
            out += "\\u00";
            appendHex(out, b, 2);
          } else {
            out.push_back(static_cast<char>(b));
          }
      }
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp = decodeUtf8(s, i, len);
    if (!ensureAscii) {
      out.append(s.substr(i, len));
    } else if (cp < 0x10000) {
      out += "\\u";
      appendHex(out, cp, 4);
    } else {
      uint32_t v = cp - 0x10000;
      out += "\\u";
      appendHex(out, 0xD800 + (v >> 10), 4);
      out += "\\u";
      appendHex(out, 0xDC00 + (v & 0x3FF), 4);
    }
    i += len;
  }
  out.push_back('"');
}

}  // namespace linnet::chat::detail
