// Bodies: statements, expressions, subscripts, comprehensions and calls.
#include <fmt/format.h>

#include "sema/checker_impl.h"

namespace linnet::sema {

using namespace syntax;
using dims::Expr;
using dims::Rel;
using dims::Relation;

Local* Checker::Impl::findLocal(Ctx& ctx, const std::string& name) {
  for (auto it = ctx.scopes.rbegin(); it != ctx.scopes.rend(); ++it) {
    auto found = it->find(name);
    if (found != it->end()) return &found->second;
  }
  return nullptr;
}

void Checker::Impl::declare(Ctx& ctx, const Ident& name, Local local) {
  local.declared = name.range;
  if (index && !local.type.isError()) recordType(ctx, name.range, local.type.str());
  if (ctx.scopes.empty()) ctx.scopes.emplace_back();
  auto& scope = ctx.scopes.back();
  if (auto it = scope.find(name.name); it != scope.end()) {
    Diagnostic& d = error(ctx, name.range, fmt::format("`{}` is already defined in this scope",
                                                       name.name));
    Diagnostics::note(d, it->second.declared, "previous definition");
    return;
  }
  scope[name.name] = std::move(local);
}

void Checker::Impl::checkFnBody(Ctx& ctx, const FnDecl& fn) {
  activeFns.push_back(&fn);
  ctx.scopes.emplace_back();
  for (const ParamDecl& p : fn.params) {
    Local l;
    l.kind = Local::Param;
    l.type = evalType(ctx, *p.type);
    declare(ctx, p.name, l);
  }
  ctx.result = fn.result ? evalType(ctx, *fn.result) : Type::unit();
  checkStmts(ctx, fn.body);
  bool endsInReturn = !fn.body.empty() && fn.body.back()->kind == StmtKind::Return;
  if (ctx.result->kind != Type::Unit && !endsInReturn)
    error(ctx, fn.name.range, fmt::format("fn `{}` must end with `return` of a `{}`",
                                          fn.name.name, ctx.result->str()));
  ctx.scopes.pop_back();
  activeFns.pop_back();
}

void Checker::Impl::checkStmts(Ctx& ctx, const StmtList& stmts) {
  for (size_t i = 0; i < stmts.size(); ++i) {
    if (diags.errorCount() >= Diagnostics::kMaxErrors) return;
    checkStmt(ctx, *stmts[i]);
    if (stmts[i]->kind == StmtKind::Return && i + 1 < stmts.size()) {
      error(ctx, stmts[i + 1]->range, "this statement comes after `return` and never runs");
      return;
    }
  }
}

// The extent of every index variable, or an error for the ones never used
// as a plain subscript.
static std::optional<Shape> extentsOf(Checker::Impl& impl, Ctx& ctx, IndexScope& scope,
                                      const std::vector<Ident>& names) {
  Shape shape;
  bool ok = true;
  for (const Ident& n : names) {
    auto& v = scope.vars[n.name];
    if (!v.extent) {
      impl.error(ctx, n.range, fmt::format("cannot infer the range of index `{}`: use it directly "
                                           "as a subscript of a tensor, as in `x[{}]`",
                                           n.name, n.name));
      ok = false;
      continue;
    }
    shape.push_back(Dim::of(ctx.facts.simplify(*v.extent)));
  }
  if (!ok) return std::nullopt;
  return shape;
}

static Value withIndexScope(Checker::Impl& impl, Ctx& ctx, IndexScope& scope,
                            const std::vector<Ident>& names, const syntax::Expr& body) {
  ctx.scopes.emplace_back();
  for (const Ident& n : names) {
    if (scope.vars.count(n.name)) {
      impl.error(ctx, n.range, fmt::format("index `{}` is bound twice", n.name));
      continue;
    }
    scope.vars[n.name].declared = n.range;
    Local l;
    l.kind = Local::IndexVar;
    l.type = Type::scalar(DType::weakInt());
    l.declared = n.range;
    ctx.scopes.back()[n.name] = l;
  }
  ctx.indexScopes.push_back(&scope);
  Value v = impl.checkExpr(ctx, body);
  ctx.indexScopes.pop_back();
  ctx.scopes.pop_back();
  return v;
}

void Checker::Impl::checkStmt(Ctx& ctx, const Stmt& s) {
  switch (s.kind) {
    case StmtKind::Let: return checkLetStmt(ctx, s);
    case StmtKind::LetTuple: return checkLetTupleStmt(ctx, s);
    case StmtKind::Comprehension: return checkComprehensionStmt(ctx, s);
    case StmtKind::Var: return checkVarStmt(ctx, s);
    case StmtKind::Assign: return checkAssignStmt(ctx, s);
    case StmtKind::Return: return checkReturnStmt(ctx, s);
    case StmtKind::Expr: return checkExprStmt(ctx, s);
    case StmtKind::StaticFor: return checkStaticForStmt(ctx, s);
    case StmtKind::While: return checkWhileStmt(ctx, s);
  }
}

// `let` and `var`: the value, checked against a declared type if there is one.
void Checker::Impl::checkBinding(Ctx& ctx, const Ident& name, const syntax::Expr& value, const TypeExpr* type,
                                 bool isVar) {
  Value v = checkExpr(ctx, value);
  Local l;
  l.kind = isVar ? Local::Var : Local::Let;
  l.type = finalizeWeak(v.type);
  if (!isVar && v.type.kind == Type::Unit) error(ctx, value.range, "this expression has no value");
  if (type) {
    Type declared = evalType(ctx, *type);
    std::string why = mismatch(ctx, v.type, declared, value.range, [&] {
      return fmt::format("`{}` is declared `{}`", name.name, declared.str());
    });
    if (!why.empty())
      error(ctx, value.range, fmt::format("`{}` is declared `{}` but its value is `{}`: {}", name.name,
                                          declared.str(), v.type.str(), why));
    l.type = declared;
  }
  declare(ctx, name, l);
}

void Checker::Impl::checkLetStmt(Ctx& ctx, const Stmt& s) {
  const auto& let = static_cast<const LetStmt&>(s);
  checkBinding(ctx, let.name, *let.value, let.type.get(), false);
}

void Checker::Impl::checkLetTupleStmt(Ctx& ctx, const Stmt& s) {
  const auto& let = static_cast<const LetTupleStmt&>(s);
  Value v = checkExpr(ctx, *let.value);
  bool ok = v.type.kind == Type::Tuple && v.type.elems.size() == let.names.size();
  if (!ok && !v.type.isError())
    error(ctx, let.value->range, fmt::format("cannot unpack `{}` into {} names",
                                             v.type.str(), let.names.size()));
  for (size_t i = 0; i < let.names.size(); ++i) {
    Local l;
    l.type = ok ? v.type.elems[i] : Type::error();
    declare(ctx, let.names[i], l);
  }
}

void Checker::Impl::checkComprehensionStmt(Ctx& ctx, const Stmt& s) {
  const auto& c = static_cast<const ComprehensionStmt&>(s);
  IndexScope scope;
  Value body = withIndexScope(*this, ctx, scope, c.indices, *c.body);
  auto shape = extentsOf(*this, ctx, scope, c.indices);
  Local l;
  l.type = Type::error();
  if (!body.type.isError()) {
    if (body.type.kind != Type::Tensor || !body.type.isScalar()) {
      error(ctx, c.body->range,
            fmt::format("the body of comprehension `{}` must be a scalar, but it is `{}`; "
                        "subscript every dimension",
                        c.name.name, body.type.str()));
    } else if (shape) {
      l.type = finalizeWeak(Type::tensor(*shape, body.type.dtype));
    }
  }
  declare(ctx, c.name, l);
}

void Checker::Impl::checkVarStmt(Ctx& ctx, const Stmt& s) {
  const auto& var = static_cast<const VarStmt&>(s);
  checkBinding(ctx, var.name, *var.value, var.type.get(), true);
}

void Checker::Impl::checkAssignStmt(Ctx& ctx, const Stmt& s) {
  const auto& a = static_cast<const AssignStmt&>(s);
  Value v = checkExpr(ctx, *a.value);
  Type target;
  std::string what;
  if (Local* l = findLocal(ctx, a.target.name)) {
    if (l->kind != Local::Var) {
      Diagnostic& d = error(ctx, a.target.range,
                            fmt::format("cannot assign to `{}`: it is not a `var`",
                                        a.target.name));
      Diagnostics::note(d, l->declared, "declared here; declare it with `var` to assign it");
      return;
    }
    target = l->type;
    what = fmt::format("`{}`", a.target.name);
  } else if (ctx.block && ctx.block->members.count(a.target.name)) {
    const MemberInfo& m = ctx.block->members.at(a.target.name);
    if (m.decl->kind != MemberKind::State) {
      error(ctx, a.target.range, fmt::format("cannot assign to `{}`: only `state` members "
                                             "can be assigned",
                                             a.target.name));
      return;
    }
    target = substitute(m.type, ctx.bindings);
    what = fmt::format("state `{}`", a.target.name);
  } else {
    error(ctx, a.target.range, fmt::format("cannot assign to unknown name `{}`",
                                           a.target.name));
    return;
  }
  std::string why = mismatch(ctx, v.type, target, a.value->range,
                             [&] { return fmt::format("{} is `{}`", what, target.str()); });
  if (!why.empty())
    error(ctx, a.value->range, fmt::format("{} is `{}` but is assigned `{}`: {}", what,
                                           target.str(), v.type.str(), why));
}

void Checker::Impl::checkReturnStmt(Ctx& ctx, const Stmt& s) {
  const auto& r = static_cast<const ReturnStmt&>(s);
  ctx.sawReturn = true;
  if (ctx.loopDepth > 0)
    error(ctx, r.range, "`return` inside a loop is not supported: assign a `var` in the loop "
                        "and return it after");
  Type expected = ctx.result ? *ctx.result : Type::unit();
  if (!r.value) {
    if (expected.kind != Type::Unit)
      error(ctx, r.range, fmt::format("`return` needs a value of type `{}`", expected.str()));
    return;
  }
  Value v = checkExpr(ctx, *r.value);
  std::string why = mismatch(ctx, v.type, expected, r.value->range, [&] {
    return fmt::format("the returned `{}` must be the declared result `{}`", v.type.str(), expected.str());
  });
  if (!why.empty())
    error(ctx, r.value->range, fmt::format("returns `{}`, but the declared result is `{}`: {}",
                                           v.type.str(), expected.str(), why));
}

void Checker::Impl::checkExprStmt(Ctx& ctx, const Stmt& s) {
  const auto& e = static_cast<const ExprStmt&>(s);
  Value v = checkExpr(ctx, *e.expr);
  if (e.expr->kind != ExprKind::Call && !v.type.isError())
    error(ctx, e.range, "this expression's value is unused");
}

void Checker::Impl::checkStaticForStmt(Ctx& ctx, const Stmt& s) {
  const auto& f = static_cast<const StaticForStmt&>(s);
  dims::Facts saved = ctx.facts;
  size_t originsSize = ctx.origins.size();
  size_t whereSize = ctx.where.size();
  ctx.scopes.emplace_back();
  Local l;
  if (f.iterable) {
    Value it = checkExpr(ctx, *f.iterable);
    if (it.type.kind != Type::BlockArray) {
      if (!it.type.isError())
        error(ctx, f.iterable->range,
              fmt::format("`static for x in ...` runs over an array of sub-blocks or a range "
                          "`lo..hi`, not over `{}`",
                          it.type.str()));
      l.type = Type::error();
    } else {
      l.kind = Local::StaticBlock;
      l.type = it.type;
      l.type.kind = Type::Block;
    }
  } else {
    auto lo = evalDim(ctx, *f.lo);
    auto hi = evalDim(ctx, *f.hi);
    l.kind = Local::StaticInt;
    l.type = Type::scalar(DType::weakInt());
    if (lo && hi) {
      Relation ordered{*lo, Rel::Le, *hi};
      SourceRange range = SourceRange::merge(f.lo->range, f.hi->range);
      const char* why = "a `static for` range must not run backwards";
      if (!require(ctx, ordered, range, [&] { return why; })) unproven(ctx, range, ordered, why);
      Expr i = Expr::var(f.var.name);
      l.staticInt = i;
      auto origin = [&] {
        return FactOrigin{fmt::format("the range of `static for {}`", f.var.name), f.var.range};
      };
      addFact(ctx, {i, Rel::Ge, *lo}, origin);
      addFact(ctx, {i, Rel::Lt, *hi}, origin);
      ctx.where.push_back(fmt::format("{} <= {} < {}", lo->str(), f.var.name, hi->str()));
    }
  }
  declare(ctx, f.var, l);
  ctx.scopes.emplace_back();
  ++ctx.loopDepth;
  checkStmts(ctx, f.body);
  --ctx.loopDepth;
  ctx.scopes.pop_back();
  ctx.scopes.pop_back();
  ctx.facts = saved;
  ctx.origins.resize(originsSize);
  ctx.where.resize(whereSize);
}

void Checker::Impl::checkWhileStmt(Ctx& ctx, const Stmt& s) {
  const auto& w = static_cast<const WhileStmt&>(s);
  Value c = checkExpr(ctx, *w.cond);
  if (!c.type.isError() && !(c.type.isScalar() && c.type.dtype.boolLike()))
    error(ctx, w.cond->range,
          fmt::format("a `while` condition must be a `bool`, not `{}`", c.type.str()));
  ctx.scopes.emplace_back();
  ++ctx.loopDepth;
  checkStmts(ctx, w.body);
  --ctx.loopDepth;
  ctx.scopes.pop_back();
}

// ------------------------------------------------------------ expressions

// Nesting the checker follows by recursion (a flat chain is not nesting).
static constexpr int kMaxExprDepth = 200;

Value Checker::Impl::checkExpr(Ctx& ctx, const syntax::Expr& e) {
  if (++depth > kMaxExprDepth) {
    --depth;
    error(ctx, e.range,
          fmt::format("expression nests too deeply: more than {} levels; name inner parts with `let`", kMaxExprDepth));
    return Value::error();
  }
  Value v;
  // Dimension arithmetic that leaves int64 anywhere below is reported at the
  // innermost expression that computes it, never an abort.
  try {
  switch (e.kind) {
    case ExprKind::IntLiteral:
      v.type = Type::scalar(DType::weakInt());
      v.staticInt = Expr::constant(static_cast<const IntLiteralExpr&>(e).value);
      break;
    case ExprKind::FloatLiteral:
      v.type = Type::scalar(DType::weakFloat());
      break;
    case ExprKind::BoolLiteral:
      v.type = Type::scalar(DType::concrete(Scalar::Bool));
      break;
    case ExprKind::Name:
      v = checkName(ctx, static_cast<const NameExpr&>(e));
      break;
    case ExprKind::Unary:
      v = checkUnary(ctx, static_cast<const UnaryExpr&>(e));
      break;
    case ExprKind::Binary:
      v = checkBinary(ctx, static_cast<const BinaryExpr&>(e));
      break;
    case ExprKind::Call:
      v = checkCall(ctx, static_cast<const CallExpr&>(e));
      break;
    case ExprKind::Member:
      v = checkMember(ctx, static_cast<const MemberExpr&>(e));
      break;
    case ExprKind::Index:
      v = checkIndex(ctx, static_cast<const IndexExpr&>(e));
      break;
    case ExprKind::Reduce:
      v = checkReduce(ctx, static_cast<const ReduceExpr&>(e));
      break;
    case ExprKind::Tuple: {
      v.type.kind = Type::Tuple;
      for (const auto& x : static_cast<const TupleExpr&>(e).elems)
        v.type.elems.push_back(finalizeWeak(checkExpr(ctx, *x).type));
      break;
    }
    case ExprKind::List:
      error(ctx, e.range, "a list `[...]` is only an argument of `reshape`, `permute` or `fill`");
      break;
    case ExprKind::Spread:
      error(ctx, e.range, "`..L` is only allowed in a shape");
      break;
  }
  } catch (const dims::DimOverflow& o) {
    error(ctx, e.range, overflowMessage(o));
    v = Value::error();
  }
  if (index && !v.type.isError()) recordType(ctx, e.range, v.type.str());
  --depth;
  return v;
}

Value Checker::Impl::checkName(Ctx& ctx, const NameExpr& e) {
  if (Local* l = findLocal(ctx, e.name)) {
    refer(e.range, l->declared, [&] {
      static const char* kinds[] = {"local", "variable", "parameter", "index", "static", "static block"};
      return fmt::format("{} `{}`", kinds[l->kind], e.name);
    });
    Value v;
    v.type = l->type;
    v.staticInt = l->staticInt;
    if (l->kind == Local::IndexVar) v.indexVar = e.name;
    return v;
  }
  if (e.name == "none") {
    Value v;
    v.type.kind = Type::None;
    return v;
  }
  if (auto it = ctx.generics.find(e.name); it != ctx.generics.end()) {
    if (it->second == "Dim") {
      Value v;
      v.type = Type::scalar(DType::weakInt());
      v.staticInt = ctx.bindings.dims.at(e.name);
      if (index) noteGeneric(ctx, e.range, e.name, v.staticInt->str());
      return v;
    }
    error(ctx, e.range, fmt::format("`{}` is a `{}` generic and has no value", e.name, it->second));
    return Value::error();
  }
  if (ctx.block) {
    if (auto it = ctx.block->members.find(e.name); it != ctx.block->members.end()) {
      refer(e.range, it->second.decl->name.range,
            [&] { return fmt::format("member `{}` of block `{}`", e.name, ctx.block->block->name.name); });
      Value v;
      v.type = substitute(it->second.type, ctx.bindings);
      return v;
    }
    if (ctx.block->fns.count(e.name)) {
      error(ctx, e.range, fmt::format("`{}` is a fn; call it as `{}(...)`", e.name, e.name));
      return Value::error();
    }
  }
  if (const Item* item = program.lookup(*ctx.module, e.name)) {
    if (item->kind == Item::Const) {
      refer(e.range, item->constant->name.range,
            [&] { return fmt::format("constant `{}` of module `{}`", e.name, item->module->name); });
      Ctx cctx;
      cctx.module = item->module;
      Value v;
      v.type = evalType(cctx, *item->constant->type);
      return v;
    }
    error(ctx, e.range, fmt::format("`{}` is a {}, not a value", e.name,
                                    item->kind == Item::Block ? "block" : "fn"));
    return Value::error();
  }
  error(ctx, e.range, fmt::format("unknown name `{}`", e.name));
  return Value::error();
}

Value Checker::Impl::checkUnary(Ctx& ctx, const UnaryExpr& e) {
  Value v = checkExpr(ctx, *e.operand);
  if (v.type.isError()) return Value::error();
  if (v.type.kind != Type::Tensor) {
    error(ctx, e.range, fmt::format("`{}` needs a tensor or a scalar, not `{}`", spelling(e.op),
                                    v.type.str()));
    return Value::error();
  }
  Value out;
  out.type = v.type;
  if (e.op == UnaryOp::Neg) {
    if (!(v.type.dtype.floatLike() || v.type.dtype.intLike())) {
      error(ctx, e.range, fmt::format("`-` needs numbers, not `{}`", v.type.str()));
      return Value::error();
    }
    if (v.staticInt) out.staticInt = Expr::constant(0) - *v.staticInt;
  } else if (!v.type.dtype.boolLike()) {
    error(ctx, e.range, fmt::format("`!` needs a `bool`, not `{}`", v.type.str()));
    return Value::error();
  }
  return out;
}

// A left-leaning chain (`x + x + ... + x`, 700,000 terms deep) is walked
// with a loop down its left spine, not by recursion: it neither overflows the
// stack nor counts as nesting for checkExpr's depth limit.
Value Checker::Impl::checkBinary(Ctx& ctx, const BinaryExpr& e) {
  std::vector<const BinaryExpr*> spine{&e};
  while (spine.back()->lhs->kind == ExprKind::Binary)
    spine.push_back(static_cast<const BinaryExpr*>(spine.back()->lhs.get()));
  Value l = checkExpr(ctx, *spine.back()->lhs);
  for (auto it = spine.rbegin(); it != spine.rend(); ++it) {
    Value r = checkExpr(ctx, *(*it)->rhs);
    try {
      l = combineBinary(ctx, **it, std::move(l), std::move(r));
    } catch (const dims::DimOverflow& o) {
      error(ctx, (*it)->range, overflowMessage(o));
      l = Value::error();
    }
  }
  return l;
}

Value Checker::Impl::combineBinary(Ctx& ctx, const BinaryExpr& e, Value l, Value r) {
  if (l.type.isError() || r.type.isError()) return Value::error();
  const char* op = spelling(e.op);
  if (l.type.kind != Type::Tensor || r.type.kind != Type::Tensor) {
    error(ctx, e.range, fmt::format("`{}` needs tensors or scalars, not `{}` and `{}`", op,
                                    l.type.str(), r.type.str()));
    return Value::error();
  }
  std::string why;
  auto shape = broadcast(ctx, l.type.shape, r.type.shape, why, e.range, [&] {
    return fmt::format("`{}` broadcasts `{}` with `{}`", op, l.type.str(), r.type.str());
  });
  if (!shape) {
    error(ctx, e.range, fmt::format("cannot broadcast `{}` with `{}` in `{}`: {}", l.type.str(),
                                    r.type.str(), op, why));
    return Value::error();
  }
  auto dtype = unifyDTypes(l.type.dtype, r.type.dtype);
  if (!dtype) {
    error(ctx, e.range, fmt::format("`{}` of `{}` and `{}`: element types differ; convert one "
                                    "side with `cast<...>`",
                                    op, l.type.dtype.str(), r.type.dtype.str()));
    return Value::error();
  }
  Value out;
  switch (e.op) {
    case BinaryOp::And: case BinaryOp::Or:
      if (!dtype->boolLike()) {
        error(ctx, e.range, fmt::format("`{}` needs `bool` operands, not `{}`", op, dtype->str()));
        return Value::error();
      }
      out.type = Type::tensor(*shape, DType::concrete(Scalar::Bool));
      return out;
    case BinaryOp::Lt: case BinaryOp::Le: case BinaryOp::Gt: case BinaryOp::Ge:
      if (dtype->boolLike()) {
        error(ctx, e.range, fmt::format("`{}` needs numbers, not `bool`", op));
        return Value::error();
      }
      out.type = Type::tensor(*shape, DType::concrete(Scalar::Bool));
      return out;
    case BinaryOp::Eq: case BinaryOp::Ne:
      out.type = Type::tensor(*shape, DType::concrete(Scalar::Bool));
      return out;
    case BinaryOp::BitAnd: case BinaryOp::BitOr: case BinaryOp::BitXor: case BinaryOp::Shl:
    case BinaryOp::Shr:
      if (!dtype->intLike()) {
        error(ctx, e.range, fmt::format("`{}` needs integer operands, not `{}`", op, dtype->str()));
        return Value::error();
      }
      out.type = Type::tensor(*shape, *dtype);
      return out;
    default:
      break;
  }
  if (dtype->boolLike()) {
    error(ctx, e.range, fmt::format("`{}` needs numbers, not `bool`", op));
    return Value::error();
  }
  if (e.op == BinaryOp::Rem && !dtype->intLike()) {
    error(ctx, e.range, fmt::format("`%` needs integer operands, not `{}`", dtype->str()));
    return Value::error();
  }
  out.type = Type::tensor(*shape, *dtype);
  if (l.staticInt && r.staticInt) {
    try {
      switch (e.op) {
        case BinaryOp::Add: out.staticInt = *l.staticInt + *r.staticInt; break;
        case BinaryOp::Sub: out.staticInt = *l.staticInt - *r.staticInt; break;
        case BinaryOp::Mul: out.staticInt = *l.staticInt * *r.staticInt; break;
        case BinaryOp::Div:
        case BinaryOp::Rem:
          if (prove(ctx, {*r.staticInt, Rel::Gt, Expr::constant(0)}))
            out.staticInt = e.op == BinaryOp::Div ? Expr::floorDiv(*l.staticInt, *r.staticInt)
                                                  : Expr::mod(*l.staticInt, *r.staticInt);
          break;
        default: break;
      }
    } catch (const dims::DimOverflow& o) {
      error(ctx, e.range, overflowMessage(o));
    }
  }
  return out;
}

Value Checker::Impl::checkIndex(Ctx& ctx, const IndexExpr& e) {
  Value base = checkExpr(ctx, *e.base);
  if (base.type.isError()) {
    for (const IndexItem& item : e.items) {
      if (item.index) checkExpr(ctx, *item.index);
    }
    return Value::error();
  }
  if (base.type.kind != Type::Tensor) {
    error(ctx, e.base->range, fmt::format("cannot subscript `{}`", base.type.str()));
    return Value::error();
  }
  const Shape& shape = base.type.shape;
  if (hasPack(shape)) {
    error(ctx, e.range, fmt::format("cannot subscript `{}`: its shape has a dimension pack",
                                    base.type.str()));
    return Value::error();
  }
  if (e.items.size() != shape.size()) {
    error(ctx, e.range, fmt::format("`{}` has rank {}, but {} subscripts are given; write `:` "
                                    "for a whole axis",
                                    base.type.str(), shape.size(), e.items.size()));
    return Value::error();
  }
  Shape out;
  bool ok = true;
  for (size_t k = 0; k < e.items.size(); ++k) {
    const IndexItem& item = e.items[k];
    const Expr& dim = shape[k].expr;
    if (item.kind == IndexItem::Slice) {
      auto bound = [&](const ExprPtr& x, Expr fallback) -> std::optional<Expr> {
        if (!x) return fallback;
        Value v = checkExpr(ctx, *x);
        if (v.type.isError()) return std::nullopt;
        if (!v.staticInt) {
          error(ctx, x->range, "slice bounds must be static dimensions (numbers, `Dim` generics "
                               "and their arithmetic)");
          return std::nullopt;
        }
        return v.staticInt;
      };
      auto lo = bound(item.lo, Expr::constant(0));
      auto hi = bound(item.hi, dim);
      if (!lo || !hi) {
        ok = false;
        continue;
      }
      auto why = [&] {
        return fmt::format("the slice `{}:{}` must lie within dimension {} (`{}`)", lo->str(), hi->str(), k,
                           dim.str());
      };
      for (const Relation& need : {Relation{*lo, Rel::Ge, Expr::constant(0)},
                                   Relation{*lo, Rel::Le, *hi}, Relation{*hi, Rel::Le, dim}}) {
        if (!require(ctx, need, item.range, why)) {
          unproven(ctx, item.range, need, why());
          ok = false;
          break;
        }
      }
      out.push_back(Dim::of(ctx.facts.simplify(*hi - *lo)));
      continue;
    }
    Value v = checkExpr(ctx, *item.index);
    if (v.type.isError()) {
      ok = false;
      continue;
    }
    if (!v.indexVar.empty()) {
      IndexScope::Var* var = nullptr;
      for (auto it = ctx.indexScopes.rbegin(); it != ctx.indexScopes.rend() && !var; ++it)
        if (auto f = (*it)->vars.find(v.indexVar); f != (*it)->vars.end()) var = &f->second;
      if (var && !var->extent) {
        var->extent = dim;
        var->firstUse = item.range;
      } else if (var && !requireEqual(ctx, *var->extent, dim, item.range, [&] {
                   return fmt::format("index `{}` must range over one extent: `{}` here and where it was first used",
                                      v.indexVar, var->extent->str());
                 })) {
        Diagnostic& d = error(ctx, item.range,
                              fmt::format("index `{}` ranges over `{}` here, but over `{}` where "
                                          "it was first used",
                                          v.indexVar, dim.str(), var->extent->str()));
        Diagnostics::note(d, var->firstUse, "first used here");
        ok = false;
      }
      continue;
    }
    if (!(v.type.isScalar() && v.type.dtype.intLike())) {
      error(ctx, item.range, fmt::format("a subscript must be an integer scalar, not `{}`",
                                         v.type.str()));
      ok = false;
      continue;
    }
    if (v.staticInt) {
      auto why = [&] {
        return fmt::format("index `{}` must lie within dimension {} (`{}`)", v.staticInt->str(), k, dim.str());
      };
      for (const Relation& need : {Relation{*v.staticInt, Rel::Ge, Expr::constant(0)},
                                   Relation{*v.staticInt, Rel::Lt, dim}}) {
        if (!require(ctx, need, item.range, why)) {
          unproven(ctx, item.range, need, why());
          ok = false;
          break;
        }
      }
    }
    // A runtime index: a gather, clamped into range when it runs.
  }
  if (!ok) return Value::error();
  Value v;
  v.type = Type::tensor(std::move(out), base.type.dtype);
  return v;
}

Value Checker::Impl::checkReduce(Ctx& ctx, const ReduceExpr& e) {
  IndexScope scope;
  Value body = withIndexScope(*this, ctx, scope, e.binders, *e.body);
  auto shape = extentsOf(*this, ctx, scope, e.binders);
  if (body.type.isError() || !shape) return Value::error();
  if (!body.type.isScalar()) {
    error(ctx, e.body->range, fmt::format("the body of `{}[...]` must be a scalar, not `{}`",
                                          e.op.name, body.type.str()));
    return Value::error();
  }
  bool logical = info(*reducerNamed(e.op.name)).operands == Operands::Bools;
  if (logical != body.type.dtype.boolLike()) {
    error(ctx, e.body->range,
          fmt::format("`{}[...]` needs a {} body, not `{}`", e.op.name,
                      logical ? "`bool`" : "numeric", body.type.str()));
    return Value::error();
  }
  Value v;
  v.type = body.type;
  return v;
}

Value Checker::Impl::checkMember(Ctx& ctx, const MemberExpr& e) {
  Value base = checkExpr(ctx, *e.base);
  if (base.type.isError()) return Value::error();
  if (base.type.kind != Type::Block) {
    error(ctx, e.member.range, fmt::format("`{}` has no members", base.type.str()));
    return Value::error();
  }
  const BlockSig& sig = blockSig(base.type.block, program.moduleOf(base.type.block));
  auto it = sig.members.find(e.member.name);
  if (it == sig.members.end()) {
    if (sig.fns.count(e.member.name))
      error(ctx, e.member.range, fmt::format("`{}` is a fn; call it", e.member.name));
    else
      error(ctx, e.member.range, fmt::format("block `{}` has no member `{}`",
                                             base.type.block->name.name, e.member.name));
    return Value::error();
  }
  if (it->second.decl->kind == MemberKind::State) {
    Diagnostic& d = error(ctx, e.member.range,
                          fmt::format("state `{}` of block `{}` is read and assigned only by that "
                                      "block's own fns",
                                      e.member.name, base.type.block->name.name));
    Diagnostics::note(d, it->second.decl->name.range, "declared here");
    return Value::error();
  }
  refer(e.member.range, it->second.decl->name.range,
        [&] { return fmt::format("member `{}` of block `{}`", e.member.name, base.type.block->name.name); });
  Bindings args;
  args.dims = base.type.blockDims;
  args.packs = base.type.blockPacks;
  args.dtypes = base.type.blockDTypes;
  Value v;
  v.type = substitute(it->second.type, args);
  return v;
}

}  // namespace linnet::sema
