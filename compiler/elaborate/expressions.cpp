// Elaboration of expressions: literals, names, members, operators (with
// the dtype join made explicit as casts), indexing and comprehensions.
#include "elaborate/builder.h"

namespace linnet::elab {

using namespace syntax;
using sema::BinaryKind;
using sema::UnaryKind;

Value Program::Builder::eval(Frame& f, const syntax::Expr& e) {
  switch (e.kind) {
    case syntax::ExprKind::IntLiteral: {
      int64_t v = static_cast<const IntLiteralExpr&>(e).value;
      Value r = constantInt(f, Scalar::I64, v, true, e.range);
      r.staticInt = v;
      return r;
    }
    case syntax::ExprKind::FloatLiteral:
      return constantFloat(f, Scalar::F32, static_cast<const FloatLiteralExpr&>(e).value, true, e.range);
    case syntax::ExprKind::BoolLiteral:
      return constantInt(f, Scalar::Bool, static_cast<const BoolLiteralExpr&>(e).value, false, e.range);
    case syntax::ExprKind::Name: return name(f, static_cast<const NameExpr&>(e));
    case syntax::ExprKind::Unary: {
      const auto& u = static_cast<const UnaryExpr&>(e);
      Value v = eval(f, *u.operand);
      Value out = unary(f, sema::unaryKind(u.op), v, e.range);
      if (v.staticInt && u.op == syntax::UnaryOp::Neg) out.staticInt = -*v.staticInt;
      return out;
    }
    case syntax::ExprKind::Binary: {
      // A left-leaning chain (`x + ... + x`, maybe 700,000 deep) by a loop
      // down its left spine, not recursion.
      std::vector<const BinaryExpr*> spine{static_cast<const BinaryExpr*>(&e)};
      while (spine.back()->lhs->kind == syntax::ExprKind::Binary)
        spine.push_back(static_cast<const BinaryExpr*>(spine.back()->lhs.get()));
      Value l = eval(f, *spine.back()->lhs);
      for (auto it = spine.rbegin(); it != spine.rend(); ++it) {
        const BinaryExpr& b = **it;
        Value r = eval(f, *b.rhs);
        Value out = binary(f, sema::binaryKind(b.op), l, r, b.range);
        if (l.staticInt && r.staticInt) {
          // Checked: a value that leaves int64 is just not static (the
          // checker has reported it already).
          int64_t x = *l.staticInt, y = *r.staticInt, v = 0;
          switch (b.op) {
            case syntax::BinaryOp::Add:
              if (!__builtin_add_overflow(x, y, &v)) out.staticInt = v;
              break;
            case syntax::BinaryOp::Sub:
              if (!__builtin_sub_overflow(x, y, &v)) out.staticInt = v;
              break;
            case syntax::BinaryOp::Mul:
              if (!__builtin_mul_overflow(x, y, &v)) out.staticInt = v;
              break;
            case syntax::BinaryOp::Div:
              if (y > 0) out.staticInt = x / y;  // rounds toward zero, as the operator does
              break;
            default: break;
          }
        }
        l = std::move(out);
      }
      return l;
    }
    case syntax::ExprKind::Tuple: {
      Type t;
      t.kind = Type::Tuple;
      std::vector<const Expr*> elems;
      for (const auto& x : static_cast<const TupleExpr&>(e).elems) {
        Value v = eval(f, *x);
        if (v.type.isTensor()) v = finalize(v);
        t.elems.push_back(v.type);
        elems.push_back(v.expr);
      }
      return tensorValue(node(f, ExprKind::Tuple, t, e.range, std::move(elems)));
    }
    case syntax::ExprKind::Member: return member(f, static_cast<const MemberExpr&>(e));
    case syntax::ExprKind::Index: return index(f, static_cast<const IndexExpr&>(e));
    case syntax::ExprKind::Reduce: {
      const auto& r = static_cast<const ReduceExpr&>(e);
      auto p = sema::reducerNamed(r.op.name);
      if (!p) fail(r.op.range, fmt::format("`{}` is not a reduction", r.op.name));
      return comprehension(f, r.binders, *r.body, sema::reduceKind(*p), e.range);
    }
    case syntax::ExprKind::Call: return call(f, static_cast<const CallExpr&>(e));
    case syntax::ExprKind::List:
    case syntax::ExprKind::Spread: break;
  }
  fail(e.range, "this expression has no value of its own");
}

Value Program::Builder::name(Frame& f, const NameExpr& e) {
  // A local first, as the checker resolves names: `let none = ...` shadows
  // the empty Option.
  if (Value* v = lookup(f, e.name)) return *v;
  if (e.name == "none") {
    Type t;
    t.kind = Type::None;
    return tensorValue(node(f, ExprKind::None, t, e.range));
  }
  if (auto it = f.env.dims.find(e.name); it != f.env.dims.end()) {
    Value v = constantInt(f, Scalar::I64, it->second, true, e.range);
    v.staticInt = it->second;
    return v;
  }
  if (f.self) {
    Type selfType;
    selfType.kind = Type::Block;
    selfType.block = f.self;
    Value self{node(f, ExprKind::Self, selfType, e.range), selfType, std::nullopt};
    Value out;
    if (selfMember(f, self, e.name, e.range, out)) return out;
    if (const Member* s = f.self->state(e.name)) {
      Expr* x = node(f, ExprKind::State, Type::of(s->type), e.range);
      x->name = e.name;
      return tensorValue(x);
    }
  }
  if (const sema::Item* item = source.lookup(*f.module, e.name); item && item->kind == sema::Item::Const) {
    Frame cf;
    cf.fn = f.fn;
    cf.module = item->module;
    cf.scopes.emplace_back();
    Value v = eval(cf, *item->constant->value);
    v = cast(f, v, dtypeOf(cf, item->constant->type->name.name, item->constant->type->range), e.range);
    v.staticInt.reset();
    return v;
  }
  fail(e.range, fmt::format("unknown name `{}`", e.name));
}

// A param, sub-block or sub-block array of `block`.
bool Program::Builder::selfMember(Frame& f, const Value& block, const std::string& n, SourceRange at, Value& out) {
  const Instance& inst = *block.type.block;
  if (const Member* p = inst.param(n)) {
    Expr* x = node(f, ExprKind::Param, Type::of(p->type), at, {block.expr});
    x->name = n;
    out = tensorValue(x);
    return true;
  }
  if (auto it = inst.subs.find(n); it != inst.subs.end()) {
    Type t;
    t.kind = Type::Block;
    t.block = it->second.get();
    Expr* x = node(f, ExprKind::Sub, t, at, {block.expr});
    x->name = n;
    out = tensorValue(x);
    return true;
  }
  if (auto it = inst.arrays.find(n); it != inst.arrays.end()) {
    Type t;
    t.kind = Type::Array;
    t.array = n;
    t.arrayOwner = &inst;
    if (!it->second.empty()) t.block = it->second[0].get();
    Expr* x = node(f, ExprKind::Sub, t, at, {block.expr});
    x->name = n;
    out = tensorValue(x);
    return true;
  }
  return false;
}

Value Program::Builder::member(Frame& f, const MemberExpr& e) {
  Value base = eval(f, *e.base);
  if (base.type.kind != Type::Block) fail(e.range, "a member of a value that is not a block");
  Value out;
  if (selfMember(f, base, e.member.name, e.member.range, out) && out.type.kind != Type::Array) return out;
  if (base.type.block->state(e.member.name)) fail(e.range, "another block's state is not readable");
  fail(e.range, fmt::format("no member `{}`", e.member.name));
}

Value Program::Builder::unary(Frame& f, UnaryKind k, Value x, SourceRange at) {
  // A literal integer under a float function is a float.
  if (k != UnaryKind::Not && k != UnaryKind::Neg && k != UnaryKind::Abs && x.t().weak && !sema::isFloat(x.t().dtype)) {
    x = cast(f, x, Scalar::F32, at);
    x.type.tensor.weak = true;
  }
  Expr* e = node(f, ExprKind::Unary, Type::of(x.t()), at, {x.expr});
  e->unary = k;
  return tensorValue(e);
}

// The strong side's dtype wins; a weak int becomes the float next to it;
// both weak: float if either is.
Value Program::Builder::binary(Frame& f, BinaryKind k, Value l, Value r, SourceRange at) {
  bool compare = sema::isComparison(k), logical = sema::isLogical(k);
  Scalar dt;
  bool weak = false;
  if (logical) {
    dt = Scalar::Bool;
  } else {
    weak = l.t().weak && r.t().weak;
    if (l.t().weak && !r.t().weak) dt = r.t().dtype;
    else if (r.t().weak && !l.t().weak) dt = l.t().dtype;
    else if (l.t().weak && r.t().weak) dt = sema::isFloat(l.t().dtype) ? l.t().dtype : r.t().dtype;
    else if (l.t().dtype != r.t().dtype)
      fail(at, fmt::format("element types {} and {} differ", sema::name(l.t().dtype), sema::name(r.t().dtype)));
    else dt = l.t().dtype;
    if (l.t().dtype != dt) l = cast(f, l, dt, at);
    if (r.t().dtype != dt) r = cast(f, r, dt, at);
  }
  std::vector<int64_t> shape = broadcastShapes(l.t().shape, r.t().shape, at);
  Scalar out = compare || logical ? Scalar::Bool : dt;
  Expr* e = node(f, ExprKind::Binary, Type::of({out, shape, weak && !compare && !logical}), at, {l.expr, r.expr});
  e->binary = k;
  return tensorValue(e);
}

Value Program::Builder::index(Frame& f, const IndexExpr& e) {
  Value x = eval(f, *e.base);
  if (!x.type.isTensor()) fail(e.range, "only tensors can be indexed");
  bool anyGrid = false, anySlice = false;
  std::vector<const Expr*> operands = {x.expr};
  std::vector<SliceItem> items;
  std::vector<int64_t> shape, grid;
  for (size_t k = 0; k < e.items.size(); ++k) {
    const IndexItem& item = e.items[k];
    if (item.kind == IndexItem::Slice) {
      anySlice = true;
      SliceItem s;
      s.lo = item.lo ? *eval(f, *item.lo).staticInt : 0;
      s.hi = item.hi ? *eval(f, *item.hi).staticInt : x.t().shape[k];
      items.push_back(s);
      shape.push_back(s.hi - s.lo);
      continue;
    }
    Value v = eval(f, *item.index);
    if (v.t().rank() > 0) anyGrid = true;
    if (!sema::isInt(v.t().dtype)) v = cast(f, v, Scalar::I64, item.index->range);
    grid = broadcastShapes(grid, v.t().shape, item.index->range);
    SliceItem s;
    s.slice = false;
    s.index = static_cast<int>(operands.size());
    items.push_back(s);
    operands.push_back(v.expr);
  }
  if (anyGrid && anySlice) fail(e.range, "an index cannot mix slices with index tensors");
  if (anyGrid)
    return tensorValue(node(f, ExprKind::Gather, Type::of({x.t().dtype, grid}), e.range, std::move(operands)));
  Expr* out = node(f, ExprKind::Slice, Type::of({x.t().dtype, shape}), e.range, std::move(operands));
  out->items = std::move(items);
  return tensorValue(out);
}

// ------------------------------------------------------------ comprehensions

// The extent of index `var` from the first subscript that uses it directly.
std::optional<int64_t> Program::Builder::extentOf(Frame& f, const syntax::Expr& e, const std::string& var) {
  if (e.kind == syntax::ExprKind::Index) {
    const auto& ix = static_cast<const IndexExpr&>(e);
    for (size_t k = 0; k < ix.items.size(); ++k) {
      const IndexItem& item = ix.items[k];
      if (item.kind == IndexItem::Single && item.index->kind == syntax::ExprKind::Name &&
          static_cast<const NameExpr&>(*item.index).name == var)
        return eval(f, *ix.base).t().shape.at(k);  // its nodes stay unused in the arena
    }
  }
  // Pre-order, left to right, with an explicit stack (a long operator chain
  // in a comprehension's body must not recurse once per operand).
  std::vector<const syntax::Expr*> stack;
  std::vector<const syntax::Expr*> children;
  forEachChild(e, [&](const syntax::Expr& c) { children.push_back(&c); });
  stack.assign(children.rbegin(), children.rend());
  while (!stack.empty()) {
    const syntax::Expr& x = *stack.back();
    stack.pop_back();
    if (x.kind == syntax::ExprKind::Index) {
      if (auto found = extentOf(f, x, var)) return found;  // its own children are pushed there
      continue;
    }
    children.clear();
    forEachChild(x, [&](const syntax::Expr& c) { children.push_back(&c); });
    stack.insert(stack.end(), children.rbegin(), children.rend());
  }
  return std::nullopt;
}

// `body` over the grid of `names`: the index variables take leading axes
// ahead of the enclosing grid's, so values of the enclosing grid broadcast
// against them. With `reduce`, the new axes are reduced.
Value Program::Builder::comprehension(Frame& f, const std::vector<Ident>& names, const syntax::Expr& body,
                                      std::optional<sema::ReduceKind> red, SourceRange at) {
  std::vector<int64_t> extents;
  for (const Ident& n : names) {
    f.scopes.emplace_back();
    auto x = extentOf(f, body, n.name);
    f.scopes.pop_back();
    if (!x) fail(n.range, fmt::format("cannot find the range of index `{}`", n.name));
    extents.push_back(*x);
  }
  int m = static_cast<int>(names.size());
  int outer = f.gridRank;
  f.scopes.emplace_back();
  for (int k = 0; k < m; ++k) {
    std::vector<int64_t> shape(m + outer, 1);
    shape[k] = extents[k];
    Expr* iota = node(f, ExprKind::Iota, Type::of({Scalar::I64, shape, true}), names[k].range);
    iota->ints = {k};
    bind(f, names[k].name, tensorValue(iota));
  }
  f.gridRank = outer + m;
  Value v = eval(f, body);
  f.gridRank = outer;
  f.scopes.pop_back();
  std::vector<int64_t> grid = extents;
  grid.insert(grid.end(), outer, 1);
  Value t = broadcastTo(f, v, broadcastShapes(v.t().shape, grid, at), at);
  if (!red) return t;
  std::vector<int64_t> axes;
  for (int k = 0; k < m; ++k) axes.push_back(k);
  return reduce(f, *red, t, axes, false, at);
}

Value Program::Builder::reduce(Frame& f, sema::ReduceKind k, const Value& x, std::vector<int64_t> axes, bool keepdims,
                               SourceRange at) {
  std::vector<int64_t> shape;
  for (int a = 0; a < x.t().rank(); ++a) {
    bool reduced = std::find(axes.begin(), axes.end(), a) != axes.end();
    if (!reduced) shape.push_back(x.t().shape[a]);
    else if (keepdims) shape.push_back(1);
  }
  Scalar dt = k == sema::ReduceKind::IndexOfMax ? Scalar::I32 : x.t().dtype;
  Expr* e = node(f, ExprKind::Reduce, Type::of({dt, shape}), at, {x.expr});
  e->reduce = k;
  e->ints = std::move(axes);
  e->flag = keepdims;
  return tensorValue(e);
}

}  // namespace linnet::elab
