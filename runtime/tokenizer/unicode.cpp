#include "tokenizer/unicode.h"

#include "base/utf8.h"

#include <algorithm>
#include <map>
#include <vector>

#include <fmt/format.h>

namespace linnet::tokenizer::unicode {

namespace {
#include "tokenizer/unicode_data.inc"

constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr int kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount,
              kSCount = kLCount * kNCount;

// Scans one UTF-8 sequence at s[i]. Returns the number of bytes of a valid
// sequence (>0), or -k where k >= 1 is the length of the maximal invalid subpart
// (Rust's Utf8Chunks rule). `truncated` is set when the sequence was cut short
// by the end of the input while still valid so far.
int scanSequence(std::string_view s, size_t i, bool& truncated) {
  truncated = false;
  const auto at = [&](size_t k) -> int { return k < s.size() ? static_cast<unsigned char>(s[k]) : -1; };
  const int first = at(i);
  if (first < 0x80) return 1;
  int width = 0;
  if (first >= 0xC2 && first <= 0xDF) width = 2;
  else if (first >= 0xE0 && first <= 0xEF) width = 3;
  else if (first >= 0xF0 && first <= 0xF4) width = 4;
  if (width == 0) return -1;
  const int second = at(i + 1);
  if (second < 0) {
    truncated = true;
    return -1;
  }
  bool ok;
  if (width == 2) {
    ok = (second & 0xC0) == 0x80;
  } else if (width == 3) {
    ok = (first == 0xE0 && second >= 0xA0 && second <= 0xBF) ||
         (first >= 0xE1 && first <= 0xEC && second >= 0x80 && second <= 0xBF) ||
         (first == 0xED && second >= 0x80 && second <= 0x9F) ||
         (first >= 0xEE && first <= 0xEF && second >= 0x80 && second <= 0xBF);
  } else {
    ok = (first == 0xF0 && second >= 0x90 && second <= 0xBF) ||
         (first >= 0xF1 && first <= 0xF3 && second >= 0x80 && second <= 0xBF) ||
         (first == 0xF4 && second >= 0x80 && second <= 0x8F);
  }
  if (!ok) return -1;
  for (int k = 2; k < width; ++k) {
    const int b = at(i + k);
    if (b < 0) {
      truncated = true;
      return -k;
    }
    if ((b & 0xC0) != 0x80) return -k;
  }
  return width;
}

template <class Entry>
const Entry* findEntry(const Entry* begin, const Entry* end, char32_t cp) {
  const Entry* it = std::lower_bound(begin, end, cp, [](const Entry& e, char32_t c) { return e.cp < c; });
  return (it != end && it->cp == cp) ? it : nullptr;
}

void decomposeInto(char32_t cp, bool compat, std::vector<char32_t>& out) {
  if (cp >= kSBase && cp < kSBase + kSCount) {
    const char32_t s = cp - kSBase;
    out.push_back(kLBase + s / kNCount);
    out.push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount != 0) out.push_back(kTBase + s % kTCount);
    return;
  }
  if (cp < 0xC0) {  // nothing below U+00C0 decomposes canonically; U+00A0.. do compatibly
    if (!compat || cp < 0xA0) {
      out.push_back(cp);
      return;
    }
  }
  const DecompEntry* e = findEntry(std::begin(kDecomp), std::end(kDecomp), cp);
  if (e != nullptr) {
    if (compat && e->compatLen > 0) {
      out.insert(out.end(), kDecompPool + e->compatOffset, kDecompPool + e->compatOffset + e->compatLen);
      return;
    }
    if (e->canonLen > 0) {
      out.insert(out.end(), kDecompPool + e->canonOffset, kDecompPool + e->canonOffset + e->canonLen);
      return;
    }
  }
  out.push_back(cp);
}

char32_t composePair(char32_t a, char32_t b) {
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount)
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase &&
      b < kTBase + kTCount)
    return a + (b - kTBase);
  const ComposeEntry* it = std::lower_bound(
      std::begin(kCompose), std::end(kCompose), std::pair<char32_t, char32_t>(a, b),
      [](const ComposeEntry& e, const std::pair<char32_t, char32_t>& k) {
        return e.first < k.first || (e.first == k.first && e.second < k.second);
      });
  if (it != std::end(kCompose) && it->first == a && it->second == b) return it->composite;
  return 0;
}

bool quickCheckAscii(std::string_view s) {
  for (char c : s)
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  return true;
}

}  // namespace

void appendUtf8(std::string& out, char32_t cp) { utf8::append(out, static_cast<char32_t>(cp)); }

std::string toUtf8(char32_t cp) {
  std::string s;
  appendUtf8(s, cp);
  return s;
}

char32_t nextCodePoint(std::string_view s, size_t& i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) {
    ++i;
    return b0;
  }
  const size_t n = sequenceLength(b0);
  char32_t cp = n == 2 ? (b0 & 0x1F) : n == 3 ? (b0 & 0x0F) : (b0 & 0x07);
  for (size_t k = 1; k < n && i + k < s.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  i += n;
  return cp;
}

size_t findInvalidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    // Fast path over ASCII, eight bytes at a time.
    while (i + 8 <= s.size()) {
      uint64_t w;
      __builtin_memcpy(&w, s.data() + i, 8);
      if (w & 0x8080808080808080ULL) break;
      i += 8;
    }
    if (i >= s.size()) break;
    bool truncated;
    const int n = scanSequence(s, i, truncated);
    if (n < 0) return i;
    i += static_cast<size_t>(n);
  }
  return std::string_view::npos;
}

std::string utf8Lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t i = 0;
  while (i < bytes.size()) {
    bool truncated;
    const int n = scanSequence(bytes, i, truncated);
    if (n > 0) {
      out.append(bytes.data() + i, static_cast<size_t>(n));
      i += static_cast<size_t>(n);
    } else {
      appendUtf8(out, kReplacementChar);
      i += static_cast<size_t>(-n);
    }
  }
  return out;
}

size_t completeUtf8Prefix(std::string_view bytes) {
  size_t i = 0;
  while (i < bytes.size()) {
    bool truncated;
    const int n = scanSequence(bytes, i, truncated);
    if (n < 0 && truncated) return i;
    i += static_cast<size_t>(n > 0 ? n : -n);
  }
  return bytes.size();
}

uint8_t combiningClass(char32_t cp) {
  if (cp < 0x300) return 0;
  const CccEntry* e = findEntry(std::begin(kCombiningClass), std::end(kCombiningClass), cp);
  return e ? e->ccc : 0;
}

std::string normalize(std::string_view s, NormalForm form) {
  if (quickCheckAscii(s)) return std::string(s);
  const bool compat = form == NormalForm::NFKC || form == NormalForm::NFKD;
  const bool compose = form == NormalForm::NFC || form == NormalForm::NFKC;
  std::vector<char32_t> d;
  d.reserve(s.size());
  for (size_t i = 0; i < s.size();) decomposeInto(nextCodePoint(s, i), compat, d);
  // Canonical ordering: stable sort of each run of non-starters by class.
  for (size_t i = 0; i < d.size();) {
    if (combiningClass(d[i]) == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < d.size() && combiningClass(d[j]) != 0) ++j;
    if (j - i > 1)
      std::stable_sort(d.begin() + static_cast<ptrdiff_t>(i), d.begin() + static_cast<ptrdiff_t>(j),
                       [](char32_t a, char32_t b) { return combiningClass(a) < combiningClass(b); });
    i = j;
  }
  std::vector<char32_t> out;
  if (compose) {
    out.reserve(d.size());
    ptrdiff_t starter = -1;
    for (char32_t cp : d) {
      const uint8_t cc = combiningClass(cp);
      if (starter >= 0) {
        const bool adjacent = out.size() == static_cast<size_t>(starter) + 1;
        const uint8_t lastClass = adjacent ? 0 : combiningClass(out.back());
        if (adjacent || (lastClass != 0 && lastClass < cc)) {
          const char32_t c = composePair(out[static_cast<size_t>(starter)], cp);
          if (c != 0) {
            out[static_cast<size_t>(starter)] = c;
            continue;
          }
        }
      }
      if (cc == 0) starter = static_cast<ptrdiff_t>(out.size());
      out.push_back(cp);
    }
  } else {
    out = std::move(d);
  }
  std::string result;
  result.reserve(s.size() + 8);
  for (char32_t cp : out) appendUtf8(result, cp);
  return result;
}

std::string lowercase(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b < 0x80) {
      out.push_back(static_cast<char>(b >= 'A' && b <= 'Z' ? b + 32 : b));
      ++i;
      continue;
    }
    const char32_t cp = nextCodePoint(s, i);
    const LowerEntry* e = findEntry(std::begin(kLower), std::end(kLower), cp);
    if (e == nullptr) {
      appendUtf8(out, cp);
    } else {
      for (size_t k = 0; k < e->len; ++k) appendUtf8(out, kLowerPool[e->offset + k]);
    }
  }
  return out;
}

bool isWhitespace(char32_t cp) {
  switch (cp) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x20: case 0x85: case 0xA0:
    case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

size_t trailingWhitespaceStart(std::string_view s) {
  size_t end = s.size();
  while (end > 0) {
    size_t start = end - 1;
    while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
    size_t i = start;
    if (!isWhitespace(nextCodePoint(s, i))) break;
    end = start;
  }
  return end;
}

size_t leadingWhitespaceEnd(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    size_t j = i;
    if (!isWhitespace(nextCodePoint(s, j))) break;
    i = j;
  }
  return i;
}

bool isStripAccentMark(char32_t cp) {
  if (cp < 0x300) return false;
  const CodeRange* it = std::upper_bound(std::begin(kStripMarks), std::end(kStripMarks), cp,
                                         [](char32_t c, const CodeRange& r) { return c < r.first; });
  if (it == std::begin(kStripMarks)) return false;
  --it;
  return cp <= it->last;
}

const std::string& newerCategoryItems(std::string_view property) {
  static const std::map<std::string, std::string, std::less<>> items = [] {
    std::map<std::string, std::string, std::less<>> m;
    const auto add = [&](const std::string& key, const CategoryRange& r) {
      std::string& s = m[key];
      s += fmt::format("\\x{{{:X}}}", r.first);
      if (r.last != r.first) s += fmt::format("-\\x{{{:X}}}", r.last);
    };
    for (const CategoryRange& r : kNewerCategories) {
      const std::string cat(r.category);
      add(cat, r);
      add(cat.substr(0, 1), r);
      if (cat == "Lu" || cat == "Ll" || cat == "Lt") {
        add("L&", r);
        add("LC", r);
      }
      if (cat[0] == 'L' || cat == "Nl") add("Alphabetic", r);
    }
    return m;
  }();
  static const std::string none;
  auto it = items.find(property);
  return it == items.end() ? none : it->second;
}

const char* tablesVersion() { return kTablesVersion; }

}  // namespace linnet::tokenizer::unicode
