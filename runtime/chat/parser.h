// Parser from tokens to the syntax tree (internal header).
#pragma once

#include <string>
#include <vector>

#include "chat/ast.h"
#include "chat/lexer.h"

namespace linnet::chat::detail {

// Deepest nesting of blocks and expressions the parser accepts; deeper input
// is a syntax error, so that neither parsing nor rendering recurses without
// bound.
constexpr size_t kMaxParseDepth = 96;

// Throws TemplateSyntaxError.
Body parseTemplate(const std::vector<Token>& tokens, const std::string& templateName, const SourceMap& map);

}  // namespace linnet::chat::detail
