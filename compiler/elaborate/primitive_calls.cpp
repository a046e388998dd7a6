// Elaboration of primitive calls: one case per row of syntax/primitives.def,
// each giving the result type the checker proved and the casts it implies.
#include "elaborate/builder.h"

namespace linnet::elab {

using namespace syntax;
using sema::Primitive;

int Program::Builder::axisArg(Frame& f, const CallExpr& call, int rank) {
  for (const Argument& a : call.args)
    if (a.name.name == "axis") {
      int64_t k = *eval(f, *a.value).staticInt;
      return static_cast<int>(k < 0 ? k + rank : k);
    }
  fail(call.range, "missing `axis`");
}

bool Program::Builder::keepdimsArg(const CallExpr& call) {
  for (const Argument& a : call.args)
    if (a.name.name == "keepdims") return static_cast<const BoolLiteralExpr&>(*a.value).value;
  return false;
}

// `[..., K]` x `[K, N]`, or batched `[..., M, K]` x `[..., K, N]`.
Value Program::Builder::matmul(Frame& f, const Value& a, const Value& w, SourceRange at) {
  const auto& p = a.t().shape;
  const auto& q = w.t().shape;
  std::vector<int64_t> shape;
  if (q.size() == 2) {
    shape.assign(p.begin(), p.end() - 1);
  } else {
    std::vector<int64_t> batchA(p.begin(), p.end() - std::min<size_t>(2, p.size()));
    std::vector<int64_t> batchB(q.begin(), q.end() - 2);
    shape = broadcastShapes(batchA, batchB, at);
    shape.push_back(p.size() >= 2 ? p[p.size() - 2] : 1);
  }
  shape.push_back(q.back());
  return tensorValue(node(f, ExprKind::Matmul, Type::of({a.t().dtype, shape}), at, {a.expr, w.expr}));
}

Value Program::Builder::primitive(Frame& f, const CallExpr& call, Primitive p) {
  std::vector<const syntax::Expr*> pos;
  for (const Argument& a : call.args)
    if (a.name.name.empty()) pos.push_back(a.value.get());
  auto arg = [&](size_t k) { return eval(f, *pos.at(k)); };
  auto list = [&](size_t k) -> const ListExpr& { return static_cast<const ListExpr&>(*pos.at(k)); };
  SourceRange at = call.range;
  switch (sema::info(p).cls) {
    case sema::PrimitiveClass::UnaryMath: return unary(f, sema::unaryKind(p), arg(0), at);
    case sema::PrimitiveClass::BinaryMath: {
      Value x = arg(0), y = arg(1);
      return binary(f, sema::binaryKind(p), x, y, at);
    }
    case sema::PrimitiveClass::Reducer: {
      Value x = arg(0);
      int axis = axisArg(f, call, x.t().rank());
      return reduce(f, sema::reduceKind(p), x, {axis}, keepdimsArg(call), at);
    }
    case sema::PrimitiveClass::Other: break;
  }
  switch (p) {
    case Primitive::Reshape: {
      Value x = arg(0);
      return tensorValue(node(f, ExprKind::Reshape, Type::of({x.t().dtype, shapeList(f, list(1).elems), x.t().weak}),
                              at, {x.expr}));
    }
    case Primitive::Permute: {
      Value x = arg(0);
      std::vector<int64_t> perm, shape;
      for (const auto& e : list(1).elems) perm.push_back(*eval(f, *e).staticInt);
      for (int64_t k : perm) shape.push_back(x.t().shape.at(k));
      Expr* e = node(f, ExprKind::Permute, Type::of({x.t().dtype, shape}), at, {x.expr});
      e->ints = std::move(perm);
      return tensorValue(e);
    }
    case Primitive::Concat: {
      std::vector<Value> xs;
      for (size_t k = 0; k < pos.size(); ++k) xs.push_back(arg(k));
      Scalar dt = xs[0].t().dtype;
      for (const Value& x : xs)
        if (!x.t().weak) dt = x.t().dtype;
      int axis = axisArg(f, call, xs[0].t().rank());
      std::vector<int64_t> shape = xs[0].t().shape;
      shape[axis] = 0;
      std::vector<const Expr*> operands;
      for (Value& x : xs) {
        x = cast(f, x, dt, at);
        operands.push_back(x.expr);
        shape[axis] += x.t().shape[axis];
      }
      Expr* e = node(f, ExprKind::Concat, Type::of({dt, shape}), at, std::move(operands));
      e->ints = {axis};
      return tensorValue(e);
    }
    case Primitive::Iota: {
      Scalar dt = dtypeOf(f, *call.generics[0]);
      int64_t n = *arg(0).staticInt;
      Expr* e = node(f, ExprKind::Iota, Type::of({dt, {n}}), at);
      e->ints = {0};
      return tensorValue(e);
    }
    case Primitive::Fill: {
      Scalar dt = dtypeOf(f, *call.generics[0]);
      std::vector<int64_t> shape = shapeList(f, list(0).elems);
      return broadcastTo(f, cast(f, arg(1), dt, at), shape, at);
    }
    case Primitive::Cast: return cast(f, arg(0), dtypeOf(f, *call.generics[0]), at);
    case Primitive::Select: {
      Value c = arg(0), x = arg(1), y = arg(2);
      // The branches join like a binary operation's operands.
      Scalar dt;
      if (x.t().weak && !y.t().weak) dt = y.t().dtype;
      else if (y.t().weak && !x.t().weak) dt = x.t().dtype;
      else if (x.t().weak && y.t().weak) dt = sema::isFloat(x.t().dtype) ? x.t().dtype : y.t().dtype;
      else dt = x.t().dtype;
      bool weak = x.t().weak && y.t().weak;
      x = cast(f, x, dt, at);
      y = cast(f, y, dt, at);
      std::vector<int64_t> shape = broadcastShapes(broadcastShapes(c.t().shape, x.t().shape, at), y.t().shape, at);
      return tensorValue(node(f, ExprKind::Select, Type::of({dt, shape, weak}), at, {c.expr, x.expr, y.expr}));
    }
    case Primitive::Matmul: {
      Value a = arg(0), w = arg(1);
      return matmul(f, a, w, at);
    }
    case Primitive::Gather: {
      Value table = arg(0), ids = arg(1);
      std::vector<int64_t> shape = ids.t().shape;
      shape.insert(shape.end(), table.t().shape.begin() + 1, table.t().shape.end());
      return tensorValue(node(f, ExprKind::GatherRows, Type::of({table.t().dtype, shape}), at, {table.expr, ids.expr}));
    }
    case Primitive::Attention: {
      Value q = arg(0), k = arg(1), v = arg(2), scale = cast(f, arg(3), Scalar::F32, at), mask = arg(4);
      std::vector<int64_t> shape(q.t().shape.begin(), q.t().shape.end() - 1);
      shape.push_back(v.t().shape.back());
      return tensorValue(node(f, ExprKind::Attention, Type::of({q.t().dtype, shape}), at,
                              {q.expr, k.expr, v.expr, scale.expr, mask.expr}));
    }
    case Primitive::WritePoints: {
      Value dest = arg(0), x = arg(1), rows = arg(2), positions = arg(3);
      Expr* e = node(f, ExprKind::WritePoints, Type::of({dest.t().dtype, dest.t().shape}), at,
                     {dest.expr, x.expr, rows.expr, positions.expr});
      e->ints = {axisArg(f, call, dest.t().rank())};
      return tensorValue(e);
    }
    case Primitive::WriteSlice: {
      Value dest = arg(0), x = arg(1), start = arg(2);
      int axis = axisArg(f, call, dest.t().rank());
      x = cast(f, x, dest.t().dtype, at);
      Expr* e = node(f, ExprKind::WriteSlice, Type::of({dest.t().dtype, dest.t().shape}), at,
                     {dest.expr, x.expr, start.expr});
      e->ints = {axis};
      return tensorValue(e);
    }
    case Primitive::Some: {
      Value v = arg(0);
      if (v.type.isTensor()) v = finalize(v);
      Type t;
      t.kind = Type::Some;
      t.elems.push_back(v.type);
      return tensorValue(node(f, ExprKind::Some, t, at, {v.expr}));
    }
    case Primitive::UnwrapOr: {
      Value o = arg(0);
      if (o.type.kind != Type::Some) return arg(1);
      return tensorValue(node(f, ExprKind::Unwrap, o.type.elems[0], at, {o.expr}));
    }
    case Primitive::ShardSum: case Primitive::ShardMax: case Primitive::ShardShared: return arg(0);
    case Primitive::ShardConcat: {
      int64_t shards = dim(f, *call.generics[0]);
      if (shards != 1)
        fail(at, fmt::format("`shard_concat` over {} shards: every backend runs on one device, so Shards must be 1",
                             shards));
      return arg(0);
    }
    case Primitive::ShardIndex: return constantInt(f, Scalar::I64, 0, false, at);
    default: break;
  }
  fail(at, fmt::format("internal: primitive `{}` has no elaboration rule", sema::spelling(p)));
}

}  // namespace linnet::elab
