// The AST as an indented tree, one node per line with its kind (the names
// of expr_kinds.def and stmt_kinds.def) and line:col: `linnetc build --emit ast`.
#pragma once

#include <string>

#include "base/source.h"
#include "syntax/ast.h"

namespace linnet::syntax {

std::string printAst(const ModuleAst& module, const SourceManager& sources);

}  // namespace linnet::syntax
