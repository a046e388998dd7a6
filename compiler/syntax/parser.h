// The parser: tokens to a ModuleAst. Recursive descent; after an error it
// skips to the next statement or item and goes on, so one run reports every
// independent syntax error in a file.
#pragma once

#include <memory>

#include "base/diagnostics.h"
#include "syntax/ast.h"

namespace linnet::syntax {

std::unique_ptr<ModuleAst> parseFile(const SourceManager& sources, uint32_t file,
                                     Diagnostics& diags);

}  // namespace linnet::syntax
