// UTF-8 and Unicode helpers for the tokenizer (internal, but tests use them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace linnet::tokenizer::unicode {

inline constexpr char32_t kReplacementChar = 0xFFFD;

// Appends the UTF-8 encoding of `cp` (which must be a valid scalar value).
void appendUtf8(std::string& out, char32_t cp);
std::string toUtf8(char32_t cp);

// Decodes the scalar value at `s[i]` of a string known to be valid UTF-8 and
// advances `i` past it.
char32_t nextCodePoint(std::string_view s, size_t& i);

// Length in bytes of the UTF-8 sequence starting with lead byte `b` (1 for
// invalid lead bytes).
inline size_t sequenceLength(unsigned char b) {
  if (b < 0x80) return 1;
  if (b >= 0xF0) return 4;
  if (b >= 0xE0) return 3;
  if (b >= 0xC0) return 2;
  return 1;
}

// The offset of the first byte that is not part of valid UTF-8, or npos.
size_t findInvalidUtf8(std::string_view s);
inline bool isValidUtf8(std::string_view s) { return findInvalidUtf8(s) == std::string_view::npos; }

// Converts arbitrary bytes into valid UTF-8 exactly as Rust's
// String::from_utf8_lossy (and Python's bytes.decode("utf-8", "replace")) do:
// each maximal invalid subpart becomes one U+FFFD.
std::string utf8Lossy(std::string_view bytes);

// Length of the longest prefix of `bytes` that utf8Lossy can convert without
// knowing what follows: everything except a trailing, still incomplete (but so
// far valid) multi-byte sequence.
size_t completeUtf8Prefix(std::string_view bytes);

// Unicode normalization forms of valid UTF-8 text.
enum class NormalForm { NFC, NFD, NFKC, NFKD };
std::string normalize(std::string_view s, NormalForm form);

// Per-character lowercase (Rust's char::to_lowercase on each character; no
// final-sigma context), as the Lowercase normalizer does.
std::string lowercase(std::string_view s);

// White_Space property (Rust's char::is_whitespace).
bool isWhitespace(char32_t cp);
// Where the trailing whitespace of valid UTF-8 `s` begins (s.size() when
// there is none), and where its leading whitespace ends (0 when none).
size_t trailingWhitespaceStart(std::string_view s);
size_t leadingWhitespaceEnd(std::string_view s);

// Canonical combining class (0 for starters).
uint8_t combiningClass(char32_t cp);

// Marks that tokenizers' StripAccents removes (combining marks, Unicode 9.0).
bool isStripAccentMark(char32_t cp);

// PCRE2 class items ("\\x{31350}-\\x{323AF}...") for the characters that a
// Unicode property gained between Unicode 14.0 (PCRE2 10.42's tables) and
// 16.0 (tokenizers' Oniguruma). `property`: a general category (L, Lu, Ll, Lt,
// Lm, Lo, L&, LC, M, Mn, Mc, Me, N, Nd, Nl, No) or Alphabetic; "" otherwise.
const std::string& newerCategoryItems(std::string_view property);

// Where the tables come from (Unicode versions).
const char* tablesVersion();

}  // namespace linnet::tokenizer::unicode
