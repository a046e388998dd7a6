// UTF-8 encoding of one code point, shared by the tokenizer and the chat
// template engine.
#pragma once

#include <cstdint>
#include <string>

namespace linnet::utf8 {

void append(std::string& out, char32_t cp);

}  // namespace linnet::utf8
