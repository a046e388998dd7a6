#include "targets/cuda/split_attention.h"

#include <cmath>
#include <optional>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "targets/cuda/masked_columns.h"
#include "targets/cuda/product_buffers.h"
#include "targets/cuda/row_kernels.h"
#include "targets/cuda/warp_helpers.h"
#include "targets/cuda/warp_kernels.h"

namespace linnet::cuda {

namespace {

using namespace mlir;
using ir::ReduceKind;

// The values a kernel computed itself, by the tensors they stand for.
Given given(std::initializer_list<std::pair<Value, Value>> values) {
  Given g;
  for (auto [t, v] : values) g[t] = v;
  return g;
}

// Keys a split: a warp's keys in the scores kernel, whose max and sum the
// values kernel merges (at position 8,191 of the 8B card, 1,024 splits a
// row, 32 a lane).
constexpr int64_t kKeysPerSplit = 8;
// Splits a lane merges an iteration: their loads are in flight together.
constexpr int64_t kSplitsAtOnce = 4;

Value throughReshapes(Value v) {
  while (Operation* def = v.getDefiningOp()) {
    if (!isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(def)) break;
    v = def->getOperand(0);
  }
  return v;
}

// Softmax over a scores product's keys whose probabilities only a split
// product reads, as fuseElementwise leaves it.
struct Softmax {
  ir::MatmulOp scores, values;
  ir::ReduceOp max, sum;
  // The masked score (the max's input), exp(masked - max) (the sum's
  // input), and the probability round(exp(masked - max) / sum).
  linalg::GenericOp masked, exps, probs;
  MaskedSelect select;  // masked's
};

// True when every tensor.extract of `scores` in g's body reads it at g's
// own element in row-major order (its axes longer than 1 indexed by g's
// axes longer than 1, in order, with the same lengths), and g reads no
// other tensor element by element.
bool readsInOrder(linalg::GenericOp g, Value scores) {
  SmallVector<int64_t> ranges = g.getStaticLoopRanges();
  SmallVector<unsigned> wide;
  for (auto [d, n] : llvm::enumerate(ranges))
    if (n != 1) wide.push_back(d);
  bool ok = true, any = false;
  g.getRegion().walk([&](tensor::ExtractOp e) {
    if (e.getTensor().getType().getRank() == 0) return;
    if (e.getTensor() != scores) {
      ok = false;
      return;
    }
    any = true;
    ArrayRef<int64_t> shape = e.getTensor().getType().getShape();
    SmallVector<unsigned> used;
    for (auto [i, n] : llvm::enumerate(shape)) {
      if (n == 1) continue;
      auto index = e.getIndices()[i].getDefiningOp<linalg::IndexOp>();
      if (!index || ranges[index.getDim()] != n) ok = false;
      else used.push_back(index.getDim());
    }
    ok = ok && used == wide;
  });
  return ok && any;
}

// True when `probs` yields exactly 0 at a masked column: round(exp(masked -
// m) / s), its exp's operand computed from the masked select.
bool zeroWhenMasked(linalg::GenericOp probs) {
  std::optional<MaskedSelect> m = maskedSelect(probs);
  if (!m) return false;
  Value y = probs.getRegion().front().getTerminator()->getOperand(0);
  if (auto t = y.getDefiningOp<arith::TruncFOp>()) y = t.getIn();
  auto div = y.getDefiningOp<arith::DivFOp>();
  auto e = div ? div.getLhs().getDefiningOp<math::ExpOp>() : math::ExpOp();
  auto sub = e ? e.getOperand().getDefiningOp<arith::SubFOp>() : arith::SubFOp();
  return sub && sub.getLhs() == m->select->getResult(0);
}

bool f32Rows(ir::ReduceOp r) { return cast<RankedTensorType>(r.getType()).getElementType().isF32(); }

// True when each tensor input of `g` but `skip` is defined before `op`, in
// its block or above it: a buffer of it can be made before op's kernel.
bool inputsBefore(linalg::GenericOp g, Operation* op, ArrayRef<Value> skip) {
  for (OpOperand* in : g.getDpsInputOperands()) {
    Value v = in->get();
    if (!isa<RankedTensorType>(v.getType()) || llvm::is_contained(skip, v)) continue;
    Operation* def = v.getDefiningOp();
    Operation* at = def ? op->getBlock()->findAncestorOpInBlock(*def) : nullptr;
    if (at && !at->isBeforeInBlock(op)) return false;
  }
  return true;
}

std::optional<Softmax> match(ir::MatmulOp values, const llvm::DenseSet<Operation*>& kept,
                             const transforms::SharedOptions& options) {
  if (!values.getSkipZeroTerms() || values.getTransposeB() || values.getKeepColumns()) return std::nullopt;
  Softmax s;
  s.values = values;
  s.probs = throughReshapes(values.getA()).getDefiningOp<linalg::GenericOp>();
  if (!computableAtIndex(s.probs) || !s.probs->hasOneUse() || !zeroWhenMasked(s.probs)) return std::nullopt;
  for (OpOperand* in : s.probs.getDpsInputOperands())
    if (auto r = in->get().getDefiningOp<ir::ReduceOp>(); r && r.getKind() == ReduceKind::Sum && epilogueOf(r) == s.probs)
      s.sum = r;
  if (!s.sum || !transforms::targetKeepsRowReduction(s.sum, options) || !f32Rows(s.sum)) return std::nullopt;
  s.exps = s.sum.getX().getDefiningOp<linalg::GenericOp>();
  if (!computableAtIndex(s.exps)) return std::nullopt;
  s.max = leadingReduction(s.sum, s.exps, s.probs, options);
  if (!s.max || s.max.getKind() != ReduceKind::Max || !f32Rows(s.max)) return std::nullopt;
  s.masked = s.max.getX().getDefiningOp<linalg::GenericOp>();
  if (!computableAtIndex(s.masked) || !s.masked->hasOneUse()) return std::nullopt;
  std::optional<MaskedSelect> select = maskedSelect(s.masked), expSelect = maskedSelect(s.exps);
  if (!select || !neutralWhenMasked(s.masked, *select, ReduceKind::Max) || !expSelect ||
      !neutralWhenMasked(s.exps, *expSelect, ReduceKind::Sum))
    return std::nullopt;
  s.select = *select;
  // The scores: a masked warp product every generic reads at its own
  // element, and nothing else reads.
  auto scoresOf = [](linalg::GenericOp g) {
    ir::MatmulOp found;
    g.getRegion().walk([&](tensor::ExtractOp e) {
      if (auto p = e.getTensor().getDefiningOp<ir::MatmulOp>()) found = p;
    });
    return found;
  };
  s.scores = scoresOf(s.masked);
  if (!s.scores || !kept.contains(s.scores) || !s.scores.getKeepColumns() || !s.scores.getTransposeB()) return std::nullopt;
  Value scores = s.scores.getResult();
  for (linalg::GenericOp g : {s.masked, s.exps, s.probs})
    if (!readsInOrder(g, scores)) return std::nullopt;
  for (Operation* user : scores.getUsers()) {
    auto g = user->getParentOfType<linalg::GenericOp>();
    if (!isa<tensor::ExtractOp>(user) || (g != s.masked && g != s.exps && g != s.probs)) return std::nullopt;
  }
  if (!inputsBefore(s.masked, s.scores, {}) || !inputsBefore(s.exps, s.scores, {s.max.getResult()}))
    return std::nullopt;
  // Shapes: the scores [batch, rows, n]; softmax's rows the same, row-major
  // (checked above); the values' a [batch, rows, n], a warp of value
  // elements sharing one matrix.
  ProductShape q = shapeOf(s.scores), v = shapeOf(s.values);
  auto x = cast<RankedTensorType>(s.max.getX().getType());
  if (!q.batched || !v.batched || q.batch != v.batch || q.rows != v.rows || q.n != v.k ||
      x.getShape().back() != q.n || x.getNumElements() != q.batch * q.rows * q.n || v.n % kWarpSize != 0 ||
      cast<RankedTensorType>(s.probs->getResult(0).getType()).getElementType() !=
          cast<RankedTensorType>(values.getA().getType()).getElementType())
    return std::nullopt;
  return s;
}

// `init` folded with `step` over the keys of a split from `first`: `whole`
// (every split has kKeysPerSplit keys) as straight-line code, so that the
// caller can issue every key's reads at once; else a loop below `end`.
Value foldSplit(OpBuilder& b, Location l, Value first, Value end, bool whole, Value init,
                const std::function<Value(OpBuilder&, Location, Value, Value)>& step) {
  if (whole) {
    Value acc = init;
    for (int64_t u = 0; u < kKeysPerSplit; ++u)
      acc = step(b, l, u == 0 ? first : Value(arith::AddIOp::create(b, l, first, cIndex(b, l, u))), acc);
    return acc;
  }
  return scf::ForOp::create(b, l, first, end, cIndex(b, l, 1), ValueRange{init},
                            [&](OpBuilder& lb, Location ll, Value key, ValueRange acc) {
    scf::YieldOp::create(lb, ll, step(lb, ll, key, acc[0]));
  }).getResult(0);
}

void lower(Softmax s) {
  Location l = s.scores.getLoc();
  ProductShape q = shapeOf(s.scores);
  int64_t rows = q.rows, n = q.n, splits = (n + kKeysPerSplit - 1) / kKeysPerSplit;
  ArrayRef<int64_t> lead = cast<RankedTensorType>(s.max.getX().getType()).getShape().drop_back();
  Value maxOf = s.max.getResult(), sumOf = s.sum.getResult();
  auto rowAt = [&](OpBuilder& b, Value mat, int64_t r, Value key) {
    Value flat = arith::AddIOp::create(b, l, arith::MulIOp::create(b, l, mat, cIndex(b, l, rows)), cIndex(b, l, r));
    SmallVector<Value> idx = rowIndices(b, l, flat, lead);
    idx.push_back(key);
    return idx;
  };

  // 1. The scores, and each split's max and sum, a row's f32 each.
  OpBuilder b(s.scores);
  auto statsType = MemRefType::get({q.batch, rows, splits}, b.getF32Type());
  Value maxes = memref::AllocOp::create(b, l, statsType), sums = memref::AllocOp::create(b, l, statsType);
  Buffers reads;
  addBuffers(b, l, s.masked, reads);
  addBuffers(b, l, s.exps, reads, given({{maxOf, Value()}}));
  Value scores = s.scores.getResult();
  // One past the last key softmax sees (its mask's bound; every key when
  // the mask leaves none), computed in a kernel. The values kernel reads
  // the scores and the splits' statistics below it only.
  auto keyBound = [&](OpBuilder& kb) {
    Value end = unmaskedEnd(kb, l, s.masked, s.select, n, scalarReader(reads, l));
    return end ? end : cIndex(kb, l, n);
  };
  auto read = [&](OpBuilder& rb, Location, Value first) -> Value {
    return arith::CmpIOp::create(rb, l, arith::CmpIPredicate::ult, first, keyBound(rb));
  };
  ScoreSplits splitsOf{kKeysPerSplit, read, [&](OpBuilder& wb, Location, Value mat, Value first, Value lane, Value buffer) {
    // Lane 0 stored the split's scores: it reads them back (its own
    // stores) through the generics.
    Value isFirst = arith::CmpIOp::create(wb, l, arith::CmpIPredicate::eq, lane, cIndex(wb, l, 0));
    auto only = scf::IfOp::create(wb, l, isFirst, /*withElseRegion=*/false);
    OpBuilder lb = OpBuilder::atBlockTerminator(only.thenBlock());
    Buffers own = reads;
    own[scores] = buffer;
    Value end = arith::MinUIOp::create(lb, l, arith::AddIOp::create(lb, l, first, cIndex(lb, l, kKeysPerSplit)),
                                       cIndex(lb, l, n));
    Value split = arith::DivUIOp::create(lb, l, first, cIndex(lb, l, kKeysPerSplit));
    Value minusInf = arith::ConstantOp::create(lb, l, lb.getF32FloatAttr(-INFINITY));
    Value zero = arith::ConstantOp::create(lb, l, lb.getF32FloatAttr(0.0f));
    bool whole = n % kKeysPerSplit == 0;
    for (int64_t r = 0; r < rows; ++r) {
      Value m = foldSplit(lb, l, first, end, whole, minusInf, [&](OpBuilder& fb, Location fl, Value key, Value acc) {
        Value x = computeAt(fb, fl, s.masked, rowAt(fb, mat, r, key), own);
        return combine(fb, fl, gpu::AllReduceOperation::MAXNUMF, acc, x);
      });
      Value sum = foldSplit(lb, l, first, end, whole, zero, [&](OpBuilder& fb, Location fl, Value key, Value acc) {
        Value e = computeAt(fb, fl, s.exps, rowAt(fb, mat, r, key), own, given({{maxOf, m}}));
        return Value(arith::AddFOp::create(fb, fl, acc, e));
      });
      ValueRange at{mat, cIndex(lb, l, r), split};
      memref::StoreOp::create(lb, l, m, maxes, at);
      memref::StoreOp::create(lb, l, sum, sums, at);
    }
    // The split's scores read at once, one trip to memory, not one a key
    // and row (a lane's reads wait in order).
    issueReadsFirst(only.thenBlock());
  }};
  lowerMaskedScores(s.scores, splitsOf);

  // 2. The values product, each probability computed where it is read from
  // the row's merged max and sum.
  OpBuilder vb(s.values);
  Buffers probReads;
  addBuffers(vb, l, s.probs, probReads, given({{maxOf, Value()}, {sumOf, Value()}}));
  SmallVector<Value> rowMax(rows), rowSum(rows);
  ComputedA computed;
  computed.prologue = [&](OpBuilder& pb, Location, Value mat, Value col, Value from) {
    Value lane = arith::RemUIOp::create(pb, l, col, cIndex(pb, l, kWarpSize));
    Value keyEnd = keyBound(pb);
    Value minusInf = arith::ConstantOp::create(pb, l, pb.getF32FloatAttr(-INFINITY));
    Value zero = arith::ConstantOp::create(pb, l, pb.getF32FloatAttr(0.0f));
    // A chunk past the bound weighs nothing (its sums stay 0): its warps
    // merge nothing. The branch is the whole warp's (one chunk a warp).
    Value live = arith::CmpIOp::create(pb, l, arith::CmpIPredicate::ult, from, keyEnd);
    auto branch = scf::IfOp::create(pb, l, SmallVector<Type>(2 * rows, pb.getF32Type()), live, /*withElse=*/true);
    OpBuilder eb = OpBuilder::atBlockEnd(branch.elseBlock());
    SmallVector<Value> unused(rows, minusInf);
    unused.append(rows, zero);
    scf::YieldOp::create(eb, l, unused);
    OpBuilder mb = OpBuilder::atBlockEnd(branch.thenBlock());
    // The splits that hold a key below the bound.
    Value held = arith::DivUIOp::create(mb, l, arith::AddIOp::create(mb, l, keyEnd, cIndex(mb, l, kKeysPerSplit - 1)),
                                        cIndex(mb, l, kKeysPerSplit));
    auto merge = [&](Value init, const std::function<Value(OpBuilder&, Location, int64_t, Value, Value)>& term,
                     gpu::AllReduceOperation kind) {
      SmallVector<Value> partial = overColumns(mb, l, lane, splits, kSplitsAtOnce, SmallVector<Value>(rows, init),
                                               [&](OpBuilder& cb, Location cl, ArrayRef<Value> cols,
                                                   ArrayRef<Value> valid, ValueRange acc) {
        SmallVector<Value> next(acc);
        for (auto [u, col] : llvm::enumerate(cols))
          for (int64_t r = 0; r < rows; ++r) {
            Value t = term(cb, cl, r, mat, col);
            if (!valid.empty()) t = arith::SelectOp::create(cb, cl, valid[u], t, init);
            next[r] = combine(cb, cl, kind, next[r], t);
          }
        return next;
      }, held);
      SmallVector<Value> total;
      for (Value p : partial) total.push_back(gpu::SubgroupReduceOp::create(mb, l, p, kind, /*uniform=*/true));
      return total;
    };
    auto statAt = [&](OpBuilder& cb, Location cl, Value stats, int64_t r, Value mat, Value split) {
      return Value(memref::LoadOp::create(cb, cl, stats, ValueRange{mat, cIndex(cb, cl, r), split}));
    };
    SmallVector<Value> merged = merge(minusInf, [&](OpBuilder& cb, Location cl, int64_t r, Value mat, Value split) {
      return statAt(cb, cl, maxes, r, mat, split);
    }, gpu::AllReduceOperation::MAXNUMF);
    llvm::append_range(merged, merge(zero, [&](OpBuilder& cb, Location cl, int64_t r, Value mat, Value split) {
      Value m = statAt(cb, cl, maxes, r, mat, split);
      Value scale = math::ExpOp::create(cb, cl, arith::SubFOp::create(cb, cl, m, merged[r]));
      return Value(arith::MulFOp::create(cb, cl, statAt(cb, cl, sums, r, mat, split), scale));
    }, gpu::AllReduceOperation::ADD));
    scf::YieldOp::create(mb, l, merged);
    for (int64_t r = 0; r < rows; ++r) {
      rowMax[r] = branch.getResult(r);
      rowSum[r] = branch.getResult(rows + r);
    }
    return keyEnd;
  };
  computed.at = [&](OpBuilder& ab, Location, Value mat, int64_t r, Value key) {
    return computeAt(ab, l, s.probs, rowAt(ab, mat, r, key), probReads,
                     given({{maxOf, rowMax[r]}, {sumOf, rowSum[r]}}));
  };
  computed.end = [&](OpBuilder& eb, Location) { return keyBound(eb); };
  Value probsInput = s.values.getA();
  lowerComputedSplitProduct(s.values, computed);

  // Softmax, now computed in the two kernels.
  eraseUnread(probsInput);
  for (Operation* op : {s.sum.getOperation(), s.exps.getOperation(), s.max.getOperation(), s.masked.getOperation()})
    if (op->use_empty()) op->erase();
}

}  // namespace

llvm::DenseSet<Operation*> lowerSplitAttention(ArrayRef<ir::MatmulOp> products,
                                               const transforms::SharedOptions& options) {
  llvm::DenseSet<Operation*> kept, lowered;
  for (ir::MatmulOp op : products) kept.insert(op);
  SmallVector<Softmax> found;
  for (ir::MatmulOp op : products)
    if (std::optional<Softmax> s = match(op, kept, options);
        s && !lowered.contains(s->scores) && !lowered.contains(s->values)) {
      lowered.insert(s->scores);
      lowered.insert(s->values);
      found.push_back(*s);
    }
  for (const Softmax& s : found) lower(s);
  return lowered;
}

}  // namespace linnet::cuda
