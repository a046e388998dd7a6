// Row reductions as warp kernels (warp_kernels.h), with the elementwise work
// around them in the same kernel: a norm (square, mean, rsqrt, scale) or a
// softmax step (max then exp, sum then divide) is one launch instead of three
// or four. On a GPU each launch costs about a microsecond however little it
// does, and decode runs a few of these per layer.
#include <cmath>
#include <functional>

#include "ir/dialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "targets/cuda/fuse_elementwise.h"
#include "targets/cuda/masked_columns.h"
#include "targets/cuda/product_buffers.h"
#include "targets/cuda/row_kernels.h"
#include "targets/cuda/warp_helpers.h"
#include "targets/cuda/warp_kernels.h"

namespace linnet::cuda {

using namespace mlir;

bool computableAtIndex(linalg::GenericOp g) {
  if (!g || !plainElementwise(g) || g.getNumDpsInits() != 1 || g->getNumResults() != 1) return false;
  if (!g.getMatchingIndexingMap(g.getDpsInitOperand(0)).isIdentity()) return false;
  Block& body = g.getRegion().front();
  if (!body.getArguments().back().use_empty()) return false;
  for (OpOperand* in : g.getDpsInputOperands()) {
    if (!isa<RankedTensorType>(in->get().getType()) && !in->get().getType().isIntOrIndexOrFloat()) return false;
    for (AffineExpr e : g.getMatchingIndexingMap(in).getResults()) {
      auto c = dyn_cast<AffineConstantExpr>(e);
      if (!isa<AffineDimExpr>(e) && !(c && c.getValue() == 0)) return false;
    }
  }
  return true;
}

void addBuffers(OpBuilder& b, Location l, linalg::GenericOp g, Buffers& buffers, const Given& given) {
  for (OpOperand* in : g.getDpsInputOperands())
    if (!given.count(in->get()) && isa<RankedTensorType>(in->get().getType()) && !buffers.count(in->get()))
      buffers[in->get()] = readBuffer(b, l, in->get());
}

std::function<Value(OpBuilder&, Value)> scalarReader(const Buffers& buffers, Location l) {
  return [&buffers, l](OpBuilder& b, Value t) -> Value {
    Value buffer = buffers.lookup(t);
    return buffer ? Value(memref::LoadOp::create(b, l, buffer, ValueRange{})) : Value();
  };
}

namespace {

// `e`'s element read from `buffer`, which holds e's tensor in the same
// row-major order (its shape may differ: a kernel's own [batch, rows, n]).
Value readBack(OpBuilder& b, Location l, tensor::ExtractOp e, IRMapping& map, Value buffer) {
  SmallVector<Value> at;
  for (Value i : e.getIndices()) at.push_back(map.lookupOrDefault(i));
  ArrayRef<int64_t> from = e.getTensor().getType().getShape();
  ArrayRef<int64_t> to = cast<MemRefType>(buffer.getType()).getShape();
  if (from != to) {
    Value linear = cIndex(b, l, 0);
    for (auto [i, n] : llvm::zip(at, from))
      linear = arith::AddIOp::create(b, l, arith::MulIOp::create(b, l, linear, cIndex(b, l, n)), i);
    at = delinearize(b, l, linear, to);
  }
  return memref::LoadOp::create(b, l, buffer, at);
}

}  // namespace

Value computeAt(OpBuilder& b, Location l, linalg::GenericOp g, ArrayRef<Value> idx, const Buffers& buffers,
                const Given& given, Operation* masked) {
  Block& body = g.getRegion().front();
  IRMapping map;
  for (OpOperand* in : g.getDpsInputOperands()) {
    Value v = in->get();
    if (auto known = given.find(v); known != given.end()) {
      v = known->second;
    } else if (isa<RankedTensorType>(v.getType())) {
      SmallVector<Value> at;
      for (AffineExpr e : g.getMatchingIndexingMap(in).getResults())
        at.push_back(isa<AffineDimExpr>(e) ? idx[cast<AffineDimExpr>(e).getPosition()] : cIndex(b, l, 0));
      v = memref::LoadOp::create(b, l, buffers.lookup(v), at);
    }
    map.map(body.getArgument(in->getOperandNumber()), v);
  }
  for (Operation& op : body.without_terminator()) {
    if (auto index = dyn_cast<linalg::IndexOp>(op)) map.map(index.getResult(), idx[index.getDim()]);
    else if (&op == masked) map.map(op.getResult(0), map.lookupOrDefault(cast<arith::SelectOp>(op).getFalseValue()));
    else if (auto e = dyn_cast<tensor::ExtractOp>(op); e && buffers.count(e.getTensor()))
      map.map(e.getResult(), readBack(b, l, e, map, buffers.lookup(e.getTensor())));
    else b.clone(op, map);
  }
  return map.lookupOrDefault(body.getTerminator()->getOperand(0));
}

SmallVector<Value> rowIndices(OpBuilder& b, Location l, Value row, ArrayRef<int64_t> lead) {
  SmallVector<Value> idx(lead.size());
  Value rest = row;
  for (int64_t d = static_cast<int64_t>(lead.size()) - 1; d > 0; --d) {
    idx[d] = arith::RemUIOp::create(b, l, rest, cIndex(b, l, lead[d]));
    rest = arith::DivUIOp::create(b, l, rest, cIndex(b, l, lead[d]));
  }
  if (!lead.empty()) idx[0] = rest;
  return idx;
}


namespace {

// True when `map` reads, at x's index (lead.., k), the per-row value of
// `rowType` ([..lead, 1] with keepdims, else [..lead]).
bool broadcastsAlongRow(AffineMap map, RankedTensorType rowType, int64_t leadRank) {
  if (map.getNumResults() != rowType.getRank() || map.getNumDims() != leadRank + 1) return false;
  for (int64_t d = 0; d < leadRank; ++d)
    if (map.getResult(d) != getAffineDimExpr(d, map.getContext())) return false;
  if (rowType.getRank() == leadRank) return true;
  auto c = dyn_cast<AffineConstantExpr>(map.getResult(leadRank));
  return rowType.getRank() == leadRank + 1 && c && c.getValue() == 0;
}

}  // namespace

linalg::GenericOp epilogueOf(ir::ReduceOp op) {
  auto xType = cast<RankedTensorType>(op.getX().getType());
  auto rowType = cast<RankedTensorType>(op.getType());
  Value r = op.getResult();
  if (!r.hasOneUse()) return {};
  OpOperand& use = *r.getUses().begin();
  auto g = dyn_cast<linalg::GenericOp>(use.getOwner());
  if (!computableAtIndex(g) || g->getBlock() != op->getBlock() || !g.isDpsInput(&use)) return {};
  auto outType = cast<RankedTensorType>(g->getResult(0).getType());
  if (outType.getShape() != xType.getShape() ||
      !broadcastsAlongRow(g.getMatchingIndexingMap(&use), rowType, xType.getRank() - 1))
    return {};
  return g;
}

ir::ReduceOp leadingReduction(ir::ReduceOp second, linalg::GenericOp producer, linalg::GenericOp epilogue,
                              const transforms::SharedOptions& options) {
  if (!producer || !producer->hasOneUse()) return {};
  auto xType = cast<RankedTensorType>(second.getX().getType());
  for (OpOperand* in : producer.getDpsInputOperands()) {
    auto first = in->get().getDefiningOp<ir::ReduceOp>();
    if (!first || !transforms::targetKeepsRowReduction(first, options) || first->getBlock() != second->getBlock() ||
        first.getX().getType() != xType)
      continue;
    auto rowType = cast<RankedTensorType>(first.getType());
    bool onlyHere = true;
    for (OpOperand& use : first.getResult().getUses()) {
      auto g = dyn_cast<linalg::GenericOp>(use.getOwner());
      onlyHere = onlyHere && (g == producer || (epilogue && g == epilogue)) && g.isDpsInput(&use) &&
                 broadcastsAlongRow(g.getMatchingIndexingMap(&use), rowType, xType.getRank() - 1);
    }
    if (onlyHere) return first;
  }
  return {};
}

namespace {

// How many of its columns a lane takes an iteration. A row's warp has no
// other warps to hide the latency of its loads behind (decode's norms are
// one warp in all), so each iteration issues the loads of all its columns
// before the work that waits for them: that many are in flight.
constexpr int64_t kColumnsAtOnce = 16;
// A kernel of at most kFewRows rows takes more, up to kLoadsInFlight loads
// a lane an iteration: its warps are all the GPU runs (decode's norms are
// one warp, its softmax a warp a head), so nothing else hides their
// latency, and registers are plenty. A kernel of many rows (prefill's) has
// other warps to run while one waits.
constexpr int64_t kFewRows = 64;
constexpr int64_t kLoadsInFlight = 96;

// How many loads a column costs `g`: its inputs read at the column (a
// row's value or a scalar is read once, not per column) and the reads in
// its body of a tensor with axes (one read through a reshape or a slice).
int64_t readsPerColumn(linalg::GenericOp g) {
  if (!g) return 1;
  int64_t reads = 0;
  for (OpOperand* in : g.getDpsInputOperands()) {
    AffineMap map = g.getMatchingIndexingMap(in);
    if (map.getNumDims() > 0 && map.isFunctionOfDim(map.getNumDims() - 1)) ++reads;
  }
  g.getRegion().walk([&](tensor::ExtractOp e) { reads += !e.getIndices().empty(); });
  return std::max<int64_t>(reads, 1);
}

// Columns a lane takes an iteration in a kernel of `rows` rows whose
// columns each cost `reads` loads: kColumnsAtOnce, doubled while a kernel
// of few rows stays within kLoadsInFlight.
int64_t columnsAtOnce(int64_t rows, int64_t reads) {
  int64_t n = kColumnsAtOnce;
  if (rows <= kFewRows)
    while (2 * n * reads <= kLoadsInFlight) n *= 2;
  return n;
}

}  // namespace

void issueLoadsFirst(Block* block) {
  // Constants first (a load's indices are often constants made beside it).
  SmallVector<Operation*> constants;
  for (Operation& op : *block)
    if (op.hasTrait<OpTrait::ConstantLike>()) constants.push_back(&op);
  for (Operation* c : llvm::reverse(constants)) c->moveBefore(&block->front());
  // Reads of buffers, and of tensors (an index comprehension's, which
  // bufferization makes loads).
  SmallVector<Operation*> loads;
  for (Operation& op : *block)
    if (isa<memref::LoadOp, tensor::ExtractOp>(op)) loads.push_back(&op);
  for (Operation* load : loads) {
    Operation* after = nullptr;
    for (Value v : load->getOperands())
      if (Operation* def = v.getDefiningOp(); def && def->getBlock() == block && (!after || after->isBeforeInBlock(def)))
        after = def;
    if (after) load->moveAfter(after);
    else load->moveBefore(&block->front());
  }
}

void issueReadsFirst(Block* block) {
  SmallVector<Operation*> reads;
  for (Operation& op : *block)
    if (isa<memref::LoadOp, tensor::ExtractOp>(op)) reads.push_back(&op);
  Operation* last = nullptr;  // the last op moved to the front
  llvm::DenseSet<Operation*> moved;
  std::function<void(Operation*)> moveUp = [&](Operation* op) {
    if (moved.contains(op)) return;
    for (Value v : op->getOperands())
      if (Operation* def = v.getDefiningOp(); def && def->getBlock() == block) moveUp(def);
    if (last) op->moveAfter(last);
    else op->moveBefore(&block->front());
    last = op;
    moved.insert(op);
  };
  for (Operation* read : reads) {
    bool pure = true;
    for (Value v : read->getOperands())
      if (Operation* def = v.getDefiningOp(); def && def->getBlock() == block)
        pure = pure && isPure(def) && def->getNumRegions() == 0;
    if (pure) moveUp(read);
  }
}

namespace {

// How many of the lane's columns lane, lane + 32, .. are below `end`:
// ceil((end - lane) / 32), none when end <= lane.
Value columnsBelow(OpBuilder& b, Location l, Value lane, Value end) {
  Value above = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ugt, end, lane);
  Value span = arith::SelectOp::create(b, l, above, arith::SubIOp::create(b, l, end, lane), cIndex(b, l, 0));
  return arith::DivUIOp::create(b, l, arith::AddIOp::create(b, l, span, cIndex(b, l, kWarpSize - 1)),
                                cIndex(b, l, kWarpSize));
}

}  // namespace

SmallVector<Value> overColumns(OpBuilder& b, Location l, Value lane, int64_t k, int64_t atOnce, ValueRange init,
                               const ColumnStep& step, Value end) {
  int64_t perLane = k / kWarpSize;  // every lane has at least this many
  atOnce = std::min(atOnce, std::max<int64_t>(perLane, 1));
  int64_t grouped = perLane / atOnce * atOnce * kWarpSize;
  SmallVector<Value> carried(init);
  // Iterations from `from` below `to`, `columns` of the lane's an iteration;
  // with `bound`, those at or past it masked, and with `clamp` read at most
  // at column k - 1 (without, every column read must be below k).
  auto walk = [&](Value from, Value to, int64_t columns, Value bound, bool clamp) {
    auto loop = scf::ForOp::create(b, l, from, to, cIndex(b, l, columns * kWarpSize), carried,
                                   [&](OpBuilder& lb, Location ll, Value base, ValueRange acc) {
      SmallVector<Value> cols = {base}, valid;
      for (int64_t u = 1; u < columns; ++u)
        cols.push_back(arith::AddIOp::create(lb, ll, base, cIndex(lb, ll, u * kWarpSize)));
      if (bound)
        for (Value& col : cols) {
          valid.push_back(arith::CmpIOp::create(lb, ll, arith::CmpIPredicate::ult, col, bound));
          if (clamp) col = arith::MinUIOp::create(lb, ll, col, cIndex(lb, ll, k - 1));
        }
      scf::YieldOp::create(lb, ll, step(lb, ll, cols, valid, acc));
      issueLoadsFirst(lb.getBlock());
    });
    carried.assign(loop.getResults().begin(), loop.getResults().end());
  };
  if (end) {
    // This lane's columns below `end`: in groups while whole, then the
    // fewer than atOnce left (an iteration when there are any).
    Value count = columnsBelow(b, l, lane, end);
    Value groups = arith::DivUIOp::create(b, l, count, cIndex(b, l, atOnce));
    Value rest = arith::AddIOp::create(b, l, lane,
                                       arith::MulIOp::create(b, l, groups, cIndex(b, l, atOnce * kWarpSize)));
    walk(lane, rest, atOnce, Value(), false);
    // The masked iteration reads no column at or past k when k is whole
    // groups: it runs only when the lane has fewer than its k / 32
    // columns below end, so its group is one of those k holds. Else the
    // reads are clamped (an address a column instead of one a lane).
    bool whole = k % (atOnce * kWarpSize) == 0;
    if (atOnce > 1) walk(rest, end, atOnce, end, !whole);
    else walk(rest, end, 1, Value(), false);
    return carried;
  }
  Value rest = lane;
  if (grouped > 0) {
    rest = arith::AddIOp::create(b, l, lane, cIndex(b, l, grouped));
    walk(lane, rest, atOnce, Value(), false);
  }
  // The columns past the groups: at most ceil((k - grouped) / 32) a lane, in
  // one iteration (none for a lane with none), masked where k is not whole
  // warps.
  if (int64_t left = k - grouped; left > 0) {
    int64_t columns = (left + kWarpSize - 1) / kWarpSize;
    bool partial = left % kWarpSize != 0;
    walk(rest, cIndex(b, l, k), columns, partial ? cIndex(b, l, k) : Value(), partial);
  }
  return carried;
}

namespace {

// This lane's first column at or past `end`.
Value firstColumnFrom(OpBuilder& b, Location l, Value lane, Value end) {
  return arith::AddIOp::create(b, l, lane,
                               arith::MulIOp::create(b, l, columnsBelow(b, l, lane, end), cIndex(b, l, kWarpSize)));
}

// One row's fold in a warp: lane l folds k = l, l + 32, .. in f32 (coalesced
// reads, in that order) the value `at` gives for each column, the 32
// partial results combined by the butterfly (a mean divided by K, as the
// shared lowering does), rounded to `op`'s result type once. Every lane has
// the result.
Value foldRow(OpBuilder& b, Location l, ir::ReduceOp op, Value lane, int64_t k, int64_t atOnce,
              const std::function<Value(OpBuilder&, Location, Value)>& at, Value end = {}) {
  using K = ir::ReduceKind;
  K kind = op.getKind();
  float start = kind == K::Max ? -INFINITY : kind == K::Min ? INFINITY : 0.0f;
  auto warpKind = kind == K::Max   ? gpu::AllReduceOperation::MAXNUMF
                  : kind == K::Min ? gpu::AllReduceOperation::MINNUMF
                                   : gpu::AllReduceOperation::ADD;
  Value init = arith::ConstantOp::create(b, l, b.getF32FloatAttr(start));
  Value partial = overColumns(b, l, lane, k, atOnce, ValueRange{init},
                              [&](OpBuilder& lb, Location ll, ArrayRef<Value> cols, ArrayRef<Value> valid,
                                  ValueRange acc) {
    SmallVector<Value> values;
    for (Value col : cols) values.push_back(toF32(lb, ll, at(lb, ll, col)));
    // A masked column folds the fold's start, which changes no value.
    for (size_t u = 0; u < valid.size(); ++u) values[u] = arith::SelectOp::create(lb, ll, valid[u], values[u], init);
    Value folded = acc[0];
    for (Value v : values) folded = combine(lb, ll, warpKind, folded, v);
    return SmallVector<Value>{folded};
  }, end).front();
  Value total = gpu::SubgroupReduceOp::create(b, l, partial, warpKind, /*uniform=*/true);
  if (kind == K::Mean)
    total = arith::DivFOp::create(b, l, total,
                                  arith::ConstantOp::create(b, l, b.getF32FloatAttr(static_cast<float>(k))));
  Type t = cast<RankedTensorType>(op.getType()).getElementType();
  return t.isF32() ? total : Value(arith::TruncFOp::create(b, l, t, total));
}

// A reduction over the last axis of x [.., K]: a warp per row folding it
// (foldRow). When x is a plain elementwise generic, its value at each index
// is computed where it is read (the norm's square); when an epilogue
// follows, every lane has the row's value and writes its share of the
// consumer's row; otherwise lane 0 stores the row's value. With `first` (a
// leadingReduction), the warp folds the row for it first, and its value is
// given to x's generic and the epilogue: softmax is then one launch.
void lowerRowReduction(ir::ReduceOp op, ir::ReduceOp first = {}) {
  linalg::GenericOp epilogue = epilogueOf(op);
  Operation* at = epilogue ? epilogue.getOperation() : op.getOperation();
  OpBuilder b(at);
  Location l = op.getLoc();
  auto xType = cast<RankedTensorType>(op.getX().getType());
  auto out = cast<RankedTensorType>(op.getType());
  int64_t k = xType.getShape().back(), rows = xType.getNumElements() / k;
  ArrayRef<int64_t> lead = xType.getShape().drop_back();

  auto producer = op.getX().getDefiningOp<linalg::GenericOp>();
  if (producer && !computableAtIndex(producer)) producer = {};
  linalg::GenericOp firstProducer = first ? first.getX().getDefiningOp<linalg::GenericOp>() : linalg::GenericOp();
  if (firstProducer && !computableAtIndex(firstProducer)) firstProducer = {};
  Given skipped;  // the values this kernel computes: no buffers for them
  if (first) skipped[first.getResult()] = Value();
  skipped[op.getResult()] = Value();
  Buffers buffers;
  Value x, firstX;
  if (producer) addBuffers(b, l, producer, buffers, skipped);
  else x = stackBuffer(b, l, op.getX(), /*batched=*/false, 1, rows, k);
  if (first && firstProducer) addBuffers(b, l, firstProducer, buffers);
  else if (first) firstX = stackBuffer(b, l, first.getX(), /*batched=*/false, 1, rows, k);
  if (epilogue) addBuffers(b, l, epilogue, buffers, skipped);
  Type resultType = epilogue ? epilogue->getResult(0).getType() : Type(out);
  Type stored = cast<RankedTensorType>(resultType).getElementType();
  Value result = memref::AllocOp::create(
      b, l, epilogue ? MemRefType::get({1, rows, k}, stored) : MemRefType::get({rows}, stored));

  auto par = parallelLoop(b, l, {rows, kWarpSize}, "row_reduction");
  Value row = par.getInductionVars()[0], lane = par.getInductionVars()[1];
  SmallVector<Value> rowIdx = rowIndices(b, l, row, lead);
  auto indexAt = [&](Value col) {
    SmallVector<Value> idx(rowIdx);
    idx.push_back(col);
    return idx;
  };
  // Decode's mask as a bound (masked_columns.h): where it is `col <= pos`,
  // the columns past it; a fold stops there when they add nothing to it.
  auto scalar = scalarReader(buffers, l);
  auto boundOf = [&](linalg::GenericOp g, std::optional<MaskedSelect>& m) -> Value {
    m = maskedSelect(g);
    Value end = m ? unmaskedEnd(b, l, g, *m, k, scalar) : Value();
    if (!end) m.reset();
    return end;
  };
  auto foldEnd = [&](linalg::GenericOp g, ir::ReduceOp r) -> Value {
    std::optional<MaskedSelect> m;
    Value end = boundOf(g, m);
    return m && neutralWhenMasked(g, *m, r.getKind()) ? end : Value();
  };
  Given given;
  if (first)
    given[first.getResult()] = foldRow(b, l, first, lane, k, columnsAtOnce(rows, readsPerColumn(firstProducer)),
                                       [&](OpBuilder& lb, Location ll, Value col) {
      return firstProducer ? computeAt(lb, ll, firstProducer, indexAt(col), buffers)
                           : Value(memref::LoadOp::create(lb, ll, firstX, ValueRange{cIndex(lb, ll, 0), row, col}));
    }, firstProducer ? foldEnd(firstProducer, first) : Value());
  Value total = foldRow(b, l, op, lane, k, columnsAtOnce(rows, readsPerColumn(producer)),
                        [&](OpBuilder& lb, Location ll, Value col) {
    return producer ? computeAt(lb, ll, producer, indexAt(col), buffers, given)
                    : Value(memref::LoadOp::create(lb, ll, x, ValueRange{cIndex(lb, ll, 0), row, col}));
  }, producer ? foldEnd(producer, op) : Value());
  given[op.getResult()] = total;

  if (epilogue) {
    // Every lane has the row's value (rounded as the reduction's result):
    // each writes its share of the consumer's row; past the mask's bound,
    // from the masked score, without reading the row.
    std::optional<MaskedSelect> mask;
    Value end = boundOf(epilogue, mask);
    overColumns(b, l, lane, k, columnsAtOnce(rows, readsPerColumn(epilogue)), ValueRange{},
                [&](OpBuilder& lb, Location ll, ArrayRef<Value> cols, ArrayRef<Value> valid, ValueRange) {
      SmallVector<Value> ys;
      for (Value col : cols) ys.push_back(computeAt(lb, ll, epilogue, indexAt(col), buffers, given));
      for (auto [u, col] : llvm::enumerate(cols)) {
        OpBuilder sb = lb;
        if (!valid.empty()) {
          auto only = scf::IfOp::create(lb, ll, valid[u], /*withElseRegion=*/false);
          sb.setInsertionPoint(only.thenBlock()->getTerminator());
        }
        memref::StoreOp::create(sb, ll, ys[u], result, ValueRange{cIndex(sb, ll, 0), row, col});
      }
      return SmallVector<Value>{};
    }, end);
    if (end)
      scf::ForOp::create(b, l, firstColumnFrom(b, l, lane, end), cIndex(b, l, k), cIndex(b, l, kWarpSize), ValueRange{},
                         [&](OpBuilder& lb, Location ll, Value col, ValueRange) {
        Value y = computeAt(lb, ll, epilogue, indexAt(col), buffers, given, mask->select);
        memref::StoreOp::create(lb, ll, y, result, ValueRange{cIndex(lb, ll, 0), row, col});
        scf::YieldOp::create(lb, ll);
      });
    b.setInsertionPointAfter(par);
    auto consumerType = cast<RankedTensorType>(epilogue->getResult(0).getType());
    epilogue->getResult(0).replaceAllUsesWith(resultTensor(b, l, result, /*batched=*/false, consumerType));
    epilogue->erase();
    op.erase();
  } else {
    Value first = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, lane, cIndex(b, l, 0));
    auto store = scf::IfOp::create(b, l, first, /*withElseRegion=*/false);
    b.setInsertionPoint(store.thenBlock()->getTerminator());
    memref::StoreOp::create(b, l, total, result, ValueRange{row});
    b.setInsertionPointAfter(par);
    auto flat = RankedTensorType::get({rows}, out.getElementType());
    Value t = bufferization::ToTensorOp::create(b, l, flat, result, /*restrict=*/true, /*writable=*/true);
    if (out.getRank() == 0)
      t = tensor::CollapseShapeOp::create(b, l, out, t, ArrayRef<ReassociationIndices>{});
    else if (out.getRank() > 1) {
      ReassociationIndices all;
      for (int64_t a = 0; a < out.getRank(); ++a) all.push_back(a);
      t = tensor::ExpandShapeOp::create(b, l, out, t, ArrayRef<ReassociationIndices>{all});
    }
    op.getResult().replaceAllUsesWith(t);
    op.erase();
  }
  // The producer, now computed where it is read, unless something else reads it.
  if (producer && producer->use_empty()) producer->erase();
  if (first) {
    first.erase();
    if (firstProducer && firstProducer->use_empty()) firstProducer->erase();
  }
}

}  // namespace

void lowerRowReductions(ModuleOp module, const transforms::SharedOptions& options) {
  SmallVector<ir::ReduceOp> reductions;
  module.walk([&](Operation* op) {
    if (transforms::targetKeepsRowReduction(op, options)) reductions.push_back(cast<ir::ReduceOp>(op));
  });
  // Pairs first (softmax's max, then its sum): the leading one is lowered
  // with the second, in its kernel.
  llvm::DenseMap<Operation*, ir::ReduceOp> leading;
  llvm::DenseSet<Operation*> joined;
  for (ir::ReduceOp op : reductions) {
    auto producer = op.getX().getDefiningOp<linalg::GenericOp>();
    if (!producer || !computableAtIndex(producer)) continue;
    ir::ReduceOp first = leadingReduction(op, producer, epilogueOf(op), options);
    // One pair per kernel: not a reduction that leads another already or
    // that has a leader of its own.
    if (first && !joined.count(op) && !joined.count(first) && !leading.count(first)) {
      leading[op] = first;
      joined.insert(first);
    }
  }
  for (ir::ReduceOp op : reductions)
    if (!joined.count(op)) lowerRowReduction(op, leading.lookup(op));
}

}  // namespace linnet::cuda
