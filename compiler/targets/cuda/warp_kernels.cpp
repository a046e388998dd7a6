#include "targets/cuda/warp_kernels.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "ir/dialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/ADT/MapVector.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/RegionUtils.h"
#include "targets/cuda/fuse_elementwise.h"
#include "targets/cuda/product_buffers.h"
#include "targets/cuda/product_epilogues.h"
#include "targets/cuda/row_kernels.h"
#include "targets/cuda/split_attention.h"
#include "targets/cuda/warp_helpers.h"
#include "transforms/pipeline.h"

namespace linnet::cuda {

namespace {

using namespace mlir;

// What one lane reads of a weight row per step: the widest global load.
constexpr int64_t kLoadBytes = 16;

int64_t bytesOf(Type t) { return t.getIntOrFloatBitWidth() / 8; }

// True when `buffer`'s offset and batch stride are multiples of `width`
// elements (its rows are, by their static stride).
Value startsAligned(OpBuilder& b, Location l, Value buffer, int64_t width) {
  auto meta = memref::ExtractStridedMetadataOp::create(b, l, buffer);
  Value ok;
  for (Value v : {Value(meta.getOffset()), Value(meta.getStrides()[0])}) {
    Value rest = arith::RemUIOp::create(b, l, v, cIndex(b, l, width));
    Value zero = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, rest, cIndex(b, l, 0));
    ok = ok ? Value(arith::AndIOp::create(b, l, ok, zero)) : zero;
  }
  return ok;
}

// vector.load with the alignment the target may assume: the buffers are
// 256-byte aligned (the device's pools and arena), rows are a multiple of
// the load apart, and the caller checked each view's offset.
Value loadVector(OpBuilder& b, Location l, Value buffer, ValueRange at, int64_t width) {
  Type et = cast<MemRefType>(buffer.getType()).getElementType();
  auto load = vector::LoadOp::create(b, l, VectorType::get({width}, et), buffer, at);
  load.setAlignment(static_cast<uint64_t>(std::min(kLoadBytes, width * bytesOf(et))));
  return load;
}

// Where one product of a warp reads: matrix `batch` of x and w, w's row `col`.
struct WarpProduct {
  Value x, w, batch, col, lane;
};

// One lane's f32 sums, one per row of x, of x[r, k] * w[col, k] for
// k = from + lane, from + lane + 32, .. < K: single loads.
SmallVector<Value> laneSums(OpBuilder& b, Location l, const WarpProduct& p, int64_t from, int64_t k, ValueRange init) {
  auto loop = scf::ForOp::create(
      b, l, arith::AddIOp::create(b, l, cIndex(b, l, from), p.lane), cIndex(b, l, k), cIndex(b, l, kWarpSize), init,
      [&](OpBuilder& lb, Location ll, Value at, ValueRange acc) {
        Value wv = toF32(lb, ll, memref::LoadOp::create(lb, ll, p.w, ValueRange{p.batch, p.col, at}));
        SmallVector<Value> next;
        for (size_t r = 0; r < acc.size(); ++r) {
          Value xv = toF32(lb, ll, memref::LoadOp::create(lb, ll, p.x, ValueRange{p.batch, cIndex(lb, ll, r), at}));
          next.push_back(math::FmaOp::create(lb, ll, xv, wv, acc[r]));
        }
        scf::YieldOp::create(lb, ll, next);
      });
  return SmallVector<Value>(loop.getResults());
}

// How many vector steps one iteration of a lane's loop takes: each step's
// loads (16 bytes of the weight, and of each row of x) are issued before the
// first of their FMAs, so that many are in flight per lane. The GPU issues
// in order, and without this a lane's next load waited behind an FMA that
// waited for the last one's data. Fewer for more rows, whose x vectors take
// registers too.
int64_t vectorStepsAtOnce(int64_t rows) { return rows <= 2 ? 4 : rows <= 4 ? 2 : 1; }

// The same sums from `width`-wide loads: `steps` vectors at
// k = step*32*width + lane*width, one f32 vector sum per row, then single
// loads past the last whole chunk. The steps go `vectorStepsAtOnce` at a
// time, then one at a time; each row's FMAs in order of k either way.
SmallVector<Value> laneVectorSums(OpBuilder& b, Location l, const WarpProduct& p, int64_t rows, int64_t k,
                                  int64_t width) {
  int64_t chunk = kWarpSize * width, steps = k / chunk;
  auto f32Vector = VectorType::get({width}, b.getF32Type());
  Value zeros = arith::ConstantOp::create(b, l, DenseElementsAttr::get(f32Vector, b.getF32FloatAttr(0.0f)));
  // Steps [from, to), `atOnce` an iteration, from the sums `init`.
  auto stepLoop = [&](int64_t from, int64_t to, int64_t atOnce, ValueRange init) {
    return scf::ForOp::create(
        b, l, cIndex(b, l, from), cIndex(b, l, to), cIndex(b, l, atOnce), init,
        [&](OpBuilder& lb, Location ll, Value first, ValueRange acc) {
          SmallVector<Value> ws;
          SmallVector<SmallVector<Value>> xs;
          for (int64_t u = 0; u < atOnce; ++u) {
            Value step = arith::AddIOp::create(lb, ll, first, cIndex(lb, ll, u));
            Value at = arith::AddIOp::create(lb, ll, arith::MulIOp::create(lb, ll, step, cIndex(lb, ll, chunk)),
                                             arith::MulIOp::create(lb, ll, p.lane, cIndex(lb, ll, width)));
            ws.push_back(loadVector(lb, ll, p.w, ValueRange{p.batch, p.col, at}, width));
            xs.emplace_back();
            for (int64_t r = 0; r < rows; ++r)
              xs.back().push_back(loadVector(lb, ll, p.x, ValueRange{p.batch, cIndex(lb, ll, r), at}, width));
          }
          SmallVector<Value> next(acc);
          for (int64_t u = 0; u < atOnce; ++u) {
            Value wv = toF32(lb, ll, ws[u]);
            for (int64_t r = 0; r < rows; ++r) next[r] = math::FmaOp::create(lb, ll, toF32(lb, ll, xs[u][r]), wv, next[r]);
          }
          scf::YieldOp::create(lb, ll, next);
        });
  };
  int64_t atOnce = std::max<int64_t>(1, std::min(vectorStepsAtOnce(rows), steps));
  int64_t grouped = steps / atOnce * atOnce;
  SmallVector<Value> vectors(rows, zeros);
  if (grouped > 0) vectors = SmallVector<Value>(stepLoop(0, grouped, atOnce, vectors).getResults());
  if (grouped < steps) vectors = SmallVector<Value>(stepLoop(grouped, steps, 1, vectors).getResults());
  SmallVector<Value> sums;
  for (Value v : vectors) sums.push_back(vector::ReductionOp::create(b, l, vector::CombiningKind::ADD, v));
  if (steps * chunk == k) return sums;
  return laneSums(b, l, p, steps * chunk, k, sums);
}

// The widest load (at most 16 bytes of the weight) that divides K and that
// every lane gets at least once; short rows take narrower ones.
int64_t loadWidth(Type weight, int64_t k) {
  int64_t width = kLoadBytes / bytesOf(weight);
  while (width > 1 && (k % width != 0 || k < kWarpSize * width)) width /= 2;
  return width;
}

// `v` (f32) rounded once to `out`.
Value roundTo(OpBuilder& b, Location l, Value v, Type out) {
  return v.getType() == out ? v : Value(arith::TruncFOp::create(b, l, out, v));
}

// Builds lane 0's work with `store` at b's insertion point.
void onLaneZero(OpBuilder& b, Location l, Value lane, llvm::function_ref<void()> store) {
  Value first = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, lane, cIndex(b, l, 0));
  auto branch = scf::IfOp::create(b, l, first, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(branch.thenBlock()->getTerminator());
  store();
}

// Lane 0's stores of `values` (one per row) into column p.col of `result`
// [batch, rows, N], each rounded once to the result's type.
void storeColumn(OpBuilder& b, Location l, const WarpProduct& p, ArrayRef<Value> values, Value result) {
  Type out = cast<MemRefType>(result.getType()).getElementType();
  onLaneZero(b, l, p.lane, [&] {
    for (auto [r, v] : llvm::enumerate(values))
      memref::StoreOp::create(b, l, roundTo(b, l, v, out), result,
                              ValueRange{p.batch, cIndex(b, l, static_cast<int64_t>(r)), p.col});
  });
}

// Lane 0 computing the epilogue at column p.col of every row, from each
// product's totals (f32, one per row) rounded to its type `types[i]`.
void storeEpilogueColumn(OpBuilder& b, Location l, const WarpProduct& p, ArrayRef<SmallVector<Value>> totals,
                         ArrayRef<Type> types, int64_t n, const Epilogue& epilogue) {
  onLaneZero(b, l, p.lane, [&] {
    for (size_t r = 0; r < totals.front().size(); ++r) {
      SmallVector<Value> values;
      for (size_t i = 0; i < totals.size(); ++i) values.push_back(roundTo(b, l, totals[i][r], types[i]));
      Value linear = arith::AddIOp::create(b, l, cIndex(b, l, static_cast<int64_t>(r) * n), p.col);
      storeEpilogue(b, l, epilogue, values, linear);
    }
  });
}

// One warp's output column p.col of every row: the lanes' sums and the
// butterfly, every lane's f32 totals (one per row).
SmallVector<Value> warpTotals(OpBuilder& b, Location l, const WarpProduct& p, int64_t rows, int64_t k) {
  Type weight = cast<MemRefType>(p.w.getType()).getElementType();
  int64_t width = loadWidth(weight, k);
  Value zero = arith::ConstantOp::create(b, l, b.getF32FloatAttr(0.0f));
  SmallVector<Value> sums;
  if (width == 1) {
    sums = laneSums(b, l, p, 0, k, SmallVector<Value>(rows, zero));
  } else {
    // Views whose start breaks the loads' alignment (the same for the
    // whole warp) take single loads.
    Value aligned = arith::AndIOp::create(b, l, startsAligned(b, l, p.x, width), startsAligned(b, l, p.w, width));
    auto branch = scf::IfOp::create(b, l, SmallVector<Type>(rows, b.getF32Type()), aligned, /*withElse=*/true);
    b.setInsertionPointToStart(branch.thenBlock());
    scf::YieldOp::create(b, l, laneVectorSums(b, l, p, rows, k, width));
    b.setInsertionPointToStart(branch.elseBlock());
    scf::YieldOp::create(b, l, laneSums(b, l, p, 0, k, SmallVector<Value>(rows, zero)));
    b.setInsertionPointAfter(branch);
    sums.assign(branch.getResults().begin(), branch.getResults().end());
  }
  SmallVector<Value> totals;
  for (Value s : sums)
    totals.push_back(gpu::SubgroupReduceOp::create(b, l, s, gpu::AllReduceOperation::ADD, /*uniform=*/true));
  return totals;
}

// The same, lane 0's rounded stores into `result` [batch, rows, N].
void emitWarpColumn(OpBuilder& b, Location l, const WarpProduct& p, int64_t rows, int64_t k, Value result) {
  storeColumn(b, l, p, warpTotals(b, l, p, rows, k), result);
}

// keep_columns as a generator (fuse_elementwise.h: it reads only scalars
// such as `pos`, and its indices) seen through reshapes: decode's mask
// `key <= pos`, which the scores kernel then computes where it reads it,
// with no launch or buffer of its own. Null for any other mask.
linalg::GenericOp maskGenerator(Value keep) {
  Value v = keep;
  for (Operation* def = v.getDefiningOp(); def; def = v.getDefiningOp()) {
    if (auto e = dyn_cast<tensor::ExpandShapeOp>(def)) v = e.getSrc();
    else if (auto c = dyn_cast<tensor::CollapseShapeOp>(def)) v = c.getSrc();
    else break;
  }
  auto gen = v.getDefiningOp<linalg::GenericOp>();
  if (!gen || !generator(gen) || gen->getNumResults() != 1 ||
      !cast<RankedTensorType>(gen->getResult(0).getType()).hasStaticShape())
    return {};
  OpOperand* init = gen.getDpsInitOperand(0);
  if (!gen.getMatchingIndexingMap(init).isIdentity() || !gen.getMatchingBlockArgument(init).use_empty()) return {};
  return gen;
}

// The mask's element keep[row, col] (keep: i1 [R, N]): loaded from its
// buffer, or computed by its generator at the same row-major position
// (reshapes keep the row-major order).
struct KeepMask {
  Value buffer;                    // the mask's buffer, or
  mutable linalg::GenericOp made;  // its generator (an op handle: its accessors are not const)
  int64_t rows, n;

  Value at(OpBuilder& b, Location l, Value row, Value col) const {
    if (buffer) return memref::LoadOp::create(b, l, buffer, ValueRange{row, col});
    ArrayRef<int64_t> shape = cast<RankedTensorType>(made->getResult(0).getType()).getShape();
    Value linear = arith::AddIOp::create(b, l, arith::MulIOp::create(b, l, row, cIndex(b, l, n)), col);
    return computeAt(b, l, made, 0, delinearize(b, l, linear, shape));
  }
};

// True when some keep[r, col] is set.
Value anyKept(OpBuilder& b, Location l, const KeepMask& keep, Value col) {
  Value none = arith::ConstantIntOp::create(b, l, b.getI1Type(), 0);
  auto loop = scf::ForOp::create(b, l, cIndex(b, l, 0), cIndex(b, l, keep.rows), cIndex(b, l, 1), ValueRange{none},
                                 [&](OpBuilder& lb, Location ll, Value row, ValueRange seen) {
    Value kept = keep.at(lb, ll, row, col);
    scf::YieldOp::create(lb, ll, Value(arith::OrIOp::create(lb, ll, seen[0], kept)));
  });
  return loop.getResult(0);
}

// How many columns a warp of a product with keep_columns takes.
constexpr int64_t kColumnsPerMaskedWarp = 8;

// a [.., K] x w [N, K] (transpose_b), or batched a [..L, M, K] x
// w [..L, N, K]: a warp per (matrix, column n). With keep_columns, a warp
// per (matrix, slot) takes every slots-th column (kColumnsPerMaskedWarp
// each), and a column no row keeps is stored as 0 without reading w's
// row: attention's scores for the keys past the position (the whole warp
// branches alike).
// With `splits` (split_attention.cpp), a warp takes splits->keys
// consecutive columns instead, when splits->read, and then builds
// splits->after.
void lowerProduct(ir::MatmulOp op, const ScoreSplits* splits = nullptr) {
  OpBuilder b(op);
  Location l = op.getLoc();
  auto out = cast<RankedTensorType>(op.getType());
  ProductShape shape = shapeOf(op);
  auto [batched, batch, rows, k, n] = shape;
  auto [x, w] = stackOperands(b, l, op, shape);
  Value mask = op.getKeepColumns();
  std::optional<KeepMask> keep;
  if (mask) {
    int64_t maskRows = cast<RankedTensorType>(mask.getType()).getShape()[0];
    linalg::GenericOp made = maskGenerator(mask);
    keep = made ? KeepMask{Value(), made, maskRows, n} : KeepMask{readBuffer(b, l, mask), {}, maskRows, n};
  }
  if (!mask && !batched)
    if (std::optional<Epilogue> epilogue = findEpilogue({op.getResult()}, op)) {
      allocateEpilogue(b, l, *epilogue);
      {
        OpBuilder::InsertionGuard guard(b);
        auto par = parallelLoop(b, l, {batch, n, kWarpSize}, "gemv");
        WarpProduct p{x, w, par.getInductionVars()[0], par.getInductionVars()[1], par.getInductionVars()[2]};
        storeEpilogueColumn(b, l, p, {warpTotals(b, l, p, rows, k)}, {out.getElementType()}, n, *epilogue);
      }
      finishEpilogue(b, l, *epilogue);
      op.erase();
      return;
    }
  Value result = memref::AllocOp::create(b, l, MemRefType::get({batch, rows, n}, out.getElementType()));
  {
    OpBuilder::InsertionGuard guard(b);
    if (!keep) {
      auto par = parallelLoop(b, l, {batch, n, kWarpSize}, batched ? "attention" : "gemv");
      WarpProduct p{x, w, par.getInductionVars()[0], par.getInductionVars()[1], par.getInductionVars()[2]};
      emitWarpColumn(b, l, p, rows, k, result);
    } else {
      // A warp per (matrix, slot) takes the columns slot, slot + slots, ..:
      // decode's scores cover every cached key, most past the position, and
      // a warp each (65,536 warps a layer on the 8B card, 8 waves of an
      // H200) was mostly warps that only stored zeros. The keys seen are a
      // prefix, so striding spreads them over the slots.
      int64_t perWarp = splits ? splits->keys : kColumnsPerMaskedWarp;
      int64_t slots = (n + perWarp - 1) / perWarp;
      auto par = parallelLoop(b, l, {batch, slots, kWarpSize}, "attention");
      Value slot = par.getInductionVars()[1];
      Value first = splits ? Value(arith::MulIOp::create(b, l, slot, cIndex(b, l, perWarp))) : slot;
      Value end = splits ? Value(arith::MinUIOp::create(b, l, arith::AddIOp::create(b, l, first, cIndex(b, l, perWarp)),
                                                        cIndex(b, l, n)))
                         : cIndex(b, l, n);
      if (splits) {
        // A split nothing reads (past the position) stores nothing.
        auto read = scf::IfOp::create(b, l, splits->read(b, l, first), /*withElseRegion=*/false);
        b.setInsertionPoint(read.thenBlock()->getTerminator());
      }
      auto columns = scf::ForOp::create(b, l, first, end, cIndex(b, l, splits ? 1 : slots));
      if (splits) {
        OpBuilder::InsertionGuard after(b);
        b.setInsertionPointAfter(columns);
        splits->after(b, l, par.getInductionVars()[0], first, par.getInductionVars()[2], result);
      }
      b.setInsertionPoint(columns.getBody()->getTerminator());
      WarpProduct p{x, w, par.getInductionVars()[0], columns.getInductionVar(), par.getInductionVars()[2]};
      auto branch = scf::IfOp::create(b, l, anyKept(b, l, *keep, p.col), /*withElseRegion=*/true);
      b.setInsertionPoint(branch.thenBlock()->getTerminator());
      emitWarpColumn(b, l, p, rows, k, result);
      b.setInsertionPoint(branch.elseBlock()->getTerminator());
      Value zero = arith::ConstantOp::create(b, l, b.getZeroAttr(out.getElementType()));
      storeColumn(b, l, p, SmallVector<Value>(rows, zero), result);
    }
  }
  op.getResult().replaceAllUsesWith(resultTensor(b, l, result, batched, out));
  op.erase();
  if (mask) eraseUnread(mask);
}

// Products of one x with several weights, when one elementwise consumer
// reads every result at its own element (SwiGLU's silu(gate) * up;
// product_epilogues.h) and they have the same columns: a warp computes
// column n of each and lane 0 the consumer's element, one launch over n
// columns and no buffer for the products. False, building nothing, otherwise.
bool lowerPairedProducts(ArrayRef<ir::MatmulOp> ops, Operation* at) {
  ir::MatmulOp first = ops.front();
  int64_t n = shapeOf(first).n;
  if (llvm::any_of(ops, [&](ir::MatmulOp op) { return shapeOf(op).n != n; })) return false;
  SmallVector<Value> results;
  SmallVector<Type> types;
  for (ir::MatmulOp op : ops) {
    results.push_back(op.getResult());
    types.push_back(op.getType().getElementType());
  }
  std::optional<Epilogue> epilogue = findEpilogue(results, at);
  if (!epilogue) return false;
  OpBuilder b(at);
  Location l = first.getLoc();
  auto [batched, batch, rows, k, n0] = shapeOf(first);
  Value x = stackBuffer(b, l, first.getA(), false, 1, rows, k);
  SmallVector<Value> weights;
  for (ir::MatmulOp op : ops) weights.push_back(stackBuffer(b, l, op.getB(), false, 1, n, k));
  allocateEpilogue(b, l, *epilogue);
  {
    OpBuilder::InsertionGuard guard(b);
    auto par = parallelLoop(b, l, {1, n, kWarpSize}, "gemv");
    SmallVector<SmallVector<Value>> totals;
    WarpProduct p{x, Value(), par.getInductionVars()[0], par.getInductionVars()[1], par.getInductionVars()[2]};
    for (Value weight : weights) {
      p.w = weight;
      totals.push_back(warpTotals(b, l, p, rows, k));
    }
    storeEpilogueColumn(b, l, p, totals, types, n, *epilogue);
  }
  finishEpilogue(b, l, *epilogue);
  for (ir::MatmulOp op : ops) op.erase();
  return true;
}

// Products of one x with several weights (a layer's q, k and v; gate and
// up) as one launch over all their columns, each warp's column picking its
// weight by a branch the whole warp takes: one launch instead of several,
// and the small ones (k, v) no longer leave most of the GPU idle. At `at`,
// which every operand reaches and every result's use follows.
void lowerFusedProducts(SmallVector<ir::MatmulOp> ops, Operation* at) {
  if (lowerPairedProducts(ops, at)) return;
  OpBuilder b(at);
  Location l = ops.front().getLoc();
  auto [batched, batch, rows, k, n0] = shapeOf(ops.front());
  Value x = stackBuffer(b, l, ops.front().getA(), false, 1, rows, k);
  SmallVector<Value> weights, results;
  SmallVector<int64_t> ends;
  int64_t total = 0;
  for (ir::MatmulOp op : ops) {
    int64_t n = shapeOf(op).n;
    weights.push_back(stackBuffer(b, l, op.getB(), false, 1, n, k));
    results.push_back(memref::AllocOp::create(b, l, MemRefType::get({1, rows, n}, op.getType().getElementType())));
    ends.push_back(total += n);
  }
  {
    OpBuilder::InsertionGuard guard(b);
    auto par = parallelLoop(b, l, {1, total, kWarpSize}, "gemv");
    Value col = par.getInductionVars()[1];
    for (size_t i = 0; i < ops.size(); ++i) {
      Value local = i == 0 ? col : Value(arith::SubIOp::create(b, l, col, cIndex(b, l, ends[i - 1])));
      WarpProduct p{x, weights[i], par.getInductionVars()[0], local, par.getInductionVars()[2]};
      if (i + 1 == ops.size()) {
        emitWarpColumn(b, l, p, rows, k, results[i]);
        break;
      }
      Value mine = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult, col, cIndex(b, l, ends[i]));
      auto branch = scf::IfOp::create(b, l, mine, /*withElseRegion=*/true);
      b.setInsertionPoint(branch.thenBlock()->getTerminator());
      emitWarpColumn(b, l, p, rows, k, results[i]);
      b.setInsertionPoint(branch.elseBlock()->getTerminator());
    }
  }
  SmallVector<Value> tensors;
  for (size_t i = 0; i < ops.size(); ++i)
    tensors.push_back(resultTensor(b, l, results[i], false, cast<RankedTensorType>(ops[i].getType())));
  for (size_t i = 0; i < ops.size(); ++i) {
    ops[i]->getResult(0).replaceAllUsesWith(tensors[i]);
    ops[i].erase();
  }
}

// Groups of decode products (transpose_b, 2-D weights) in one block that
// read the same x, each with the point its fused launch goes: the first
// product when every operand is computed before it (the weights are views
// of parameters), else the last when every result is used after it.
SmallVector<std::pair<SmallVector<ir::MatmulOp>, Operation*>> fusibleGroups(ArrayRef<ir::MatmulOp> products) {
  llvm::MapVector<std::pair<Value, Block*>, SmallVector<ir::MatmulOp>> byInput;
  for (ir::MatmulOp op : products)
    if (op.getTransposeB() && !shapeOf(op).batched && !op.getKeepColumns()) byInput[{op.getA(), op->getBlock()}].push_back(op);
  SmallVector<std::pair<SmallVector<ir::MatmulOp>, Operation*>> groups;
  for (auto& [key, ops] : byInput) {
    if (ops.size() < 2) continue;
    llvm::sort(ops, [](ir::MatmulOp a, ir::MatmulOp b) { return a->isBeforeInBlock(b); });
    Block* block = key.second;
    Operation *first = ops.front(), *last = ops.back();
    auto before = [&](Value v, Operation* point) {
      Operation* def = v.getDefiningOp();
      Operation* at = def ? block->findAncestorOpInBlock(*def) : nullptr;
      return !at || at->isBeforeInBlock(point);  // a block argument, or defined outside this block
    };
    bool operandsFirst = llvm::all_of(ops, [&](ir::MatmulOp op) {
      return llvm::all_of(op->getOperands(), [&](Value v) { return before(v, first); });
    });
    bool usesLast = llvm::all_of(ops, [&](ir::MatmulOp op) {
      return llvm::all_of(op->getUsers(), [&](Operation* user) {
        Operation* at = block->findAncestorOpInBlock(*user);
        return at && (at == last || last->isBeforeInBlock(at));
      });
    });
    if (operandsFirst) groups.push_back({ops, first});
    else if (usesLast) groups.push_back({ops, last});
  }
  return groups;
}

// How many keys (K values) one thread of a split product sums.
constexpr int64_t kSplitChunk = 128;
// How many of them it takes an iteration: their loads are issued before the
// FMAs that wait for them, so that many are in flight (a thread's keys
// otherwise cost a dependent trip to memory each). Fewer for more rows of
// a, whose values take registers too (4 rows: 8 keys).
constexpr int64_t kKeysAtOnce = 16;
int64_t keysAtOnce(int64_t rows) { return std::clamp<int64_t>(32 / std::max<int64_t>(rows, 1), 4, kKeysAtOnce); }

// a [.., K] x b [K, N], or batched a [..L, M, K] x b [..L, K, N], M small
// (attention's probabilities times the cache's values): K split into chunks
// of kSplitChunk, a thread per (matrix, chunk, n) summing its chunk for
// every row of a in f32 (neighbouring threads read neighbouring values of
// b's rows), keysAtOnce(rows) keys an iteration and then one at a time, then a
// thread per output adding the chunks' sums in order, likewise several at
// once, and rounding once. One chunk is rounded and stored by its thread.
// With skip_zero_terms, a k whose a is 0 in every row adds nothing, and a
// group of keys all of which are is not read from b.
// With `computed` (split_attention.cpp), a's values are computed where
// they are read, not loaded, and keys at or past computed->end add nothing
// (nor do the chunks past it in the chunks' sum).
void lowerSplitProduct(ir::MatmulOp op, const ComputedA* computed = nullptr) {
  OpBuilder b(op);
  Location l = op.getLoc();
  auto out = cast<RankedTensorType>(op.getType());
  ProductShape shape = shapeOf(op);
  auto [batched, batch, rows, k, n] = shape;
  Value x = computed ? Value() : stackBuffer(b, l, op.getA(), batched, batch, rows, k);
  Value w = stackBuffer(b, l, op.getB(), batched, batch, k, n);
  int64_t splits = (k + kSplitChunk - 1) / kSplitChunk;
  Value result = memref::AllocOp::create(b, l, MemRefType::get({batch, rows, n}, out.getElementType()));
  // One chunk: its sums are the result.
  Value partial = splits == 1 ? Value()
                              : memref::AllocOp::create(b, l, MemRefType::get({batch, splits, rows, n}, b.getF32Type()));
  auto rounded = [&](OpBuilder& nb, Value t) -> Value {
    return out.getElementType().isF32() ? t : arith::TruncFOp::create(nb, l, out.getElementType(), t);
  };
  Value zero = arith::ConstantOp::create(b, l, b.getF32FloatAttr(0.0f));
  bool skipZeros = op.getSkipZeroTerms();
  {
    OpBuilder::InsertionGuard guard(b);
    auto par = parallelLoop(b, l, {batch, splits, n}, "attention");
    Value mat = par.getInductionVars()[0], split = par.getInductionVars()[1], col = par.getInductionVars()[2];
    Value from = arith::MulIOp::create(b, l, split, cIndex(b, l, kSplitChunk));
    Value to = arith::MinUIOp::create(b, l, arith::AddIOp::create(b, l, from, cIndex(b, l, kSplitChunk)), cIndex(b, l, k));
    if (computed) {
      Value bound = computed->prologue(b, l, mat, col, from);
      to = arith::MaxUIOp::create(b, l, from, arith::MinUIOp::create(b, l, to, bound));
    }
    // a's values of keys [first, first + keys) for every row (key-major),
    // as loaded (or computed).
    Type aType = cast<RankedTensorType>(op.getA().getType()).getElementType();
    auto loadA = [&](OpBuilder& lb, Location ll, Value first, int64_t keys) {
      SmallVector<Value> xs;
      for (int64_t u = 0; u < keys; ++u) {
        Value at = u == 0 ? first : Value(arith::AddIOp::create(lb, ll, first, cIndex(lb, ll, u)));
        for (int64_t r = 0; r < rows; ++r)
          xs.push_back(computed ? computed->at(lb, ll, mat, r, at)
                                : Value(memref::LoadOp::create(lb, ll, x, ValueRange{mat, cIndex(lb, ll, r), at})));
      }
      return xs;
    };
    auto asF32 = [&](OpBuilder& lb, Location ll, ArrayRef<Value> xs) {
      SmallVector<Value> out;
      for (Value v : xs) out.push_back(toF32(lb, ll, v));
      return out;
    };
    // The same for a group at `first` when it starts below `hi`, else zeros
    // (nothing is read past the keys walked). A branch the whole warp takes
    // alike, holding only the loads: nothing in it waits for their values.
    auto loadAIf = [&](OpBuilder& lb, Location ll, Value first, Value hi, int64_t keys) {
      Value inside = arith::CmpIOp::create(lb, ll, arith::CmpIPredicate::ult, first, hi);
      auto branch = scf::IfOp::create(lb, ll, SmallVector<Type>(keys * rows, aType), inside, true);
      OpBuilder tb = OpBuilder::atBlockEnd(branch.thenBlock());
      scf::YieldOp::create(tb, ll, loadA(tb, ll, first, keys));
      OpBuilder eb = OpBuilder::atBlockEnd(branch.elseBlock());
      Value none = arith::ConstantOp::create(eb, ll, eb.getZeroAttr(aType));
      scf::YieldOp::create(eb, ll, SmallVector<Value>(keys * rows, none));
      return SmallVector<Value>(branch.getResults());
    };
    // The terms of keys [first, first + keys) added to `acc` in order of k,
    // with a's values `xs` (key-major); a zero term (when `nonzero` is
    // given) leaves its sum as it was.
    auto terms = [&](OpBuilder& tb, Location ll, Value first, int64_t keys, ArrayRef<Value> xs, ValueRange acc,
                     ArrayRef<Value> nonzero) {
      SmallVector<Value> ws;
      for (int64_t u = 0; u < keys; ++u) {
        Value at = u == 0 ? first : Value(arith::AddIOp::create(tb, ll, first, cIndex(tb, ll, u)));
        ws.push_back(toF32(tb, ll, memref::LoadOp::create(tb, ll, w, ValueRange{mat, at, col})));
      }
      SmallVector<Value> next(acc);
      for (int64_t u = 0; u < keys; ++u)
        for (int64_t r = 0; r < rows; ++r) {
          Value sum = math::FmaOp::create(tb, ll, xs[u * rows + r], ws[u], next[r]);
          next[r] = nonzero.empty() ? sum : Value(arith::SelectOp::create(tb, ll, nonzero[u * rows + r], sum, next[r]));
        }
      return next;
    };
    // Keys [lo, hi) in steps of `keys`: each iteration loads a's values of
    // its keys for every row and b's, then adds the terms in order of k.
    // A computed a's reads (the scores) go first too, with b's.
    auto walk = [&](Value lo, Value hi, int64_t keys, ValueRange init) -> SmallVector<Value> {
      auto loop = scf::ForOp::create(b, l, lo, hi, cIndex(b, l, keys), init,
                                     [&](OpBuilder& lb, Location ll, Value first, ValueRange acc) {
        scf::YieldOp::create(lb, ll, terms(lb, ll, first, keys, asF32(lb, ll, loadA(lb, ll, first, keys)), acc, {}));
      });
      if (computed) issueReadsFirst(loop.getBody());
      return SmallVector<Value>(loop.getResults());
    };
    // With skip_zero_terms: a group whose every key every row weighs
    // exactly 0 (attention's keys past the position) is not read from b.
    // Deciding that waits for a's values, so the next group's are loaded
    // before this group's b: they are in flight while it is read, and an
    // iteration costs one trip to memory, not two. The loop carries them.
    // Threads of a warp differ only in `col`, so the warp branches alike.
    auto walkSkipping = [&](Value lo, Value hi, int64_t keys, ValueRange init) -> SmallVector<Value> {
      SmallVector<Value> carried(init);
      llvm::append_range(carried, loadAIf(b, l, lo, hi, keys));
      auto loop = scf::ForOp::create(b, l, lo, hi, cIndex(b, l, keys), carried,
                                     [&](OpBuilder& lb, Location ll, Value first, ValueRange args) {
        ValueRange acc = args.take_front(rows);
        Value after = arith::AddIOp::create(lb, ll, first, cIndex(lb, ll, keys));
        SmallVector<Value> nextXs = loadAIf(lb, ll, after, hi, keys);
        SmallVector<Value> xs = asF32(lb, ll, SmallVector<Value>(args.drop_front(rows)));
        SmallVector<Value> nonzero;
        Value any;
        for (Value v : xs) {
          nonzero.push_back(arith::CmpFOp::create(lb, ll, arith::CmpFPredicate::UNE, v, zero));
          any = any ? Value(arith::OrIOp::create(lb, ll, any, nonzero.back())) : nonzero.back();
        }
        auto branch = scf::IfOp::create(lb, ll, SmallVector<Type>(rows, lb.getF32Type()), any, /*withElse=*/true);
        OpBuilder tb = OpBuilder::atBlockEnd(branch.thenBlock());
        scf::YieldOp::create(tb, ll, terms(tb, ll, first, keys, xs, acc, nonzero));
        OpBuilder eb = OpBuilder::atBlockEnd(branch.elseBlock());
        scf::YieldOp::create(eb, ll, acc);
        SmallVector<Value> yielded(branch.getResults());
        llvm::append_range(yielded, nextXs);
        scf::YieldOp::create(lb, ll, yielded);
      });
      return SmallVector<Value>(loop.getResults().take_front(rows));
    };
    // The chunk's keys, keysAtOnce(rows) at a time, then the rest one at a time
    // (a last chunk shorter than kSplitChunk).
    int64_t atOnce = keysAtOnce(rows);
    Value span = arith::SubIOp::create(b, l, to, from);
    Value grouped = arith::AddIOp::create(
        b, l, from,
        arith::MulIOp::create(b, l, arith::DivUIOp::create(b, l, span, cIndex(b, l, atOnce)), cIndex(b, l, atOnce)));
    // A computed a stops at its bound instead: below it, a zero term only
    // arises from underflow, and the rows of b it weighs are ones the
    // model wrote (finite).
    auto walkKeys = [&](Value lo, Value hi, int64_t keys, ValueRange init) {
      return skipZeros && !computed ? walkSkipping(lo, hi, keys, init) : walk(lo, hi, keys, init);
    };
    SmallVector<Value> groups = walkKeys(from, grouped, atOnce, SmallVector<Value>(rows, zero));
    SmallVector<Value> sums = walkKeys(grouped, to, 1, groups);
    for (int64_t r = 0; r < rows; ++r) {
      if (partial) memref::StoreOp::create(b, l, sums[r], partial, ValueRange{mat, split, cIndex(b, l, r), col});
      else memref::StoreOp::create(b, l, rounded(b, sums[r]), result, ValueRange{mat, cIndex(b, l, r), col});
    }
  }
  if (partial) {
    OpBuilder::InsertionGuard guard(b);
    auto par = parallelLoop(b, l, {batch, rows, n}, "attention");
    Value mat = par.getInductionVars()[0], row = par.getInductionVars()[1], col = par.getInductionVars()[2];
    // The chunks' sums in order, their loads several at once. With a
    // computed a, the chunks below its bound: the others' sums are 0.
    int64_t atOnce = std::min(kKeysAtOnce, splits);
    Value chunks = cIndex(b, l, splits);
    if (computed) {
      Value end = computed->end(b, l);
      chunks = arith::DivUIOp::create(b, l, arith::AddIOp::create(b, l, end, cIndex(b, l, kSplitChunk - 1)),
                                      cIndex(b, l, kSplitChunk));
    }
    Value grouped = arith::MulIOp::create(b, l, arith::DivUIOp::create(b, l, chunks, cIndex(b, l, atOnce)),
                                          cIndex(b, l, atOnce));
    auto add = [&](Value lo, Value hi, int64_t step, Value init) {
      return scf::ForOp::create(b, l, lo, hi, cIndex(b, l, step), ValueRange{init},
                                [&](OpBuilder& lb, Location ll, Value first, ValueRange acc) {
        SmallVector<Value> vs;
        for (int64_t u = 0; u < step; ++u) {
          Value at = u == 0 ? first : Value(arith::AddIOp::create(lb, ll, first, cIndex(lb, ll, u)));
          vs.push_back(memref::LoadOp::create(lb, ll, partial, ValueRange{mat, at, row, col}));
        }
        Value total = acc[0];
        for (Value v : vs) total = arith::AddFOp::create(lb, ll, total, v);
        scf::YieldOp::create(lb, ll, total);
      }).getResult(0);
    };
    Value total = add(cIndex(b, l, 0), grouped, atOnce, zero);
    if (computed && atOnce > 1) {
      // The chunks short of a group in one step, their loads at once (a
      // chunk past the bound read in bounds and not added).
      SmallVector<Value> vs, valid;
      for (int64_t u = 0; u < atOnce - 1; ++u) {
        Value at = arith::AddIOp::create(b, l, grouped, cIndex(b, l, u));
        valid.push_back(arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult, at, chunks));
        at = arith::MinUIOp::create(b, l, at, cIndex(b, l, splits - 1));
        vs.push_back(memref::LoadOp::create(b, l, partial, ValueRange{mat, at, row, col}));
      }
      for (auto [v, in] : llvm::zip(vs, valid))
        total = arith::SelectOp::create(b, l, in, arith::AddFOp::create(b, l, total, v), total);
    } else if (computed || splits % atOnce != 0) {
      total = add(grouped, chunks, 1, total);
    }
    memref::StoreOp::create(b, l, rounded(b, total), result, ValueRange{mat, row, col});
  }
  op.getResult().replaceAllUsesWith(resultTensor(b, l, result, batched, out));
  op.erase();
}

// True when `op` and what it holds only read memory (a slice the emulation
// may run again for another lane).
bool readsOnly(Operation* op) {
  std::optional<SmallVector<MemoryEffects::EffectInstance>> effects = getEffectsRecursively(op);
  return effects && llvm::all_of(*effects, [](const MemoryEffects::EffectInstance& e) {
           return isa<MemoryEffects::Read>(e.getEffect());
         });
}

// `v` as another lane computes it: the ops of its slice inside `launch`
// cloned at b's insertion point, with `map` holding the lane's thread id.
Value recompute(Value v, Operation* launch, OpBuilder& b, IRMapping& map) {
  if (Value known = map.lookupOrNull(v)) return known;
  Operation* def = v.getDefiningOp();
  // Defined outside the kernel, or a block argument uniform across the warp
  // (a block id, an enclosing loop's index): the same for every lane.
  if (!def || !launch->isProperAncestor(def)) return v;
  if (!readsOnly(def)) {
    def->emitError("cuda-emulated: a warp reduction of a value computed with side effects");
    return v;
  }
  for (Value o : def->getOperands()) recompute(o, launch, b, map);
  llvm::SetVector<Value> above;
  for (Region& r : def->getRegions()) getUsedValuesDefinedAbove(r, above);
  for (Value o : above) recompute(o, launch, b, map);
  b.clone(*def, map);
  return map.lookup(v);
}


}  // namespace

void eraseUnread(Value v) {
  while (Operation* def = v.getDefiningOp()) {
    if (!def->use_empty() || !isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp, linalg::GenericOp>(def)) return;
    v = isa<linalg::GenericOp>(def) ? Value() : def->getOperand(0);
    def->erase();
    if (!v) return;
  }
}

void lowerMaskedScores(ir::MatmulOp op, const ScoreSplits& splits) { lowerProduct(op, &splits); }

void lowerComputedSplitProduct(ir::MatmulOp op, const ComputedA& a) { lowerSplitProduct(op, &a); }

void lowerWarpKernels(ModuleOp module, const transforms::SharedOptions& options) {
  SmallVector<ir::MatmulOp> products;
  module.walk([&](Operation* op) {
    if (transforms::targetKeepsDecodeProduct(op, options)) products.push_back(cast<ir::MatmulOp>(op));
  });
  // Attention's softmax between two of them first: those two are lowered with it.
  llvm::DenseSet<Operation*> lowered = lowerSplitAttention(products, options);
  llvm::erase_if(products, [&](ir::MatmulOp op) { return lowered.contains(op); });
  llvm::DenseSet<Operation*> fused;
  for (auto& [group, at] : fusibleGroups(products)) {
    for (ir::MatmulOp op : group) fused.insert(op);
    lowerFusedProducts(group, at);
  }
  for (ir::MatmulOp op : products) {
    if (fused.contains(op)) continue;
    op.getTransposeB() ? lowerProduct(op) : lowerSplitProduct(op);
  }
}

void lowerWarpReductionsToShuffles(ModuleOp module) {
  RewritePatternSet patterns(module.getContext());
  populateGpuLowerSubgroupReduceToShufflePatterns(patterns, kWarpSize);
  FrozenRewritePatternSet frozen(std::move(patterns));
  for (auto kernels : module.getOps<gpu::GPUModuleOp>())
    if (failed(applyPatternsGreedily(kernels, frozen))) kernels.emitError("lowering warp reductions failed");
}

void emulateWarpReductions(Operation* op) {
  auto launch = cast<gpu::LaunchOp>(op);
  SmallVector<gpu::SubgroupReduceOp> reductions;
  launch.walk([&](gpu::SubgroupReduceOp r) { reductions.push_back(r); });
  for (gpu::SubgroupReduceOp reduce : reductions) {
    OpBuilder b(reduce);
    Location l = reduce.getLoc();
    Type t = reduce.getType();
    Value tid = launch.getThreadIds().x;
    Value base = arith::SubIOp::create(b, l, tid, arith::RemUIOp::create(b, l, tid, cIndex(b, l, kWarpSize)));
    Value lanes = memref::AllocaOp::create(b, l, MemRefType::get({kWarpSize}, t));
    scf::ForOp::create(b, l, cIndex(b, l, 0), cIndex(b, l, kWarpSize), cIndex(b, l, 1), ValueRange{},
                       [&](OpBuilder& lb, Location ll, Value lane, ValueRange) {
      IRMapping map;
      map.map(tid, arith::AddIOp::create(lb, ll, base, lane).getResult());
      Value v = recompute(reduce.getValue(), launch, lb, map);
      memref::StoreOp::create(lb, ll, v, lanes, ValueRange{lane});
      scf::YieldOp::create(lb, ll);
    });
    // The butterfly at offsets 1, 2, .., 16 leaves every lane the sum of
    // neighbouring pairs, then of neighbouring pairs of those: a pairwise tree.
    SmallVector<Value> level;
    for (int64_t i = 0; i < kWarpSize; ++i) level.push_back(memref::LoadOp::create(b, l, lanes, ValueRange{cIndex(b, l, i)}));
    while (level.size() > 1) {
      SmallVector<Value> next;
      for (size_t i = 0; i < level.size(); i += 2) next.push_back(combine(b, l, reduce.getOp(), level[i], level[i + 1]));
      if (!next.front()) {
        reduce.emitError("cuda-emulated: no emulation of this warp reduction");
        return;
      }
      level = std::move(next);
    }
    reduce.replaceAllUsesWith(level.front());
    reduce.erase();
  }
}

}  // namespace linnet::cuda
