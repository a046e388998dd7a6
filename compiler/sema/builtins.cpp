// The typing rules of the primitives the standard library is written over.
// docs/language.md lists the same rules; keep the two in step.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "sema/primitives.h"

#include "sema/checker_impl.h"

namespace linnet::sema {

using namespace syntax;
using dims::Expr;
using dims::Rel;
using dims::Relation;

namespace {

struct Args {
  std::vector<const syntax::Expr*> positional;
  std::map<std::string, const Argument*> named;
};

}  // namespace

// One primitive call being checked: its arguments and the helpers every
// typing rule shares. The rules follow, one function per primitive or class.
struct Checker::Impl::PrimitiveCall {
  Checker::Impl& c;
  Ctx& ctx;
  const CallExpr& call;
  Primitive prim;
  std::string name;
  Args a;

  PrimitiveCall(Checker::Impl& c, Ctx& ctx, const CallExpr& call, Primitive p)
      : c(c), ctx(ctx), call(call), prim(p), name(spelling(p)) {}

  Value fail(SourceRange at, std::string message) {
    c.error(ctx, at, std::move(message));
    return Value::error();
  }
  // Collects the arguments; false after reporting one given twice.
  bool collect() {
    for (const Argument& arg : call.args) {
      if (arg.name.name.empty()) {
        a.positional.push_back(arg.value.get());
      } else if (!a.named.emplace(arg.name.name, &arg).second) {
        c.error(ctx, arg.name.range, fmt::format("`{}` of `{}` is given twice", arg.name.name, name));
        return false;
      }
    }
    return true;
  }
  // Arity, generic count and allowed named arguments.
  bool shape(size_t positional, size_t generics, std::set<std::string> names) {
    if (a.positional.size() != positional) {
      c.error(ctx, call.range, fmt::format("`{}` takes {} positional argument{}, but {} were given",
                                           name, positional, positional == 1 ? "" : "s",
                                           a.positional.size()));
      return false;
    }
    if (call.generics.size() != generics) {
      c.error(ctx, call.range, fmt::format("`{}` takes {} generic argument{}, but {} were given",
                                           name, generics, generics == 1 ? "" : "s",
                                           call.generics.size()));
      return false;
    }
    for (const auto& [n, arg] : a.named)
      if (!names.count(n)) {
        c.error(ctx, arg->name.range, fmt::format("`{}` has no parameter named `{}`", name, n));
        return false;
      }
    return true;
  }
  bool tensorArg(const syntax::Expr* e, Value& out) {
    out = c.checkExpr(ctx, *e);
    if (out.type.isError()) return false;
    if (out.type.kind != Type::Tensor) {
      c.error(ctx, e->range, fmt::format("`{}` needs a tensor here, not `{}`", name, out.type.str()));
      return false;
    }
    return true;
  }
  bool intLiteral(const syntax::Expr* e, int64_t& out) {
    const syntax::Expr* x = e;
    bool negative = false;
    if (x->kind == ExprKind::Unary && static_cast<const UnaryExpr*>(x)->op == UnaryOp::Neg) {
      negative = true;
      x = static_cast<const UnaryExpr*>(x)->operand.get();
    }
    if (x->kind != ExprKind::IntLiteral) {
      c.error(ctx, e->range, "expected an integer literal");
      return false;
    }
    out = static_cast<const IntLiteralExpr*>(x)->value * (negative ? -1 : 1);
    return true;
  }
  // `axis = k`, negative from the end; a tensor with a pack takes only negative axes
  // that fall after it.
  bool axisOf(const Type& t, int64_t& axis) {
    auto it = a.named.find("axis");
    if (it == a.named.end()) {
      c.error(ctx, call.range, fmt::format("`{}` needs `axis = ...`", name));
      return false;
    }
    if (!intLiteral(it->second->value.get(), axis)) return false;
    int64_t rank = static_cast<int64_t>(t.shape.size());
    int64_t k = axis < 0 ? axis + rank : axis;
    bool packBefore = false;
    size_t packIndex = 0;
    for (size_t i = 0; i < t.shape.size(); ++i)
      if (t.shape[i].isPack()) packBefore = true, packIndex = i;
    if (k < 0 || k >= rank || (packBefore && (axis >= 0 || k <= static_cast<int64_t>(packIndex)))) {
      c.error(ctx, it->second->value->range,
              fmt::format("axis {} is out of range for `{}`{}", axis, t.str(),
                          packBefore ? " (with a dimension pack, count axes from the end)" : ""));
      return false;
    }
    axis = k;
    return true;
  }
  std::optional<bool> keepdims() {
    auto it = a.named.find("keepdims");
    if (it == a.named.end()) return false;
    const syntax::Expr* v = it->second->value.get();
    if (v->kind != ExprKind::BoolLiteral) {
      c.error(ctx, v->range, "`keepdims` must be `true` or `false`");
      return std::nullopt;
    }
    return static_cast<const BoolLiteralExpr*>(v)->value;
  }
  std::optional<DType> dtypeGeneric(size_t i) { return c.evalDType(ctx, *call.generics[i]); }
  const ListExpr* listArg(const syntax::Expr* e) {
    if (e->kind != ExprKind::List) {
      c.error(ctx, e->range, fmt::format("`{}` needs a list such as `[B, S * H]` here", name));
      return nullptr;
    }
    return static_cast<const ListExpr*>(e);
  }
  // Whether a math primitive or reduction accepts an element type.
  bool accepts(const DType& d) const {
    switch (info(prim).operands) {
      case Operands::Floats: return d.floatLike();
      case Operands::Numbers: return !d.boolLike();
      case Operands::Bools: return d.boolLike();
    }
    return false;
  }
  const char* operandsWord() const {
    switch (info(prim).operands) {
      case Operands::Floats: return "floats";
      case Operands::Numbers: return "numbers";
      case Operands::Bools: return "bools";
    }
    return "";
  }

  Value reshape();
  Value permute();
  Value concat();
  Value iota();
  Value fill();
  Value cast();
  Value select();
  Value unaryMath();
  Value binaryMath();
  Value reduction();
  Value matmul();
  Value gather();
  Value writeSlice();
  Value writePoints();
  Value attention();
  Value some();
  Value unwrapOr();
  Value sameType();
  Value shardConcat();
  Value shardIndex();
};

Value Checker::Impl::checkPrimitive(Ctx& ctx, const CallExpr& call, Primitive p) {
  PrimitiveCall r(*this, ctx, call, p);
  if (!r.collect()) return Value::error();
  switch (info(p).cls) {
    case PrimitiveClass::UnaryMath: return r.unaryMath();
    case PrimitiveClass::BinaryMath: return r.binaryMath();
    case PrimitiveClass::Reducer: return r.reduction();
    case PrimitiveClass::Other: break;
  }
  switch (p) {
    case Primitive::Reshape: return r.reshape();
    case Primitive::Permute: return r.permute();
    case Primitive::Concat: return r.concat();
    case Primitive::Iota: return r.iota();
    case Primitive::Fill: return r.fill();
    case Primitive::Cast: return r.cast();
    case Primitive::Select: return r.select();
    case Primitive::Matmul: return r.matmul();
    case Primitive::Gather: return r.gather();
    case Primitive::WriteSlice: return r.writeSlice();
    case Primitive::WritePoints: return r.writePoints();
    case Primitive::Attention: return r.attention();
    case Primitive::Some: return r.some();
    case Primitive::UnwrapOr: return r.unwrapOr();
    case Primitive::ShardSum: case Primitive::ShardMax: case Primitive::ShardShared:
      return r.sameType();
    case Primitive::ShardConcat: return r.shardConcat();
    case Primitive::ShardIndex: return r.shardIndex();
    default: break;
  }
  return r.fail(call.range, fmt::format("internal: primitive `{}` has no typing rule", spelling(p)));
}

Value Checker::Impl::PrimitiveCall::reshape() {
  Value out;
  if (!shape(2, 0, {})) return Value::error();
  Value x;
  if (!tensorArg(a.positional[0], x)) return Value::error();
  const ListExpr* list = listArg(a.positional[1]);
  if (!list) return Value::error();
  size_t before = c.diags.errorCount();
  Shape target = c.evalShapeList(ctx, list->elems, list->range);
  if (c.diags.errorCount() != before) return Value::error();
  Relation same{elementCount(x.type.shape), Rel::Eq, elementCount(target)};
  auto why = [&] {
    return fmt::format("reshape from `{}` to `[{}]` must keep the element count", x.type.str(), str(target));
  };
  if (!c.require(ctx, same, call.range, why)) {
    c.unproven(ctx, call.range, same, why());
    return Value::error();
  }
  out.type = Type::tensor(target, x.type.dtype);
  return out;
}

Value Checker::Impl::PrimitiveCall::permute() {
  Value out;
  if (!shape(2, 0, {})) return Value::error();
  Value x;
  if (!tensorArg(a.positional[0], x)) return Value::error();
  const ListExpr* list = listArg(a.positional[1]);
  if (!list) return Value::error();
  if (hasPack(x.type.shape))
    return fail(call.range, fmt::format("cannot permute `{}`: its shape has a dimension pack",
                                        x.type.str()));
  size_t rank = x.type.shape.size();
  if (list->elems.size() != rank)
    return fail(list->range, fmt::format("permutation of {} axes for `{}` of rank {}",
                                         list->elems.size(), x.type.str(), rank));
  std::vector<bool> seen(rank, false);
  Shape result;
  for (const auto& e : list->elems) {
    int64_t k;
    if (!intLiteral(e.get(), k)) return Value::error();
    if (k < 0 || k >= static_cast<int64_t>(rank) || seen[k])
      return fail(e->range, fmt::format("`[...]` must be a permutation of 0..{}", rank - 1));
    seen[k] = true;
    result.push_back(x.type.shape[k]);
  }
  out.type = Type::tensor(result, x.type.dtype);
  return out;
}

Value Checker::Impl::PrimitiveCall::concat() {
  Value out;
  if (a.positional.size() < 2)
    return fail(call.range, "`concat` takes two or more tensors and `axis = ...`");
  for (const auto& [n, arg] : a.named)
    if (n != "axis") return fail(arg->name.range, fmt::format("`concat` has no parameter named `{}`", n));
  std::vector<Value> xs(a.positional.size());
  for (size_t i = 0; i < xs.size(); ++i)
    if (!tensorArg(a.positional[i], xs[i])) return Value::error();
  int64_t axis;
  if (!axisOf(xs[0].type, axis)) return Value::error();
  Type result = xs[0].type;
  for (size_t i = 1; i < xs.size(); ++i) {
    const Type& t = xs[i].type;
    auto d = c.unifyDTypes(result.dtype, t.dtype);
    if (!d || (!result.dtype.isWeak() && !t.dtype.isWeak() && !(result.dtype == t.dtype)))
      return fail(a.positional[i]->range,
                  fmt::format("`concat` of `{}` and `{}`: element types differ",
                              result.dtype.str(), t.dtype.str()));
    if (t.shape.size() != result.shape.size())
      return fail(a.positional[i]->range,
                  fmt::format("`concat` of `{}` and `{}`: ranks differ", xs[0].type.str(),
                              t.str()));
    for (size_t k = 0; k < t.shape.size(); ++k) {
      const Dim& p = result.shape[k];
      const Dim& q = t.shape[k];
      if (p.isPack() || q.isPack()) {
        if (p.pack != q.pack)
          return fail(a.positional[i]->range, "`concat` operands have different packs");
        continue;
      }
      if (static_cast<int64_t>(k) == axis) {
        result.shape[k] = Dim::of(ctx.facts.simplify(p.expr + q.expr));
      } else if (auto why = [&] {
                   return fmt::format("`concat` along axis {} needs every other dimension equal; "
                                      "dimension {} differs",
                                      axis, k);
                 };
                 !c.requireEqual(ctx, p.expr, q.expr, a.positional[i]->range, why)) {
        c.unproven(ctx, a.positional[i]->range, {p.expr, Rel::Eq, q.expr}, why());
        return Value::error();
      }
    }
  }
  out.type = result;
  return out;
}

Value Checker::Impl::PrimitiveCall::iota() {
  Value out;
  if (!shape(1, 1, {})) return Value::error();
  auto d = dtypeGeneric(0);
  Value n = c.checkExpr(ctx, *a.positional[0]);
  if (!d || n.type.isError()) return Value::error();
  if (!n.staticInt) return fail(a.positional[0]->range, "`iota`'s length must be a static dimension");
  if (!c.require(ctx, {*n.staticInt, Rel::Ge, Expr::constant(0)}, a.positional[0]->range,
                 [] { return std::string("a length must not be negative"); })) {
    c.unproven(ctx, a.positional[0]->range, {*n.staticInt, Rel::Ge, Expr::constant(0)},
             "a length must not be negative");
    return Value::error();
  }
  if (d->boolLike()) return fail(call.generics[0]->range, "`iota` makes numbers, not bools");
  out.type = Type::tensor({Dim::of(*n.staticInt)}, *d);
  return out;
}

Value Checker::Impl::PrimitiveCall::fill() {
  Value out;
  if (!shape(2, 1, {})) return Value::error();
  auto d = dtypeGeneric(0);
  const ListExpr* list = listArg(a.positional[0]);
  Value v;
  if (!d || !list || !tensorArg(a.positional[1], v)) return Value::error();
  Shape s = c.evalShapeList(ctx, list->elems, list->range);
  if (!v.type.isScalar() || !c.unifyDTypes(v.type.dtype, *d))
    return fail(a.positional[1]->range, fmt::format("`fill<{}>` needs a `{}` scalar, not `{}`",
                                                    d->str(), d->str(), v.type.str()));
  out.type = Type::tensor(s, *d);
  return out;
}

Value Checker::Impl::PrimitiveCall::cast() {
  Value out;
  if (!shape(1, 1, {})) return Value::error();
  auto d = dtypeGeneric(0);
  Value x;
  if (!d || !tensorArg(a.positional[0], x)) return Value::error();
  out.type = Type::tensor(x.type.shape, *d);
  return out;
}

Value Checker::Impl::PrimitiveCall::select() {
  Value out;
  if (!shape(3, 0, {})) return Value::error();
  Value cond, x, y;
  if (!tensorArg(a.positional[0], cond) || !tensorArg(a.positional[1], x) ||
      !tensorArg(a.positional[2], y))
    return Value::error();
  if (!cond.type.dtype.boolLike())
    return fail(a.positional[0]->range, fmt::format("`select`'s condition must be `bool`, not `{}`",
                                                    cond.type.dtype.str()));
  std::string why;
  auto need = [&] {
    return fmt::format("`select` broadcasts `{}`, `{}` and `{}`", cond.type.str(), x.type.str(), y.type.str());
  };
  auto s1 = c.broadcast(ctx, x.type.shape, y.type.shape, why, call.range, need);
  auto s2 = s1 ? c.broadcast(ctx, cond.type.shape, *s1, why, call.range, need) : std::nullopt;
  if (!s2)
    return fail(call.range, fmt::format("`select` cannot broadcast its operands: {}", why));
  auto d = c.unifyDTypes(x.type.dtype, y.type.dtype);
  if (!d)
    return fail(call.range, fmt::format("`select` of `{}` and `{}`: element types differ",
                                        x.type.dtype.str(), y.type.dtype.str()));
  out.type = Type::tensor(*s2, *d);
  return out;
}

Value Checker::Impl::PrimitiveCall::unaryMath() {
  Value out;
  if (!shape(1, 0, {})) return Value::error();
  Value x;
  if (!tensorArg(a.positional[0], x)) return Value::error();
  if (!accepts(x.type.dtype))
    return fail(a.positional[0]->range,
                fmt::format("`{}` needs {}, not `{}`", name, operandsWord(), x.type.dtype.str()));
  out.type = x.type;
  // A literal integer under a float function is a float.
  if (out.type.dtype.kind == DType::WeakInt && info(prim).operands == Operands::Floats)
    out.type.dtype = DType::weakFloat();
  return out;
}

Value Checker::Impl::PrimitiveCall::binaryMath() {
  Value out;
  if (!shape(2, 0, {})) return Value::error();
  Value x, y;
  if (!tensorArg(a.positional[0], x) || !tensorArg(a.positional[1], y)) return Value::error();
  std::string why;
  auto s = c.broadcast(ctx, x.type.shape, y.type.shape, why, call.range, [&] {
    return fmt::format("`{}` broadcasts `{}` with `{}`", name, x.type.str(), y.type.str());
  });
  if (!s) return fail(call.range, fmt::format("`{}` cannot broadcast its operands: {}", name, why));
  auto d = c.unifyDTypes(x.type.dtype, y.type.dtype);
  if (!d)
    return fail(call.range, fmt::format("`{}` of `{}` and `{}`: element types differ", name,
                                        x.type.dtype.str(), y.type.dtype.str()));
  if (!accepts(*d))
    return fail(call.range, fmt::format("`{}` needs {}, not `{}`", name, operandsWord(), d->str()));
  out.type = Type::tensor(*s, *d);
  return out;
}

Value Checker::Impl::PrimitiveCall::reduction() {
  Value out;
  if (!shape(1, 0, {"axis", "keepdims"})) return Value::error();
  Value x;
  if (!tensorArg(a.positional[0], x)) return Value::error();
  int64_t axis;
  if (!axisOf(x.type, axis)) return Value::error();
  auto keep = keepdims();
  if (!keep) return Value::error();
  if (!accepts(x.type.dtype))
    return fail(a.positional[0]->range,
                fmt::format("`{}` needs {}, not `{}`", name, operandsWord(), x.type.dtype.str()));
  Shape s = x.type.shape;
  if (*keep) s[axis] = Dim::of(Expr::constant(1));
  else s.erase(s.begin() + axis);
  DType d = x.type.dtype;
  switch (info(prim).result) {
    case ReduceResult::Same: break;
    case ReduceResult::I32: d = DType::concrete(Scalar::I32); break;
    case ReduceResult::Bool: d = DType::concrete(Scalar::Bool); break;
  }
  out.type = Type::tensor(s, d);
  return out;
}

Value Checker::Impl::PrimitiveCall::matmul() {
  Value out;
  if (!shape(2, 0, {})) return Value::error();
  Value x, y;
  if (!tensorArg(a.positional[0], x) || !tensorArg(a.positional[1], y)) return Value::error();
  const Shape& p = x.type.shape;
  const Shape& q = y.type.shape;
  if (!c.unifyDTypes(x.type.dtype, y.type.dtype) || !(x.type.dtype == y.type.dtype))
    return fail(call.range, fmt::format("`matmul` of `{}` and `{}`: element types differ",
                                        x.type.dtype.str(), y.type.dtype.str()));
  if (!x.type.dtype.floatLike())
    return fail(call.range, fmt::format("`matmul` needs floats, not `{}`", x.type.dtype.str()));
  if (p.empty() || p.back().isPack() || q.size() < 2 || hasPack(Shape(q.end() - 2, q.end())))
    return fail(call.range, fmt::format("`matmul` needs `[..., K]` times `[..., K, N]`, not "
                                        "`{}` and `{}`",
                                        x.type.str(), y.type.str()));
  const Expr& k1 = p.back().expr;
  const Expr& k2 = q[q.size() - 2].expr;
  auto contracts = [&] {
    return fmt::format("`matmul` of `{}` and `{}` contracts the last dimension of the first "
                       "with the second-to-last of the second",
                       x.type.str(), y.type.str());
  };
  if (!c.requireEqual(ctx, k1, k2, call.range, contracts)) {
    c.unproven(ctx, call.range, {k1, Rel::Eq, k2}, contracts());
    return Value::error();
  }
  Shape result;
  if (q.size() == 2) {
    result.assign(p.begin(), p.end() - 1);
  } else {
    if (p.size() < 2 || p[p.size() - 2].isPack())
      return fail(call.range, fmt::format("batched `matmul` needs `[..., M, K]`, not `{}`",
                                          x.type.str()));
    std::string why;
    auto batch = c.broadcast(ctx, Shape(p.begin(), p.end() - 2), Shape(q.begin(), q.end() - 2), why, call.range, [&] {
      return fmt::format("`matmul` of `{}` and `{}` broadcasts their batch dimensions", x.type.str(), y.type.str());
    });
    if (!batch)
      return fail(call.range, fmt::format("`matmul` batch dimensions of `{}` and `{}` do not "
                                          "broadcast: {}",
                                          x.type.str(), y.type.str(), why));
    result = *batch;
    result.push_back(p[p.size() - 2]);
  }
  result.push_back(q.back());
  out.type = Type::tensor(result, x.type.dtype);
  return out;
}

Value Checker::Impl::PrimitiveCall::gather() {
  Value out;
  if (!shape(2, 0, {})) return Value::error();
  Value table, idx;
  if (!tensorArg(a.positional[0], table) || !tensorArg(a.positional[1], idx)) return Value::error();
  if (table.type.shape.empty() || table.type.shape[0].isPack())
    return fail(a.positional[0]->range, fmt::format("`gather` needs a table `[N, ...]`, not `{}`",
                                                    table.type.str()));
  if (!idx.type.dtype.intLike() || idx.type.dtype.isWeak())
    return fail(a.positional[1]->range, fmt::format("`gather` indices must be i32 or i64, not "
                                                    "`{}`",
                                                    idx.type.dtype.str()));
  Shape result = idx.type.shape;
  result.insert(result.end(), table.type.shape.begin() + 1, table.type.shape.end());
  out.type = Type::tensor(result, table.type.dtype);
  return out;
}

// `write_slice(dest, x, start, axis = a)`: `dest` with positions `start ..
// start + n` along `a` taken from `x` (n = x's extent there), every other
// dimension of `x` equal to `dest`'s; `start` a scalar, or one per row
// (axis 0) when `a` is not 0. Positions outside `dest` are dropped, so no
// `start` is out of range.
Value Checker::Impl::PrimitiveCall::writeSlice() {
  Value out;
  if (!shape(3, 0, {"axis"})) return Value::error();
  Value dest, x, start;
  if (!tensorArg(a.positional[0], dest) || !tensorArg(a.positional[1], x) || !tensorArg(a.positional[2], start))
    return Value::error();
  int64_t axis;
  if (!axisOf(dest.type, axis)) return Value::error();
  if (hasPack(dest.type.shape) || hasPack(x.type.shape))
    return fail(call.range, "`write_slice` operands cannot have dimension packs");
  if (x.type.shape.size() != dest.type.shape.size())
    return fail(a.positional[1]->range, fmt::format("`write_slice` of `{}` into `{}`: ranks differ", x.type.str(),
                                                    dest.type.str()));
  if (!(x.type.dtype == dest.type.dtype) && !x.type.dtype.isWeak())
    return fail(a.positional[1]->range, fmt::format("`write_slice` of `{}` into `{}`: element types differ",
                                                    x.type.dtype.str(), dest.type.dtype.str()));
  int64_t rank = static_cast<int64_t>(dest.type.shape.size());
  int64_t written = axis < 0 ? axis + rank : axis;
  // One start for every row, or row r's own at start[r] (rows: axis 0).
  bool perRow = start.type.shape.size() == 1 && written > 0;
  if (!start.type.dtype.intLike() || (!start.type.isScalar() && !perRow))
    return fail(a.positional[2]->range,
                fmt::format("`write_slice`'s start must be an integer scalar, or one integer per row of `{}` "
                            "(`Tensor[n; i32]`) when the axis is not 0; not `{}`",
                            dest.type.str(), start.type.str()));
  const char* perRowWhy = "`write_slice` with a start per row needs one start for each row of the destination";
  if (perRow && !c.requireEqual(ctx, start.type.shape[0].expr, dest.type.shape[0].expr, a.positional[2]->range,
                                [&] { return perRowWhy; })) {
    c.unproven(ctx, a.positional[2]->range, {start.type.shape[0].expr, Rel::Eq, dest.type.shape[0].expr}, perRowWhy);
    return Value::error();
  }
  for (int64_t k = 0; k < rank; ++k) {
    if (k == written) continue;
    const Expr& p = dest.type.shape[k].expr;
    const Expr& q = x.type.shape[k].expr;
    auto why = [&] {
      return fmt::format("`write_slice` along axis {} needs every other dimension equal; dimension {} differs",
                         axis, k);
    };
    if (!c.requireEqual(ctx, p, q, a.positional[1]->range, why)) {
      c.unproven(ctx, a.positional[1]->range, {p, Rel::Eq, q}, why());
      return Value::error();
    }
  }
  out.type = dest.type;
  return out;
}

// `write_points(dest, x, rows, positions, axis = a)`: point p of x (its
// position p along `a`; x has one row) into row rows[p] of dest at position
// positions[p] along `a`, in order, so the last of several points at one
// place wins; points outside dest are dropped.
Value Checker::Impl::PrimitiveCall::writePoints() {
  Value out;
  if (!shape(4, 0, {"axis"})) return Value::error();
  Value dest, x, rows, positions;
  if (!tensorArg(a.positional[0], dest) || !tensorArg(a.positional[1], x) || !tensorArg(a.positional[2], rows) ||
      !tensorArg(a.positional[3], positions))
    return Value::error();
  int64_t axis;
  if (!axisOf(dest.type, axis)) return Value::error();
  if (hasPack(dest.type.shape) || hasPack(x.type.shape) || hasPack(rows.type.shape) || hasPack(positions.type.shape))
    return fail(call.range, "`write_points` operands cannot have dimension packs");
  int64_t rank = static_cast<int64_t>(dest.type.shape.size());
  int64_t along = axis < 0 ? axis + rank : axis;
  if (along < 1 || static_cast<int64_t>(x.type.shape.size()) != rank)
    return fail(call.range, fmt::format("`write_points` needs `x` of the rank of `dest` (`{}`) and an axis other than "
                                        "0 (the rows), not `{}` along axis {}",
                                        dest.type.str(), x.type.str(), axis));
  if (!(x.type.dtype == dest.type.dtype))
    return fail(a.positional[1]->range, fmt::format("`write_points` of `{}` into `{}`: element types differ",
                                                    x.type.dtype.str(), dest.type.dtype.str()));
  auto same = [&](const Expr& p, const Expr& q, const std::string& what) {
    auto why = [&] { return fmt::format("`write_points` needs {}", what); };
    if (c.requireEqual(ctx, p, q, call.range, why)) return true;
    c.unproven(ctx, call.range, {p, Rel::Eq, q}, why());
    return false;
  };
  if (!same(x.type.shape[0].expr, Expr::constant(1), "`x` of one row (its points run along the axis)"))
    return Value::error();
  for (int64_t k = 1; k < rank; ++k)
    if (k != along && !same(x.type.shape[k].expr, dest.type.shape[k].expr,
                            fmt::format("`x` and `dest` to agree on dimension {}", k)))
      return Value::error();
  for (const Value* v : {&rows, &positions})
    if (v->type.shape.size() != 1 || !v->type.dtype.intLike() ||
        !same(v->type.shape[0].expr, x.type.shape[along].expr, "one row and one position per point"))
      return v->type.shape.size() == 1 && v->type.dtype.intLike()
                 ? Value::error()
                 : fail(call.range, fmt::format("`write_points`' rows and positions must be `Tensor[P; i32]`, not `{}`",
                                                v->type.str()));
  out.type = dest.type;
  return out;
}

// `attention(q, k, v, scale, mask)`: q `[..L, G, Q, D; T]` (G query heads
// per key/value head), k `[..L, K, D; T]`, v `[..L, K, E; T]`, an f32
// scale, a bool mask that broadcasts to `[..L, G, Q, K]`; gives `[..L, G,
// Q, E; T]`. Its arithmetic is defined op by op in docs/language.md.
Value Checker::Impl::PrimitiveCall::attention() {
  Value out;
  if (!shape(5, 0, {})) return Value::error();
  Value q, k, v, scale, mask;
  for (auto [i, into] : {std::pair<size_t, Value*>{0, &q}, {1, &k}, {2, &v}, {3, &scale}, {4, &mask}})
    if (!tensorArg(a.positional[i], *into)) return Value::error();
  if (hasPack(q.type.shape) || hasPack(k.type.shape) || hasPack(v.type.shape) || hasPack(mask.type.shape))
    return fail(call.range, "`attention` operands cannot have dimension packs");
  const Shape &qs = q.type.shape, &ks = k.type.shape, &vs = v.type.shape;
  if (ks.size() < 2 || qs.size() != ks.size() + 1 || vs.size() != ks.size())
    return fail(call.range, fmt::format("`attention` needs q `[..L, G, Q, D]`, k `[..L, K, D]` and v `[..L, K, E]`, "
                                        "not `{}`, `{}` and `{}`",
                                        q.type.str(), k.type.str(), v.type.str()));
  if (!q.type.dtype.floatLike() || !(q.type.dtype == k.type.dtype) || !(q.type.dtype == v.type.dtype))
    return fail(call.range, fmt::format("`attention` needs q, k and v of one float type, not `{}`, `{}` and `{}`",
                                        q.type.dtype.str(), k.type.dtype.str(), v.type.dtype.str()));
  if (!scale.type.isScalar() || !scale.type.dtype.floatLike())
    return fail(a.positional[3]->range, fmt::format("`attention`'s scale must be a float scalar, not `{}`",
                                                    scale.type.str()));
  if (!mask.type.dtype.boolLike())
    return fail(a.positional[4]->range, fmt::format("`attention`'s mask must be bool, not `{}`", mask.type.str()));
  size_t lead = ks.size() - 2;
  auto same = [&](const Dim& x, const Dim& y, const std::string& what) {
    auto why = [&] { return fmt::format("`attention` needs {}", what); };
    if (c.requireEqual(ctx, x.expr, y.expr, call.range, why)) return true;
    c.unproven(ctx, call.range, {x.expr, Rel::Eq, y.expr}, why());
    return false;
  };
  for (size_t i = 0; i < lead; ++i)
    if (!same(qs[i], ks[i], fmt::format("q and k to agree on leading dimension {}", i)) ||
        !same(vs[i], ks[i], fmt::format("v and k to agree on leading dimension {}", i)))
      return Value::error();
  if (!same(qs.back(), ks.back(), "q and k of one head dimension") ||
      !same(vs[lead], ks[lead], "k and v of one length"))
    return Value::error();
  Shape scores(qs.begin(), qs.end() - 1);
  scores.push_back(ks[lead]);
  std::string why;
  auto masked = c.broadcast(ctx, mask.type.shape, scores, why, a.positional[4]->range, [&] {
    return fmt::format("`attention`'s mask `{}` broadcasts to the scores `[{}]`", mask.type.str(), str(scores));
  });
  if (!masked || masked->size() != scores.size())
    return fail(a.positional[4]->range, fmt::format("`attention`'s mask `{}` must broadcast to the scores `[{}]`: {}",
                                                    mask.type.str(), str(scores), why));
  for (size_t i = 0; i < scores.size(); ++i)
    if (!same((*masked)[i], scores[i], "a mask that broadcasts to the scores, not past them")) return Value::error();
  Shape result(qs.begin(), qs.end() - 1);
  result.push_back(vs.back());
  out.type = Type::tensor(result, q.type.dtype);
  return out;
}

Value Checker::Impl::PrimitiveCall::some() {
  Value out;
  if (!shape(1, 0, {})) return Value::error();
  Value x = c.checkExpr(ctx, *a.positional[0]);
  if (x.type.isError()) return Value::error();
  out.type.kind = Type::Option;
  out.type.elems.push_back(c.finalizeWeak(x.type));
  return out;
}

Value Checker::Impl::PrimitiveCall::unwrapOr() {
  Value out;
  if (!shape(2, 0, {})) return Value::error();
  Value o = c.checkExpr(ctx, *a.positional[0]);
  Value d = c.checkExpr(ctx, *a.positional[1]);
  if (o.type.isError() || d.type.isError()) return Value::error();
  if (o.type.kind == Type::None) {
    out.type = c.finalizeWeak(d.type);
    return out;
  }
  if (o.type.kind != Type::Option)
    return fail(a.positional[0]->range, fmt::format("`unwrap_or` needs an Option, not `{}`",
                                                    o.type.str()));
  std::string why = c.mismatch(ctx, d.type, o.type.elems[0], a.positional[1]->range, [&] {
    return fmt::format("the default of `unwrap_or` must be `{}`", o.type.elems[0].str());
  });
  if (!why.empty())
    return fail(a.positional[1]->range, fmt::format("the default must be `{}`, not `{}`: {}",
                                                    o.type.elems[0].str(), d.type.str(), why));
  out.type = o.type.elems[0];
  return out;
}

Value Checker::Impl::PrimitiveCall::sameType() {
  Value out;
  if (!shape(1, 0, {})) return Value::error();
  Value x;
  if (!tensorArg(a.positional[0], x)) return Value::error();
  out.type = x.type;
  return out;
}

Value Checker::Impl::PrimitiveCall::shardConcat() {
  Value out;
  if (!shape(1, 1, {"axis"})) return Value::error();
  auto shards = c.evalDim(ctx, *call.generics[0]);
  Value x;
  if (!shards || !tensorArg(a.positional[0], x)) return Value::error();
  int64_t axis;
  if (!axisOf(x.type, axis)) return Value::error();
  out.type = x.type;
  out.type.shape[axis] = Dim::of(x.type.shape[axis].expr * *shards);
  return out;
}

Value Checker::Impl::PrimitiveCall::shardIndex() {
  Value out;
  if (!shape(0, 0, {})) return Value::error();
  out.type = Type::scalar(DType::concrete(Scalar::I64));
  return out;
}

}  // namespace linnet::sema
