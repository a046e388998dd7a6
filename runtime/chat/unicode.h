// UTF-8 helpers with Python's string semantics (internal header).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace linnet::chat::detail {

// Decodes one code point at s[i]; sets len to its byte length. Invalid bytes
// decode leniently as one code point each (their byte value), so every byte
// string has a well-defined code point sequence.
uint32_t decodeUtf8(std::string_view s, size_t i, size_t& len);
void appendUtf8(std::string& out, uint32_t cp);

// Byte offsets of each code point start, plus s.size() at the end.
std::vector<size_t> codePointOffsets(std::string_view s);
size_t codePointCount(std::string_view s);

// Python's str.isspace() for one code point.
bool isPyWhitespace(uint32_t cp);

// Python's str.strip()/lstrip()/rstrip(): with chars == nullptr strip
// whitespace, otherwise the code points in *chars.
std::string pyStrip(std::string_view s, const std::string* chars, bool left, bool right);

// Python's str.split() (sep == nullptr: runs of whitespace) and str.rsplit().
std::vector<std::string> pySplit(std::string_view s, const std::string* sep, long long maxsplit);
std::vector<std::string> pyRSplit(std::string_view s, const std::string* sep, long long maxsplit);
std::vector<std::string> pySplitLines(std::string_view s, bool keepends);

// Case mappings. These cover ASCII, Latin-1, Latin Extended-A, Greek and
// Cyrillic; other scripts pass through unchanged.
uint32_t toUpperCp(uint32_t cp);
uint32_t toLowerCp(uint32_t cp);
bool isCasedLetter(uint32_t cp);
bool isAlphaCp(uint32_t cp);
std::string pyUpper(std::string_view s);
std::string pyLower(std::string_view s);
std::string pyCapitalize(std::string_view s);  // first upper, rest lower
std::string pyTitleMethod(std::string_view s);  // str.title()

// Python str.replace (count < 0: all).
std::string pyReplace(std::string_view s, std::string_view old, std::string_view repl, long long count,
                      size_t maxBytes);

// Python repr() of a str.
std::string pyReprString(std::string_view s);

// json.dumps() of a str (ensure_ascii as given).
void jsonEscapeString(std::string& out, std::string_view s, bool ensureAscii);

}  // namespace linnet::chat::detail
