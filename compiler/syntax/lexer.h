// The lexer: source text to tokens. Comments (`//`, `/* */`) and whitespace
// are skipped; a bad character becomes an Error token with a diagnostic.
#pragma once

#include <vector>

#include "base/diagnostics.h"
#include "syntax/token.h"

namespace linnet::syntax {

std::vector<Token> lex(const SourceManager& sources, uint32_t file, Diagnostics& diags);

}  // namespace linnet::syntax
