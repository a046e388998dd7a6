// linnet-to-linalg, contractions: matmul and reduce become a parallel
// `linalg.generic` over the result whose body runs an `scf.for` over the
// reduced axis, accumulating in f32 in a register: the innermost loop then
// reads both operands contiguously and LLVM vectorizes it (the adds carry
// `reassoc` so it may). A matmul whose b is read as [.., K, N] instead
// accumulates whole rows, so its inner loop runs along N.
#include "ir/dialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"
#include "transforms/lowering.h"

namespace linnet::transforms::lowering {

namespace {

using namespace mlir;

// ---------------------------------------------------------------- matmul

// b read row by row ([.., N, K], `transpose_b`): each result element is a
// dot product of two contiguous rows, accumulated in an f32 register. The
// loop over b's rows (n) runs outside the rows of a (m), so a weight row
// stays in cache while every row of a meets it.
Value dotMatmul(OpBuilder& b, Location loc, ir::MatmulOp op, Value a, Value w) {
  auto at = typeOf(a), wt = typeOf(w), out = op.getType();
  bool tb = op.getTransposeB();
  int64_t K = at.getShape().back();
  unsigned r = out.getRank();
  Type et = out.getElementType();
  bool isF = isa<FloatType>(et);
  SmallVector<unsigned> order = identityOrder(r);
  if (tb && r >= 2) std::swap(order[r - 1], order[r - 2]);
  auto ap = at.getShape(), wp = wt.getShape();
  return indexed(b, loc, out, order, [&](OpBuilder& nb, Location l, ArrayRef<Value> idx) -> Value {
    Value lo = cIndex(nb, l, 0), hi = cIndex(nb, l, K), step = cIndex(nb, l, 1);
    Value init = isF ? Value(arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(0.0f)))
                     : Value(arith::ConstantIntOp::create(nb, l, et, 0));
    auto loop = scf::ForOp::create(nb, l, lo, hi, step, ValueRange{init},
                                   [&](OpBuilder& lb, Location ll, Value k, ValueRange acc) {
      SmallVector<Value> ai, wi;
      if (wp.size() == 2) {
        // a [..., K] with the result's leading axes; w [N, K] or [K, N].
        for (size_t d = 0; d + 1 < ap.size(); ++d) ai.push_back(idx[d]);
        ai.push_back(k);
        if (tb) wi = {idx[r - 1], k};
        else wi = {k, idx[r - 1]};
      } else {
        // Batched: a [..batchA, M, K], w [..batchB, N, K] (or [.., K, N]),
        // batch axes broadcast.
        size_t batch = r - 2;
        auto batchIndex = [&](ArrayRef<int64_t> shape, size_t own, SmallVector<Value>& into) {
          for (size_t d = 0; d < own; ++d) {
            size_t outAxis = batch - own + d;
            into.push_back(shape[d] == 1 ? cIndex(lb, ll, 0) : idx[outAxis]);
          }
        };
        if (ap.size() >= 2) {
          batchIndex(ap, ap.size() - 2, ai);
          ai.push_back(idx[r - 2]);
        }
        ai.push_back(k);
        batchIndex(wp, wp.size() - 2, wi);
        if (tb) {
          wi.push_back(idx[r - 1]);
          wi.push_back(k);
        } else {
          wi.push_back(k);
          wi.push_back(idx[r - 1]);
        }
      }
      Value x = tensor::ExtractOp::create(lb, ll, a, ai);
      Value y = tensor::ExtractOp::create(lb, ll, w, wi);
      Value next;
      if (isF) {
        Value p = arith::MulFOp::create(lb, ll, toF32(lb, ll, x), toF32(lb, ll, y), reassoc(lb));
        next = arith::AddFOp::create(lb, ll, acc[0], p, reassoc(lb));
      } else {
        next = arith::AddIOp::create(lb, ll, acc[0], arith::MulIOp::create(lb, ll, x, y));
      }
      scf::YieldOp::create(lb, ll, next);
    });
    return isF ? fromF32(nb, l, loop.getResult(0), et) : loop.getResult(0);
  });
}

// b read as [.., K, N] (attention's probabilities times values): for each
// row of a, the rows of b scaled and added into the result row, so the
// innermost loop runs along N, contiguous in b and in the result. Floats
// accumulate in an f32 result, rounded to the result type once at the end.
Value rowsMatmul(OpBuilder& b, Location loc, ir::MatmulOp op, Value a, Value w) {
  auto at = typeOf(a), wt = typeOf(w), out = op.getType();
  unsigned r = out.getRank();
  Type et = out.getElementType();
  bool isF = isa<FloatType>(et);
  auto ap = at.getShape(), wp = wt.getShape();
  // Loop dims: the result's axes but the last, then k (reduction), then n.
  unsigned dims = r + 1, kDim = r - 1, nDim = r;
  auto d = [&](unsigned i) { return b.getAffineDimExpr(i); };
  SmallVector<AffineExpr> aExprs, wExprs, outExprs;
  for (unsigned i = 0; i + 1 < r; ++i) outExprs.push_back(d(i));
  outExprs.push_back(d(nDim));
  if (wp.size() == 2) {
    for (unsigned i = 0; i + 1 < ap.size(); ++i) aExprs.push_back(d(i));
    aExprs.push_back(d(kDim));
    wExprs = {d(kDim), d(nDim)};
  } else {
    unsigned batch = r - 2;
    auto batchExprs = [&](ArrayRef<int64_t> shape, size_t own, SmallVector<AffineExpr>& into) {
      for (size_t i = 0; i < own; ++i) {
        unsigned outAxis = static_cast<unsigned>(batch - own + i);
        into.push_back(shape[i] == 1 && out.getShape()[outAxis] != 1 ? b.getAffineConstantExpr(0) : d(outAxis));
      }
    };
    batchExprs(ap, ap.size() - 2, aExprs);
    aExprs.push_back(d(r - 2));
    aExprs.push_back(d(kDim));
    batchExprs(wp, wp.size() - 2, wExprs);
    wExprs.push_back(d(kDim));
    wExprs.push_back(d(nDim));
  }
  auto ctx = b.getContext();
  SmallVector<AffineMap> maps = {AffineMap::get(dims, 0, aExprs, ctx), AffineMap::get(dims, 0, wExprs, ctx),
                                 AffineMap::get(dims, 0, outExprs, ctx)};
  SmallVector<utils::IteratorType> iters(dims, utils::IteratorType::parallel);
  iters[kDim] = utils::IteratorType::reduction;
  Type accT = isF ? b.getF32Type() : et;
  auto accType = RankedTensorType::get(out.getShape(), accT);
  Value zero = isF ? Value(arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f)))
                   : Value(arith::ConstantIntOp::create(b, loc, et, 0));
  Value init = linalg::FillOp::create(b, loc, zero, emptyTensor(b, loc, accType)).getResult(0);
  auto g = linalg::GenericOp::create(
      b, loc, TypeRange{accType}, ValueRange{a, w}, ValueRange{init}, maps, iters,
      [&](OpBuilder& nb, Location l, ValueRange args) {
        Value next;
        if (isF) {
          Value p = arith::MulFOp::create(nb, l, toF32(nb, l, args[0]), toF32(nb, l, args[1]));
          next = arith::AddFOp::create(nb, l, args[2], p);
        } else {
          next = arith::AddIOp::create(nb, l, args[2], arith::MulIOp::create(nb, l, args[0], args[1]));
        }
        linalg::YieldOp::create(nb, l, next);
      });
  Value acc = g.getResult(0);
  if (accT == et) return acc;
  return elementwise(b, loc, out, {acc}, [&](OpBuilder& nb, Location l, ValueRange v) { return fromF32(nb, l, v[0], et); });
}

struct LowerMatmul : OpConversionPattern<ir::MatmulOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ir::MatmulOp op, OpAdaptor ad, ConversionPatternRewriter& rw) const override {
    // Only a target's own kernel takes the promises (expand_attention.cpp
    // gives them to no other product).
    if (op.getKeepColumns() || op.getSkipZeroTerms())
      return op.emitError("internal compiler error: a product with keep_columns or skip_zero_terms reached the "
                          "generic lowering");
    Value a = ad.getA(), w = ad.getB();
    bool rows = !op.getTransposeB() && typeOf(a).getRank() >= 1 && (typeOf(w).getRank() == 2 || typeOf(a).getRank() >= 2);
    rw.replaceOp(op, rows ? rowsMatmul(rw, op.getLoc(), op, a, w) : dotMatmul(rw, op.getLoc(), op, a, w));
    return success();
  }
};

// ---------------------------------------------------------------- reduce

using StepFn = Value (*)(OpBuilder&, Location, Value acc, Value element);

// How a reduce kind accumulates: the accumulator's first value, one step,
// and whether the total is divided by the count (mean).
struct Reduction {
  enum Start { Zero, One, Lowest, Highest } start;
  StepFn step;
  bool mean = false;
};

template <class Op>
Value stepOf(OpBuilder& b, Location l, Value acc, Value x) {
  return Op::create(b, l, acc, x);
}
Value sumF(OpBuilder& b, Location l, Value acc, Value x) { return arith::AddFOp::create(b, l, acc, x, reassoc(b)); }

// How reduce `kind` accumulates elements of type `et`; none when it has no
// lowering. Floats accumulate in f32. index_of_max, with its two
// accumulators, is lowered apart.
std::optional<Reduction> reductionOf(ir::ReduceKind kind, Type et) {
  using K = ir::ReduceKind;
  if (isa<FloatType>(et)) {
    switch (kind) {
      case K::Sum: return Reduction{Reduction::Zero, sumF};
      case K::Mean: return Reduction{Reduction::Zero, sumF, true};
      case K::Max: return Reduction{Reduction::Lowest, stepOf<arith::MaxNumFOp>};
      case K::Min: return Reduction{Reduction::Highest, stepOf<arith::MinNumFOp>};
      case K::Prod: return Reduction{Reduction::One, stepOf<arith::MulFOp>};
      case K::IndexOfMax: case K::All: case K::Any: return std::nullopt;
    }
    return std::nullopt;
  }
  if (et.isInteger(1)) {  // min and prod of booleans are their conjunction, max their disjunction
    switch (kind) {
      case K::All: case K::Min: case K::Prod: return Reduction{Reduction::One, stepOf<arith::AndIOp>};
      case K::Any: case K::Max: return Reduction{Reduction::Zero, stepOf<arith::OrIOp>};
      case K::Sum: case K::Mean: case K::IndexOfMax: return std::nullopt;
    }
    return std::nullopt;
  }
  switch (kind) {
    case K::Sum: return Reduction{Reduction::Zero, stepOf<arith::AddIOp>};
    case K::Max: return Reduction{Reduction::Lowest, stepOf<arith::MaxSIOp>};
    case K::Min: return Reduction{Reduction::Highest, stepOf<arith::MinSIOp>};
    case K::Prod: return Reduction{Reduction::One, stepOf<arith::MulIOp>};
    case K::Mean: case K::IndexOfMax: case K::All: case K::Any: return std::nullopt;
  }
  return std::nullopt;
}

Value startValue(OpBuilder& b, Location l, Reduction::Start start, Type et) {
  if (isa<FloatType>(et)) {
    float v = start == Reduction::Zero ? 0.0f : start == Reduction::One ? 1.0f
              : start == Reduction::Lowest ? -INFINITY : INFINITY;
    return arith::ConstantOp::create(b, l, b.getF32FloatAttr(v));
  }
  unsigned w = et.getIntOrFloatBitWidth();
  APInt v = start == Reduction::Zero ? APInt::getZero(w) : start == Reduction::One ? APInt(w, 1)
            : start == Reduction::Lowest ? APInt::getSignedMinValue(w) : APInt::getSignedMaxValue(w);
  return arith::ConstantOp::create(b, l, b.getIntegerAttr(et, v));
}

// Folds one element, and its flat index over the reduced axes, into the carried values.
using FoldFn = function_ref<SmallVector<Value>(OpBuilder&, Location, ValueRange acc, Value element, Value flat)>;

// One scf.for per reduced axis from `level` on, the last axis innermost,
// carrying `acc`; `xi` is x's index, filled in on the reduced axes.
SmallVector<Value> reduceLoops(OpBuilder& b, Location l, Value x, ArrayRef<int64_t> axes, size_t level,
                               SmallVectorImpl<Value>& xi, ValueRange acc, Value flat, FoldFn fold) {
  if (level == axes.size()) return fold(b, l, acc, tensor::ExtractOp::create(b, l, x, xi), flat);
  int64_t axis = axes[level];
  int64_t extent = typeOf(x).getShape()[axis];
  auto loop = scf::ForOp::create(b, l, cIndex(b, l, 0), cIndex(b, l, extent), cIndex(b, l, 1), acc,
                                 [&](OpBuilder& ib, Location il, Value iv, ValueRange inner) {
    xi[axis] = iv;
    Value f = arith::AddIOp::create(ib, il, arith::MulIOp::create(ib, il, flat, cIndex(ib, il, extent)), iv);
    scf::YieldOp::create(ib, il, reduceLoops(ib, il, x, axes, level + 1, xi, inner, f, fold));
  });
  return SmallVector<Value>(loop.getResults());
}

// Each element of the result: x's index from the result's (kept axes) and
// the loops (reduced axes), `init` carried through the loops, then `finish`.
Value reduceInto(OpBuilder& b, ir::ReduceOp op, Value x, function_ref<SmallVector<Value>(OpBuilder&, Location)> init,
                 FoldFn fold, function_ref<Value(OpBuilder&, Location, ValueRange)> finish) {
  auto xt = typeOf(x);
  auto out = op.getType();
  ArrayRef<int64_t> axes = op.getAxes();
  bool keep = op.getKeepdims();
  return indexed(b, op.getLoc(), out, identityOrder(out.getRank()),
                 [&](OpBuilder& nb, Location l, ArrayRef<Value> idx) -> Value {
    SmallVector<Value> xi(xt.getRank());
    unsigned outAxis = 0;
    for (int64_t d = 0; d < xt.getRank(); ++d) {
      bool reduced = llvm::is_contained(axes, d);
      if (!reduced) xi[d] = idx[outAxis++];
      else if (keep) ++outAxis;
    }
    SmallVector<Value> start = init(nb, l);
    Value flat0 = cIndex(nb, l, 0);
    return finish(nb, l, reduceLoops(nb, l, x, axes, 0, xi, start, flat0, fold));
  });
}

Value reduceWith(OpBuilder& b, ir::ReduceOp op, Value x, const Reduction& red) {
  auto xt = typeOf(x);
  Type xe = xt.getElementType(), oe = op.getType().getElementType();
  bool isF = isa<FloatType>(xe);
  int64_t count = 1;
  for (int64_t a : op.getAxes()) count *= xt.getShape()[a];
  return reduceInto(
      b, op, x, [&](OpBuilder& nb, Location l) { return SmallVector<Value>{startValue(nb, l, red.start, xe)}; },
      [&](OpBuilder& lb, Location l, ValueRange acc, Value v, Value) {
        return SmallVector<Value>{red.step(lb, l, acc[0], isF ? toF32(lb, l, v) : v)};
      },
      [&](OpBuilder& nb, Location l, ValueRange res) -> Value {
        Value r = res[0];
        if (red.mean) {
          Value n = arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(static_cast<float>(count)));
          r = arith::DivFOp::create(nb, l, r, n);
        }
        return isF ? fromF32(nb, l, r, oe) : r;
      });
}

// index_of_max carries the best value and its flat index: the first maximum
// wins, and the first NaN beats every number, as in the reference backend.
Value indexOfMax(OpBuilder& b, ir::ReduceOp op, Value x) {
  Type xe = typeOf(x).getElementType(), oe = op.getType().getElementType();
  bool isF = isa<FloatType>(xe);
  return reduceInto(
      b, op, x,
      [&](OpBuilder& nb, Location l) {
        Value lowest = isF ? Value(arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(-INFINITY)))
                           : Value(arith::ConstantIntOp::create(nb, l, xe, 0));
        return SmallVector<Value>{lowest, cIndex(nb, l, 0)};
      },
      [&](OpBuilder& lb, Location l, ValueRange acc, Value v, Value flat) {
        Value fv = isF ? toF32(lb, l, v) : v;
        Value best = acc[0];
        Value first = arith::CmpIOp::create(lb, l, arith::CmpIPredicate::eq, flat, cIndex(lb, l, 0));
        Value better = isF ? Value(arith::CmpFOp::create(lb, l, arith::CmpFPredicate::OGT, fv, best))
                           : Value(arith::CmpIOp::create(lb, l, arith::CmpIPredicate::sgt, fv, best));
        Value take = arith::OrIOp::create(lb, l, first, better);
        if (isF) {
          Value vNan = arith::CmpFOp::create(lb, l, arith::CmpFPredicate::UNO, fv, fv);
          Value bestNum = arith::CmpFOp::create(lb, l, arith::CmpFPredicate::ORD, best, best);
          take = arith::OrIOp::create(lb, l, take, arith::AndIOp::create(lb, l, vNan, bestNum));
        }
        return SmallVector<Value>{arith::SelectOp::create(lb, l, take, fv, best),
                                  arith::SelectOp::create(lb, l, take, flat, acc[1])};
      },
      [&](OpBuilder& nb, Location l, ValueRange res) -> Value {
        return arith::IndexCastOp::create(nb, l, oe, res[1]);
      });
}

struct LowerReduce : OpConversionPattern<ir::ReduceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ir::ReduceOp op, OpAdaptor a, ConversionPatternRewriter& rw) const override {
    Value x = a.getX();
    Type xe = typeOf(x).getElementType();
    auto fail = [&] {
      return rw.notifyMatchFailure(op, [&](Diagnostic& d) {
        d << "no lowering of kind `" << ir::stringifyEnum(op.getKind()) << "` for " << xe;
      });
    };
    if (op.getKind() == ir::ReduceKind::IndexOfMax) {
      if (xe.isInteger(1)) return fail();
      rw.replaceOp(op, indexOfMax(rw, op, x));
      return success();
    }
    std::optional<Reduction> red = reductionOf(op.getKind(), xe);
    if (!red) return fail();
    rw.replaceOp(op, reduceWith(rw, op, x, *red));
    return success();
  }
};

}  // namespace

void populateContractionPatterns(RewritePatternSet& patterns) {
  patterns.add<LowerMatmul>(patterns.getContext());
  patterns.add<LowerReduce>(patterns.getContext());
}

}  // namespace linnet::transforms::lowering
