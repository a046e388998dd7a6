// UTF-8 encoding of one code point, shared by the tokenizer and the chat
// template engine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace linnet::utf8 {

void append(std::string& out, char32_t cp);

// The length of the longest prefix of `s` that is well-formed UTF-8 (no
// overlong forms, surrogates or code points past U+10FFFF): s.size() when
// all of it is.
std::size_t validPrefix(std::string_view s);

}  // namespace linnet::utf8
