// MLIRGen's expressions: each elaborated expression kind becomes one
// `linnet` op (or a few, for gathers of rows), with its source location.
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "ir/mlirgen_impl.h"

namespace linnet::ir {

using elab::ExprKind;
using BinaryOp_ = ::linnet::ir::BinaryOp;
using ::linnet::ir::BinaryKind;
using ::linnet::ir::ReduceKind;
using ::linnet::ir::ReduceKindAttr;
using ::linnet::ir::UnaryKind;

namespace {

// sema's kinds onto the dialect's, case by case: a kind the dialect lacks
// (ir/LinnetEnums.td) fails to compile here.
UnaryKind toIR(sema::UnaryKind k) {
  switch (k) {
#define UNARY_OP(Name, Spelling) \
  case sema::UnaryKind::Name:    \
    return UnaryKind::Name;
#include "syntax/operators.def"
#define UNARY_MATH(Name, spelling, Operands) \
  case sema::UnaryKind::Name:                \
    return UnaryKind::Name;
#include "syntax/primitives.def"
  }
  return {};
}

BinaryKind toIR(sema::BinaryKind k) {
  switch (k) {
#define BINARY_OP(Name, Spelling, Precedence) \
  case sema::BinaryKind::Name:                \
    return BinaryKind::Name;
#include "syntax/operators.def"
#define BINARY_MATH(Name, spelling, Operands) \
  case sema::BinaryKind::Name:                \
    return BinaryKind::Name;
#include "syntax/primitives.def"
  }
  return {};
}

ReduceKind toIR(sema::ReduceKind k) {
  switch (k) {
#define REDUCER(Name, spelling, Call, Binder, Operands, Result) \
  case sema::ReduceKind::Name:                          \
    return ReduceKind::Name;
#include "syntax/primitives.def"
  }
  return {};
}

}  // namespace

mlir::RankedTensorType MLIRGen::Impl::tensorType(Scalar s, const std::vector<int64_t>& shape) {
  return mlir::RankedTensorType::get(shape, elem(s));
}
mlir::RankedTensorType MLIRGen::Impl::tensorType(const elab::TensorType& t) { return tensorType(t.dtype, t.shape); }

mlir::Value MLIRGen::Impl::constant(const elab::Expr& e) {
  auto type = tensorType(e.type.tensor);
  Scalar dt = e.type.tensor.dtype;
  mlir::Attribute a = sema::isFloat(dt) ? mlir::Attribute(b.getFloatAttr(elem(dt), e.number))
                                        : mlir::Attribute(b.getIntegerAttr(elem(dt), e.integer));
  return ConstantOp::create(b, loc, type, mlir::DenseElementsAttr::get(type, a));
}

mlir::Value MLIRGen::Impl::iota(Scalar dt, const std::vector<int64_t>& shape, int axis) {
  return IotaOp::create(b, loc, tensorType(dt, shape), b.getI64IntegerAttr(axis));
}

// Row ids over the leading axes, an iota for each trailing axis of the table.
mlir::Value MLIRGen::Impl::gatherRows(Frame& f, const elab::Expr& e) {
  const elab::Expr& table = *e.operand(0);
  const elab::Expr& ids = *e.operand(1);
  mlir::Value t = eval(f, table).t, i = eval(f, ids).t;
  loc = locOf(e.range);
  const auto& shape = e.type.tensor.shape;
  int r = static_cast<int>(shape.size());
  std::vector<int64_t> idShape = ids.type.tensor.shape;
  size_t trailing = table.type.tensor.shape.size() - 1;
  idShape.insert(idShape.end(), trailing, 1);
  std::vector<mlir::Value> indices = {ReshapeOp::create(b, loc, tensorType(ids.type.tensor.dtype, idShape), i)};
  for (size_t k = 1; k < table.type.tensor.shape.size(); ++k) {
    std::vector<int64_t> s(r, 1);
    int axis = static_cast<int>(ids.type.tensor.shape.size() + k - 1);
    s[axis] = table.type.tensor.shape[k];
    indices.push_back(iota(Scalar::I64, s, axis));
  }
  return GatherOp::create(b, loc, tensorType(e.type.tensor), t, indices);
}

// A table [V, ..] of zeros with rows [ids.., ..] added at their ids, one
// after another: an scf.for over the ids whose body adds one row into the
// carried table in place (N x inner additions; a row lookup's cotangent).
mlir::Value MLIRGen::Impl::scatterRows(Frame& f, const elab::Expr& e) {
  const elab::Expr& ids = *e.operand(0);
  mlir::Value i = eval(f, ids).t, rows = eval(f, *e.operand(1)).t;
  loc = locOf(e.range);
  const std::vector<int64_t>& table = e.type.tensor.shape;
  const Scalar dt = e.type.tensor.dtype, it = ids.type.tensor.dtype;
  int64_t n = 1, inner = 1;
  for (int64_t d : ids.type.tensor.shape) n *= d;
  for (size_t k = 1; k < table.size(); ++k) inner *= table[k];
  i = ReshapeOp::create(b, loc, tensorType(it, {n}), i);
  rows = ReshapeOp::create(b, loc, tensorType(dt, {n, inner}), rows);
  auto matrix = tensorType(dt, {table[0], inner});
  mlir::Value zeros = ConstantOp::create(b, loc, matrix, mlir::DenseElementsAttr::get(matrix, b.getFloatAttr(elem(dt), 0)));
  mlir::Value lo = mlir::arith::ConstantIndexOp::create(b, loc, 0);
  mlir::Value hi = mlir::arith::ConstantIndexOp::create(b, loc, n);
  mlir::Value one = mlir::arith::ConstantIndexOp::create(b, loc, 1);
  mlir::Value last = mlir::arith::ConstantIndexOp::create(b, loc, std::max<int64_t>(table[0] - 1, 0));
  auto loop = mlir::scf::ForOp::create(b, loc, lo, hi, one, mlir::ValueRange{zeros});
  {
    mlir::OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    mlir::Value k = loop.getInductionVar(), acc = loop.getRegionIterArgs()[0];
    mlir::Value id = mlir::tensor::ExtractOp::create(b, loc, i, mlir::ValueRange{k});
    id = mlir::arith::IndexCastOp::create(b, loc, b.getIndexType(), id);
    id = mlir::arith::MinSIOp::create(b, loc, mlir::arith::MaxSIOp::create(b, loc, id, lo), last);
    TensorSpec row{"", dt, {inner}};
    mlir::Value sum = BinaryOp_::create(b, loc, tensorType(dt, {inner}), toIR(sema::BinaryKind::Add),
                                        sliceAt(acc, id, row), sliceAt(rows, k, row));
    mlir::scf::YieldOp::create(b, loc, insertAt(sum, acc, id, row));
  }
  return ReshapeOp::create(b, loc, tensorType(e.type.tensor), loop.getResult(0));
}

Val MLIRGen::Impl::member(Frame& f, const elab::Expr& e) {
  const Instance* base = e.kind == ExprKind::State ? f.self : eval(f, *e.operand(0)).inst;
  switch (e.kind) {
    case ExprKind::Param: {
      auto it = f.fn->params.find(base);
      if (it == f.fn->params.end()) return Val::of(layerParam(f, base, e.name, e.range));
      return Val::of(it->second.at(e.name));
    }
    default: return Val::of(f.fn->states.at(base).at(e.name));
  }
}

// A param of layer k named outside a loop over its array (a derived
// gradient's `Element k`): the stacked tensor sliced at the constant k.
mlir::Value MLIRGen::Impl::layerParam(Frame& f, const Instance* inst, const std::string& name, SourceRange at) {
  auto el = elementOf.find(inst);
  if (el == elementOf.end()) fail(at, "compiled code reads a layer's params only inside its loop");
  const StackedArray& sa = stacked[el->second.array];
  std::string path = sa.name + ".*" + el->second.rel + "." + name;
  auto all = f.fn->stackedParams.find(path);
  if (all == f.fn->stackedParams.end())
    fail(at, "compiled code names another layer's params only in an entry, not in a layer's method");
  for (const StackedArray::Slot& p : sa.params)
    if (p.path == path) {
      loc = locOf(at);
      mlir::Value index = mlir::arith::ConstantIndexOp::create(b, loc, el->second.index);
      return sliceAt(all->second, index, p.spec);
    }
  fail(at, fmt::format("internal: no stacked param `{}`", path));
}

Val MLIRGen::Impl::eval(Frame& f, const elab::Expr& e) {
  auto type = [&] { return tensorType(e.type.tensor); };
  auto at = [&] { loc = locOf(e.range); };
  Val structural;
  if (elab::evalStructural(e, f.self, [&](const elab::Expr& x) { return eval(f, x); }, structural)) return structural;
  switch (e.kind) {
    case ExprKind::Constant: at(); return Val::of(constant(e));
    case ExprKind::Local: return f.slots.at(e.slot);
    case ExprKind::Param: case ExprKind::State: return member(f, e);
    case ExprKind::Unary: {
      mlir::Value x = tensor(f, e, 0);
      at();
      return Val::of(UnaryOp::create(b, loc, type(), toIR(e.unary), x));
    }
    case ExprKind::Binary: {
      // A left-leaning chain (`x + ... + x`, maybe 700,000 deep) by a loop
      // down its left spine, not recursion.
      std::vector<const elab::Expr*> spine{&e};
      while (spine.back()->operand(0)->kind == ExprKind::Binary) spine.push_back(spine.back()->operand(0));
      mlir::Value x = tensor(f, *spine.back(), 0);
      for (auto it = spine.rbegin(); it != spine.rend(); ++it) {
        const elab::Expr& n = **it;
        mlir::Value y = tensor(f, n, 1);
        loc = locOf(n.range);
        x = BinaryOp_::create(b, loc, tensorType(n.type.tensor), toIR(n.binary), x, y);
      }
      return Val::of(x);
    }
    case ExprKind::Select: {
      mlir::Value c = tensor(f, e, 0), x = tensor(f, e, 1), y = tensor(f, e, 2);
      at();
      return Val::of(SelectOp::create(b, loc, type(), c, x, y));
    }
    case ExprKind::Cast: {
      mlir::Value x = tensor(f, e, 0);
      at();
      return Val::of(CastOp::create(b, loc, type(), x));
    }
    case ExprKind::Broadcast: {
      mlir::Value x = tensor(f, e, 0);
      at();
      return Val::of(BroadcastOp::create(b, loc, type(), x));
    }
    case ExprKind::Reshape: {
      mlir::Value x = tensor(f, e, 0);
      at();
      return Val::of(ReshapeOp::create(b, loc, type(), x));
    }
    case ExprKind::Permute: {
      mlir::Value x = tensor(f, e, 0);
      at();
      return Val::of(PermuteOp::create(b, loc, type(), x, b.getDenseI64ArrayAttr(e.ints)));
    }
    case ExprKind::Concat: {
      std::vector<mlir::Value> xs;
      for (size_t k = 0; k < e.operands.size(); ++k) xs.push_back(tensor(f, e, k));
      at();
      return Val::of(ConcatOp::create(b, loc, type(), xs, b.getI64IntegerAttr(e.ints[0])));
    }
    case ExprKind::Iota:
      at();
      return Val::of(iota(e.type.tensor.dtype, e.type.tensor.shape, static_cast<int>(e.ints[0])));
    case ExprKind::Matmul: {
      mlir::Value x = tensor(f, e, 0), w = tensor(f, e, 1);
      at();
      return Val::of(MatmulOp::create(b, loc, type(), x, w, /*keep_columns=*/mlir::Value(), nullptr, nullptr));
    }
    case ExprKind::Reduce: {
      mlir::Value x = tensor(f, e, 0);
      at();
      return Val::of(ReduceOp::create(b, loc, type(), ReduceKindAttr::get(&ctx, toIR(e.reduce)), x,
                                      b.getDenseI64ArrayAttr(e.ints), e.flag ? b.getUnitAttr() : nullptr));
    }
    case ExprKind::GatherRows: return Val::of(gatherRows(f, e));
    case ExprKind::ScatterRows: return Val::of(scatterRows(f, e));
    case ExprKind::Slice: {
      mlir::Value x = tensor(f, e, 0);
      std::vector<mlir::Value> scalars;
      std::vector<int64_t> items, lo, hi;
      for (const elab::SliceItem& it : e.items) {
        if (it.slice) {
          items.push_back(-1);
          lo.push_back(it.lo);
          hi.push_back(it.hi);
        } else {
          items.push_back(static_cast<int64_t>(scalars.size()));
          lo.push_back(0);
          hi.push_back(0);
          scalars.push_back(tensor(f, e, it.index));
        }
      }
      at();
      return Val::of(SliceOp::create(b, loc, type(), x, scalars, b.getDenseI64ArrayAttr(items),
                                     b.getDenseI64ArrayAttr(lo), b.getDenseI64ArrayAttr(hi)));
    }
    case ExprKind::Attention: {
      mlir::Value q = tensor(f, e, 0), k = tensor(f, e, 1), v = tensor(f, e, 2), scale = tensor(f, e, 3),
                  mask = tensor(f, e, 4);
      at();
      return Val::of(AttentionOp::create(b, loc, type(), q, k, v, scale, mask));
    }
    case ExprKind::AttentionRows: {
      mlir::Value q = tensor(f, e, 0), k = tensor(f, e, 1), v = tensor(f, e, 2), scale = tensor(f, e, 3),
                  mask = tensor(f, e, 4);
      at();
      return Val::of(AttentionRowsOp::create(b, loc, type(), q, k, v, scale, mask));
    }
    case ExprKind::AttentionGrad: {
      std::vector<mlir::Value> xs;
      for (size_t k = 0; k < 8; ++k) xs.push_back(tensor(f, e, k));
      at();
      auto grad = AttentionGradOp::create(b, loc, xs[0].getType(), xs[1].getType(), xs[2].getType(), xs[0], xs[1],
                                          xs[2], xs[3], xs[4], xs[5], xs[6], xs[7]);
      Val out = Val::ofKind(Val::Tuple);
      for (mlir::Value r : grad.getResults()) out.elems.push_back(Val::of(r));
      return out;
    }
    case ExprKind::WritePoints: {
      mlir::Value dest = tensor(f, e, 0), x = tensor(f, e, 1), rows = tensor(f, e, 2), positions = tensor(f, e, 3);
      at();
      return Val::of(WritePointsOp::create(b, loc, type(), dest, x, rows, positions, b.getI64IntegerAttr(e.ints[0])));
    }
    case ExprKind::WriteSlice: {
      mlir::Value dest = tensor(f, e, 0), x = tensor(f, e, 1), start = tensor(f, e, 2);
      at();
      return Val::of(WriteSliceOp::create(b, loc, type(), dest, x, start, b.getI64IntegerAttr(e.ints[0])));
    }
    case ExprKind::Gather: {
      mlir::Value x = tensor(f, e, 0);
      std::vector<mlir::Value> idx;
      for (size_t k = 1; k < e.operands.size(); ++k) idx.push_back(tensor(f, e, k));
      at();
      return Val::of(GatherOp::create(b, loc, type(), x, idx));
    }
    case ExprKind::Call: return call(f, e);
    case ExprKind::Self: case ExprKind::Sub: case ExprKind::Element: case ExprKind::Tuple: case ExprKind::Some:
    case ExprKind::None: case ExprKind::Unwrap: break;  // evalStructural
  }
  fail(e.range, "internal: an expression kind without a translation");
}

}  // namespace linnet::ir
