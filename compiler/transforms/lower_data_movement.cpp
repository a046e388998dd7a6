// linnet-to-linalg, data movement: reshape, permute, concat, slice, gather
// write_slice and write_points become tensor ops (views once bufferized) or, for gather, a
// parallel `linalg.generic` that reads the source with tensor.extract.
// Runtime indices are clamped into their axis: the language defines no
// out-of-range read.
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

// Through one flat axis: collapse everything, then expand to the result.
struct LowerReshape : OpConversionPattern<ir::ReshapeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ir::ReshapeOp op, OpAdaptor a, ConversionPatternRewriter& rw) const override {
    rw.replaceOp(op, reshape(rw, op.getLoc(), a.getX(), op.getType()));
    return success();
  }

  static Value reshape(OpBuilder& b, Location loc, Value x, RankedTensorType out) {
    auto xt = typeOf(x);
    if (xt.getShape() == out.getShape()) return x;
    if (xt.getRank() == 0) return tensor::ExpandShapeOp::create(b, loc, out, x, ArrayRef<ReassociationIndices>{});
    if (out.getRank() == 0) return tensor::CollapseShapeOp::create(b, loc, out, x, ArrayRef<ReassociationIndices>{});
    ReassociationIndices all;
    for (int64_t i = 0; i < xt.getRank(); ++i) all.push_back(i);
    auto flatT = RankedTensorType::get({xt.getNumElements()}, xt.getElementType());
    Value flat = xt.getRank() == 1
                     ? x
                     : Value(tensor::CollapseShapeOp::create(b, loc, flatT, x, ArrayRef<ReassociationIndices>{all}));
    if (out.getRank() == 1) return flat;
    ReassociationIndices allOut;
    for (int64_t i = 0; i < out.getRank(); ++i) allOut.push_back(i);
    return tensor::ExpandShapeOp::create(b, loc, out, flat, ArrayRef<ReassociationIndices>{allOut});
  }
};

// A permutation that keeps the axes longer than 1 in their order moves
// nothing in memory (decode's merge of one query's heads, [.., H, 1, D] to
// [.., 1, H, D]): a reshape, a view once bufferized; any other, a transpose.
struct LowerPermute : OpConversionPattern<ir::PermuteOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ir::PermuteOp op, OpAdaptor a, ConversionPatternRewriter& rw) const override {
    if (movesNothing(op.getPerm(), typeOf(a.getX()).getShape())) {
      rw.replaceOp(op, LowerReshape::reshape(rw, op.getLoc(), a.getX(), op.getType()));
      return success();
    }
    Value init = emptyTensor(rw, op.getLoc(), op.getType());
    rw.replaceOp(op, linalg::TransposeOp::create(rw, op.getLoc(), a.getX(), init, op.getPerm()).getResult()[0]);
    return success();
  }

  // Result axis i is source axis perm[i]: nothing moves when the source
  // axes longer than 1 appear in increasing order.
  static bool movesNothing(ArrayRef<int64_t> perm, ArrayRef<int64_t> shape) {
    int64_t last = -1;
    for (int64_t from : perm) {
      if (shape[from] == 1) continue;
      if (from < last) return false;
      last = from;
    }
    return true;
  }
};

// Each part inserted at its offset along the axis into one empty result.
struct LowerConcat : OpConversionPattern<ir::ConcatOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ir::ConcatOp op, OpAdaptor a, ConversionPatternRewriter& rw) const override {
    Location loc = op.getLoc();
    auto out = op.getType();
    int64_t axis = op.getAxis();
    Value acc = emptyTensor(rw, loc, out);
    int64_t at = 0;
    for (Value x : a.getXs()) {
      auto xt = typeOf(x);
      SmallVector<OpFoldResult> offsets(out.getRank(), rw.getIndexAttr(0)), sizes,
          strides(out.getRank(), rw.getIndexAttr(1));
      offsets[axis] = rw.getIndexAttr(at);
      for (int64_t d : xt.getShape()) sizes.push_back(rw.getIndexAttr(d));
      acc = tensor::InsertSliceOp::create(rw, loc, x, acc, offsets, sizes, strides);
      at += xt.getShape()[axis];
    }
    rw.replaceOp(op, acc);
    return success();
  }
};

// An index clamped into [0, n).
Value clampInto(OpBuilder& b, Location l, Value i, int64_t n) {
  Value zero = cIndex(b, l, 0), top = cIndex(b, l, std::max<int64_t>(n - 1, 0));
  return arith::MinSIOp::create(b, l, arith::MaxSIOp::create(b, l, i, zero), top);
}

// A runtime integer (an element of a rank-0 tensor, or of an index tensor)
// as an index clamped into [0, n).
Value clampIndex(OpBuilder& b, Location l, Value v, int64_t n) {
  if (v.getType().isInteger(1)) v = arith::ExtUIOp::create(b, l, b.getI64Type(), v);
  return clampInto(b, l, arith::IndexCastOp::create(b, l, b.getIndexType(), v), n);
}

// A signed runtime integer as an index, unclamped: widened to i64 first.
Value signedIndex(OpBuilder& b, Location l, Value v) {
  if (v.getType().getIntOrFloatBitWidth() < 64) v = arith::ExtSIOp::create(b, l, b.getI64Type(), v);
  return arith::IndexCastOp::create(b, l, b.getIndexType(), v);
}

// An scf.for over 0 .. count carrying `dest`: `step` gives the next value
// from the loop index and the carried one (the writes, one row or point each).
Value loopCarrying(OpBuilder& b, Location loc, int64_t count, Value dest,
                   function_ref<Value(OpBuilder&, Location, Value index, Value acc)> step) {
  auto loop = scf::ForOp::create(b, loc, cIndex(b, loc, 0), cIndex(b, loc, count), cIndex(b, loc, 1),
                                 ValueRange{dest}, [&](OpBuilder& nb, Location l, Value i, ValueRange acc) {
                                   scf::YieldOp::create(nb, l, step(nb, l, i, acc[0]));
                                 });
  return loop.getResult(0);
}

// Static slices, and runtime indices that drop their axis.
struct LowerSlice : OpConversionPattern<ir::SliceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ir::SliceOp op, OpAdaptor a, ConversionPatternRewriter& rw) const override {
    Location loc = op.getLoc();
    Value x = a.getX();
    auto xt = typeOf(x);
    SmallVector<OpFoldResult> offsets, sizes, strides;
    ArrayRef<int64_t> items = op.getItems(), lo = op.getLo(), hi = op.getHi();
    for (int64_t d = 0; d < xt.getRank(); ++d) {
      strides.push_back(rw.getIndexAttr(1));
      if (items[d] < 0) {
        offsets.push_back(rw.getIndexAttr(lo[d]));
        sizes.push_back(rw.getIndexAttr(hi[d] - lo[d]));
      } else {
        Value at = tensor::ExtractOp::create(rw, loc, a.getIndices()[items[d]], ValueRange{});
        offsets.push_back(clampIndex(rw, loc, at, xt.getShape()[d]));
        sizes.push_back(rw.getIndexAttr(1));
      }
    }
    rw.replaceOpWithNewOp<tensor::ExtractSliceOp>(op, op.getType(), x, offsets, sizes, strides);
    return success();
  }
};

// dest with the part of x that lands inside it inserted: a slice insertion
// with sizes found at run time, which bufferizes into a copy of just those
// positions, in place when dest is not read afterwards (a cache write).
// With a start per row, one insertion per row in an scf.for over the rows.
struct LowerWriteSlice : OpConversionPattern<ir::WriteSliceOp> {
  using OpConversionPattern::OpConversionPattern;

  // Inserts x's rows `row .. row + rows` (all of them: row null) into dest's
  // same rows, from position `start` (an integer) along `axis`.
  static Value insert(OpBuilder& b, Location loc, Value dest, Value x, Value start, int64_t axis, Value row) {
    auto dt = typeOf(dest);
    auto xt = typeOf(x);
    int64_t m = dt.getShape()[axis], n = xt.getShape()[axis];
    Value s = signedIndex(b, loc, start);
    // Clamped to -n .. m first, so start + n cannot overflow; then the
    // written positions are lo .. hi of dest, from x's lo - s.
    s = arith::MinSIOp::create(b, loc, arith::MaxSIOp::create(b, loc, s, cIndex(b, loc, -n)), cIndex(b, loc, m));
    Value lo = arith::MaxSIOp::create(b, loc, s, cIndex(b, loc, 0));
    Value hi = arith::MinSIOp::create(b, loc, arith::AddIOp::create(b, loc, s, cIndex(b, loc, n)), cIndex(b, loc, m));
    Value len = arith::SubIOp::create(b, loc, hi, lo);
    Value from = arith::SubIOp::create(b, loc, lo, s);
    SmallVector<OpFoldResult> srcOffsets, dstOffsets, sizes, strides;
    for (int64_t d = 0; d < dt.getRank(); ++d) {
      strides.push_back(b.getIndexAttr(1));
      OpFoldResult zero = b.getIndexAttr(0);
      if (d == 0 && row) zero = row;
      srcOffsets.push_back(d == axis ? OpFoldResult(from) : zero);
      dstOffsets.push_back(d == axis ? OpFoldResult(lo) : zero);
      sizes.push_back(d == axis ? OpFoldResult(len) : b.getIndexAttr(d == 0 && row ? 1 : dt.getShape()[d]));
    }
    Value piece = tensor::ExtractSliceOp::create(b, loc, x, srcOffsets, sizes, strides);
    return tensor::InsertSliceOp::create(b, loc, piece, dest, dstOffsets, sizes, strides);
  }

  LogicalResult matchAndRewrite(ir::WriteSliceOp op, OpAdaptor a, ConversionPatternRewriter& rw) const override {
    Location loc = op.getLoc();
    int64_t axis = op.getAxis();
    if (typeOf(a.getStart()).getRank() == 0) {
      Value start = tensor::ExtractOp::create(rw, loc, a.getStart(), ValueRange{});
      rw.replaceOp(op, insert(rw, loc, a.getDest(), a.getX(), start, axis, nullptr));
      return success();
    }
    int64_t rows = typeOf(a.getDest()).getShape()[0];
    rw.replaceOp(op, loopCarrying(rw, loc, rows, a.getDest(), [&](OpBuilder& b, Location l, Value row, Value acc) {
      Value start = tensor::ExtractOp::create(b, l, a.getStart(), ValueRange{row});
      return insert(b, l, acc, a.getX(), start, axis, row);
    }));
    return success();
  }
};

// Point p of x into row rows[p] at positions[p]: an scf.for over the points
// carrying dest, each a slice insertion of one point whose size along axis
// 0 is 1 when the point lands inside dest and 0 when it does not (offsets
// clamped), so nothing is read or written outside either tensor.
struct LowerWritePoints : OpConversionPattern<ir::WritePointsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ir::WritePointsOp op, OpAdaptor a, ConversionPatternRewriter& rw) const override {
    Location loc = op.getLoc();
    auto dt = typeOf(a.getDest());
    int64_t axis = op.getAxis(), points = typeOf(a.getX()).getShape()[axis];
    int64_t rowsOf = dt.getShape()[0], m = dt.getShape()[axis];
    rw.replaceOp(op, loopCarrying(rw, loc, points, a.getDest(), [&](OpBuilder& b, Location l, Value p, Value acc) {
      auto at = [&](Value v) { return signedIndex(b, l, tensor::ExtractOp::create(b, l, v, ValueRange{p})); };
      Value r = at(a.getRows()), s = at(a.getPositions());
      auto inside = [&](Value v, int64_t n) {
        Value lo = arith::CmpIOp::create(b, l, arith::CmpIPredicate::sge, v, cIndex(b, l, 0));
        Value hi = arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, v, cIndex(b, l, n));
        return Value(arith::AndIOp::create(b, l, lo, hi));
      };
      Value ok = arith::AndIOp::create(b, l, inside(r, rowsOf), inside(s, m));
      Value len = arith::SelectOp::create(b, l, ok, cIndex(b, l, 1), cIndex(b, l, 0));
      SmallVector<OpFoldResult> srcOffsets, dstOffsets, sizes, strides;
      for (int64_t d = 0; d < dt.getRank(); ++d) {
        strides.push_back(b.getIndexAttr(1));
        srcOffsets.push_back(d == axis ? OpFoldResult(p) : b.getIndexAttr(0));
        dstOffsets.push_back(d == 0      ? OpFoldResult(clampInto(b, l, r, rowsOf))
                             : d == axis ? OpFoldResult(clampInto(b, l, s, m))
                                         : OpFoldResult(b.getIndexAttr(0)));
        sizes.push_back(d == 0 ? OpFoldResult(len) : b.getIndexAttr(d == axis ? 1 : dt.getShape()[d]));
      }
      Value piece = tensor::ExtractSliceOp::create(b, l, a.getX(), srcOffsets, sizes, strides);
      return Value(tensor::InsertSliceOp::create(b, l, piece, acc, dstOffsets, sizes, strides));
    }));
    return success();
  }
};

// x[i0, i1, ...]: an index that is an iota along one result axis is that
// loop index itself; the others are read elementwise.
struct LowerGather : OpConversionPattern<ir::GatherOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ir::GatherOp op, OpAdaptor a, ConversionPatternRewriter& rw) const override {
    Value x = a.getX();
    auto xt = typeOf(x);
    auto out = op.getType();
    unsigned r = out.getRank();
    SmallVector<Value> inputs;
    SmallVector<AffineMap> maps;
    SmallVector<int> source;  // per index: -1 read from inputs[inputOf[k]]; >= 0 the loop index of that axis
    SmallVector<int> inputOf;
    for (auto [k, idx] : llvm::enumerate(op.getIndices())) {
      // The op's own operand, not the adaptor's: the conversion replaces
      // uses only at its end, so an iota operand is still the iota here.
      auto it = typeOf(idx);
      int axis = -1;
      if (auto iota = idx.getDefiningOp<ir::IotaOp>()) {
        int64_t outAxis = iota.getAxis() + static_cast<int64_t>(r - it.getRank());
        if (it.getShape()[iota.getAxis()] == out.getShape()[outAxis]) axis = static_cast<int>(outAxis);
      }
      source.push_back(axis);
      inputOf.push_back(static_cast<int>(inputs.size()));
      if (axis < 0) {
        inputs.push_back(a.getIndices()[k]);
        maps.push_back(broadcastMap(rw, it.getShape(), out.getShape()));
      }
    }
    maps.push_back(rw.getMultiDimIdentityMap(r));
    SmallVector<utils::IteratorType> iters(r, utils::IteratorType::parallel);
    auto g = linalg::GenericOp::create(
        rw, op.getLoc(), TypeRange{out}, inputs, ValueRange{emptyTensor(rw, op.getLoc(), out)}, maps, iters,
        [&](OpBuilder& nb, Location l, ValueRange args) {
          SmallVector<Value> xi;
          for (size_t k = 0; k < source.size(); ++k) {
            if (source[k] >= 0) xi.push_back(linalg::IndexOp::create(nb, l, source[k]));
            else xi.push_back(clampIndex(nb, l, args[inputOf[k]], xt.getShape()[k]));
          }
          linalg::YieldOp::create(nb, l, tensor::ExtractOp::create(nb, l, x, xi).getResult());
        });
    rw.replaceOp(op, g.getResult(0));
    return success();
  }
};

}  // namespace

void populateDataMovementPatterns(RewritePatternSet& patterns) {
  patterns.add<LowerReshape, LowerPermute, LowerConcat, LowerSlice, LowerGather, LowerWriteSlice,
               LowerWritePoints>(patterns.getContext());
}

}  // namespace linnet::transforms::lowering
