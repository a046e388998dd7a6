// What the builtins share (internal header): argument checks and Python's
// cased-string test. The builtins themselves, each a name -> function table:
//   filters.cpp            filters (`x | join(", ")`), as jinja2/filters.py
//   tests.cpp              tests (`x is defined`), as jinja2/tests.py
//   string_methods.cpp     methods of str (`s.strip()`) and str.format
//   container_methods.cpp  methods of dict and list; which attributes are unsafe
//   percent_format.cpp     `fmt % args` (also behind the `format` filter)
// interpreter.h declares what the interpreter calls of them.
#pragma once

#include <cstdint>
#include <string>

#include "chat/interpreter.h"

namespace linnet::chat::detail {

// An integer argument (an int or a bool); a TypeError naming `what` otherwise.
int64_t toIntArg(Interpreter& in, const Value& v, const char* what);

// An optional str argument: null when absent or None; a TypeError otherwise.
const std::string* optStringArg(Interpreter& in, const Value* v, const char* what);

// Python's str.islower() (wantLower) or str.isupper(): at least one cased
// letter, and every cased letter of that case.
bool hasCased(const std::string& s, bool wantLower);

}  // namespace linnet::chat::detail
