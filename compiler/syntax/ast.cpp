#include "syntax/ast.h"

namespace linnet::syntax {

namespace {

// Moves e's child expressions onto `out`, leaving e without children.
void detachChildren(Expr& e, std::vector<ExprPtr>& out) {
  auto take = [&](ExprPtr& p) {
    if (p) out.push_back(std::move(p));
  };
  switch (e.kind) {
    case ExprKind::Unary: take(static_cast<UnaryExpr&>(e).operand); break;
    case ExprKind::Binary: {
      auto& b = static_cast<BinaryExpr&>(e);
      take(b.lhs);
      take(b.rhs);
      break;
    }
    case ExprKind::Call: {
      auto& c = static_cast<CallExpr&>(e);
      take(c.callee);
      for (auto& g : c.generics) take(g);
      for (auto& a : c.args) take(a.value);
      break;
    }
    case ExprKind::Member: take(static_cast<MemberExpr&>(e).base); break;
    case ExprKind::Index: {
      auto& x = static_cast<IndexExpr&>(e);
      take(x.base);
      for (auto& item : x.items) {
        take(item.index);
        take(item.lo);
        take(item.hi);
      }
      break;
    }
    case ExprKind::Tuple:
      for (auto& x : static_cast<TupleExpr&>(e).elems) take(x);
      break;
    case ExprKind::List:
      for (auto& x : static_cast<ListExpr&>(e).elems) take(x);
      break;
    case ExprKind::Reduce: take(static_cast<ReduceExpr&>(e).body); break;
    default: break;
  }
}

}  // namespace

void destroyChildren(Expr& e) noexcept {
  std::vector<ExprPtr> stack;
  detachChildren(e, stack);
  while (!stack.empty()) {
    ExprPtr next = std::move(stack.back());
    stack.pop_back();
    detachChildren(*next, stack);
    // `next` is destroyed here, childless: its own destroyChildren finds nothing.
  }
}

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
