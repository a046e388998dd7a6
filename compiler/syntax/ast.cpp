#include "syntax/ast.h"

namespace linnet::syntax {

const char* spelling(BinaryOp op) {
  switch (op) {
#define BINARY_OP(Name, Spelling, Precedence) \
  case BinaryOp::Name:                        \
    return Spelling;
#include "syntax/operators.def"
  }
  return "?";
}

const char* spelling(UnaryOp op) {
  switch (op) {
#define UNARY_OP(Name, Spelling) \
  case UnaryOp::Name:            \
    return Spelling;
#include "syntax/operators.def"
  }
  return "?";
}

const char* name(ExprKind kind) {
  switch (kind) {
#define EXPR(Name)      \
  case ExprKind::Name: \
    return #Name;
#include "syntax/expr_kinds.def"
  }
  return "?";
}

const char* name(StmtKind kind) {
  switch (kind) {
#define STMT(Name)      \
  case StmtKind::Name: \
    return #Name;
#include "syntax/stmt_kinds.def"
  }
  return "?";
}

}  // namespace linnet::syntax
