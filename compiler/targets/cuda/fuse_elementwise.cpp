#include "targets/cuda/fuse_elementwise.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "transforms/pipeline.h"

namespace linnet::cuda {

bool plainElementwise(mlir::Operation* op) {
  auto generic = mlir::dyn_cast_or_null<mlir::linalg::GenericOp>(op);
  if (!generic || generic.getNumParallelLoops() != generic.getNumLoops()) return false;
  for (mlir::Operation& inner : generic.getRegion().front())
    if (inner.getNumRegions() != 0) return false;
  return true;
}

bool generator(mlir::Operation* op) {
  auto generic = mlir::dyn_cast_or_null<mlir::linalg::GenericOp>(op);
  if (!generic || !plainElementwise(generic)) return false;
  for (mlir::OpOperand* input : generic.getDpsInputOperands())
    if (auto t = mlir::dyn_cast<mlir::RankedTensorType>(input->get().getType()); t && t.getRank() != 0) return false;
  for (mlir::Operation& inner : generic.getRegion().front())
    if (auto read = mlir::dyn_cast<mlir::tensor::ExtractOp>(inner); read && read.getTensor().getType().getRank() != 0) return false;
  return true;
}

bool projectedInputs(mlir::linalg::GenericOp g) {
  using namespace mlir;
  for (OpOperand* input : g.getDpsInputOperands()) {
    if (!isa<RankedTensorType>(input->get().getType())) continue;
    for (AffineExpr e : g.getMatchingIndexingMap(input).getResults())
      if (!isa<AffineDimExpr, AffineConstantExpr>(e)) return false;
  }
  return true;
}

mlir::Value computeAt(mlir::OpBuilder& b, mlir::Location loc, mlir::linalg::GenericOp producer, unsigned r,
                      mlir::ValueRange at, llvm::ArrayRef<std::pair<mlir::OpOperand*, mlir::Value>> given) {
  using namespace mlir;
  IRMapping map;
  for (OpOperand* input : producer.getDpsInputOperands()) {
    Value v = input->get();
    BlockArgument arg = producer.getMatchingBlockArgument(input);
    if (auto it = llvm::find_if(given, [&](const auto& g) { return g.first == input; }); it != given.end()) {
      map.map(arg, it->second);
      continue;
    }
    if (!isa<RankedTensorType>(v.getType())) {
      map.map(arg, v);
      continue;
    }
    SmallVector<Value> indices;
    for (AffineExpr e : producer.getMatchingIndexingMap(input).getResults()) {
      if (auto d = dyn_cast<AffineDimExpr>(e)) indices.push_back(at[d.getPosition()]);
      else indices.push_back(arith::ConstantIndexOp::create(b, loc, cast<AffineConstantExpr>(e).getValue()));
    }
    map.map(arg, tensor::ExtractOp::create(b, loc, v, indices).getResult());
  }
  Block& body = producer.getRegion().front();
  for (Operation& op : body.without_terminator()) {
    if (auto index = dyn_cast<linalg::IndexOp>(op)) {
      map.map(index.getResult(), at[index.getDim()]);
      continue;
    }
    b.clone(op, map);
  }
  return map.lookupOrDefault(body.getTerminator()->getOperand(r));
}

namespace {

using namespace mlir;

int64_t iterations(linalg::GenericOp generic) {
  int64_t n = 1;
  for (int64_t range : generic.getStaticLoopRanges()) {
    if (ShapedType::isDynamic(range)) return -1;
    n *= range;
  }
  return n;
}

// True when computing the element `extract` reads, each time it runs, is
// no more work than computing all `elements` of its source once: the
// extract sits directly in a generic's body (no loop around it) or in a
// function's, and runs at most `elements` times in all.
bool cheaperThanWhole(tensor::ExtractOp extract, int64_t elements) {
  Operation* parent = extract->getParentOp();
  if (isa<func::FuncOp>(parent)) return elements >= 1;
  auto consumer = dyn_cast<linalg::GenericOp>(parent);
  if (!consumer) return false;  // inside a loop or a branch: run an unknown number of times
  int64_t count = iterations(consumer), extracts = 0;
  if (count < 0) return false;
  for (Operation& op : consumer.getRegion().front())
    if (auto other = dyn_cast<tensor::ExtractOp>(op); other && other.getTensor() == extract.getTensor()) ++extracts;
  return count * extracts <= elements;
}

// A generator (rope's frequencies, and the cos and sin rows computed from
// them at `pos`) costs arithmetic only, no memory, to compute where it is
// read, so it is computed there instead of being a launch and a buffer of
// its own, while the reads times its body's ops stay within kGeneratorWork
// (decode's rows, read by q's and k's rope: a few million operations;
// prefill's [S, D] tables are read S times more and stay kernels of their
// own).
constexpr int64_t kGeneratorWork = int64_t{1} << 24;


// `tensor.extract %t[i..]` of a plain elementwise generic's result, as the
// generic's body computed at i.. alone: an index comprehension such as
// `rows[i] = table[pos + i, d]` then computes the rows it reads, not the
// whole table (decode's rotary rows: 1 of MaxSeq). Only where that is no
// more work than the producer (cheaperThanWhole), or free.
struct ComputeExtractedElement : OpRewritePattern<tensor::ExtractOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(tensor::ExtractOp extract, PatternRewriter& rw) const override {
    auto result = dyn_cast<OpResult>(extract.getTensor());
    auto producer = result ? dyn_cast<linalg::GenericOp>(result.getOwner()) : nullptr;
    if (!producer || !plainElementwise(producer)) return failure();
    unsigned r = result.getResultNumber();
    OpOperand* init = producer.getDpsInitOperand(r);
    if (!producer.getMatchingIndexingMap(init).isIdentity()) return failure();
    Block& body = producer.getRegion().front();
    if (!producer.getMatchingBlockArgument(init).use_empty()) return failure();
    // A body that only yields (a constant, a copied input) costs nothing to
    // repeat, wherever the extract runs.
    bool free = body.getOperations().size() == 1;
    int64_t produced = iterations(producer);
    // A body of a few ops (rope's negated half: a read, extend, negate,
    // truncate; its indices are free) may be computed twice over: a
    // concat's select reads both sides.
    int64_t work = 0;
    for (Operation& op : body.without_terminator()) work += isa<linalg::IndexOp>(op) ? 0 : 1;
    if (produced >= 0 && work <= 4) produced *= 2;
    if (generator(producer)) produced = std::max<int64_t>(produced, kGeneratorWork / std::max<int64_t>(work, 1));
    if (!free && (produced < 0 || !cheaperThanWhole(extract, produced))) return failure();

    if (!projectedInputs(producer)) return failure();
    rw.replaceOp(extract, computeAt(rw, extract.getLoc(), producer, r, extract.getIndices()));
    return success();
  }
};

// `tensor.extract` of a tensor built by `tensor.insert_slice` (a concat):
// the element of the inserted slice where the index falls in it, else of
// the destination, chosen by a select over both reads (the slice's index
// clamped into it, so the read it does not choose stays in bounds). An
// element of `tensor.empty` no slice covers is 0. Under the same rule of
// work as ComputeExtractedElement.
struct ExtractThroughInsertSlice : OpRewritePattern<tensor::ExtractOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(tensor::ExtractOp extract, PatternRewriter& rw) const override {
    Operation* def = extract.getTensor().getDefiningOp();
    auto type = cast<RankedTensorType>(extract.getTensor().getType());
    if (!type.hasStaticShape() || !cheaperThanWhole(extract, type.getNumElements())) return failure();
    Location loc = extract.getLoc();
    if (isa_and_nonnull<tensor::EmptyOp>(def)) {
      Type et = type.getElementType();
      if (!et.isIntOrFloat()) return failure();
      rw.replaceOpWithNewOp<arith::ConstantOp>(extract, et, rw.getZeroAttr(et));
      return success();
    }
    auto insert = dyn_cast_or_null<tensor::InsertSliceOp>(def);
    if (!insert || insert.getSourceType().getRank() != type.getRank() || !insert.hasUnitStride()) return failure();
    auto offsets = insert.getStaticOffsets(), sizes = insert.getStaticSizes();
    if (ShapedType::isDynamicShape(offsets) || ShapedType::isDynamicShape(sizes)) return failure();
    Value inside;
    SmallVector<Value> at;
    for (auto [k, index] : llvm::enumerate(extract.getIndices())) {
      Value lo = arith::ConstantIndexOp::create(rw, loc, offsets[k]);
      Value hi = arith::ConstantIndexOp::create(rw, loc, offsets[k] + sizes[k]);
      Value within = arith::AndIOp::create(rw, loc, arith::CmpIOp::create(rw, loc, arith::CmpIPredicate::uge, index, lo),
                                           arith::CmpIOp::create(rw, loc, arith::CmpIPredicate::ult, index, hi));
      inside = inside ? Value(arith::AndIOp::create(rw, loc, inside, within)) : within;
      Value local = arith::SubIOp::create(rw, loc, arith::MaxUIOp::create(rw, loc, index, lo), lo);
      at.push_back(arith::MinUIOp::create(rw, loc, local, arith::ConstantIndexOp::create(rw, loc, sizes[k] - 1)));
    }
    Value fromSlice = tensor::ExtractOp::create(rw, loc, insert.getSource(), at);
    Value fromDest = tensor::ExtractOp::create(rw, loc, insert.getDest(), extract.getIndices());
    rw.replaceOpWithNewOp<arith::SelectOp>(extract, inside, fromSlice, fromDest);
    return success();
  }
};

// `tensor.extract` of a `tensor.extract_slice` with unit strides and the
// source's rank: the source's element at the slice's offset plus the index.
struct ExtractThroughExtractSlice : OpRewritePattern<tensor::ExtractOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(tensor::ExtractOp extract, PatternRewriter& rw) const override {
    auto slice = extract.getTensor().getDefiningOp<tensor::ExtractSliceOp>();
    if (!slice || !slice.hasUnitStride() || slice.getSourceType().getRank() != slice.getResultType().getRank())
      return failure();
    Location loc = extract.getLoc();
    SmallVector<Value> at;
    for (auto [offset, index] : llvm::zip_equal(slice.getMixedOffsets(), extract.getIndices()))
      at.push_back(arith::AddIOp::create(rw, loc, getValueOrCreateConstantIndexOp(rw, loc, offset), index));
    rw.replaceOpWithNewOp<tensor::ExtractOp>(extract, slice.getSource(), at);
    return success();
  }
};

// `tensor.extract` of a reshape (`expand_shape`, `collapse_shape`, static
// shapes) of a plain elementwise generic: the source's element at the
// same position in row-major order, so that ComputeExtractedElement can
// compute it (decode's cos row is made [1, D] from [D] before rope reads it).
struct ExtractThroughReshape : OpRewritePattern<tensor::ExtractOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(tensor::ExtractOp extract, PatternRewriter& rw) const override {
    Operation* def = extract.getTensor().getDefiningOp();
    if (!isa_and_nonnull<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(def) ||
        !plainElementwise(def->getOperand(0).getDefiningOp()))
      return failure();
    auto source = cast<RankedTensorType>(def->getOperand(0).getType());
    auto result = cast<RankedTensorType>(extract.getTensor().getType());
    if (!source.hasStaticShape() || !result.hasStaticShape()) return failure();
    Location loc = extract.getLoc();
    auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(rw, loc, v).getResult(); };
    ValueRange at = extract.getIndices();
    SmallVector<Value> from;
    if (auto expand = dyn_cast<tensor::ExpandShapeOp>(def)) {
      // Each source axis is a group of result axes: their row-major offset.
      for (const ReassociationIndices& group : expand.getReassociationIndices()) {
        Value index = c(0);
        for (int64_t axis : group)
          index = arith::AddIOp::create(rw, loc, arith::MulIOp::create(rw, loc, index, c(result.getDimSize(axis))),
                                        at[axis]);
        from.push_back(index);
      }
    } else {
      // Each result axis is a group of source axes: its index split over them.
      for (auto [k, group] : llvm::enumerate(cast<tensor::CollapseShapeOp>(def).getReassociationIndices())) {
        int64_t inner = 1;
        for (int64_t axis : group) inner *= source.getDimSize(axis);
        for (int64_t axis : group) {
          inner /= source.getDimSize(axis);
          Value q = arith::DivUIOp::create(rw, loc, at[k], c(inner));
          from.push_back(arith::RemUIOp::create(rw, loc, q, c(source.getDimSize(axis))));
        }
      }
    }
    rw.replaceOpWithNewOp<tensor::ExtractOp>(extract, def->getOperand(0), from);
    return success();
  }
};

// A slice written into a tensor the function was given (a state: decode's
// cache write `insert_slice(extract_slice(k, ..), cache[.., pos, ..])`)
// whose value is a plain elementwise generic's result, or a unit-stride
// slice of it, that nothing else reads: the write computes the generic's
// body at the slice's elements, into the destination's own slice, which
// bufferizes in place. k's rope and v's head split then write the caches
// themselves, without a launch and a buffer of their own; each element is
// computed once.
constexpr char kWritesSlice[] = "linnet.writes_slice";

// The write must bufferize in place: otherwise the destination's slice,
// whose size may be computed from device data (a position), would be a new
// buffer of that size, allocated by the host. So the destination is a
// function's tensor argument (a state; an entry's arguments are read-only
// buffers) or a slice of one, and nothing else reads it.
bool stateView(Value v) {
  if (!v.hasOneUse()) return false;
  while (auto slice = v.getDefiningOp<tensor::ExtractSliceOp>()) v = slice.getSource();
  return isa<BlockArgument>(v);
}

struct ComputeWrittenSlice : OpRewritePattern<tensor::InsertSliceOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(tensor::InsertSliceOp insert, PatternRewriter& rw) const override {
    auto type = insert.getSourceType();
    if (!insert.hasUnitStride() || type.getRank() != insert.getDestType().getRank() || !stateView(insert.getDest()))
      return failure();
    Value source = insert.getSource();
    auto slice = source.getDefiningOp<tensor::ExtractSliceOp>();
    if (slice) {
      if (!slice.hasUnitStride() || slice.getSourceType().getRank() != type.getRank() || !slice->hasOneUse())
        return failure();
      source = slice.getSource();
    }
    auto result = dyn_cast<OpResult>(source);
    auto producer = result ? dyn_cast<linalg::GenericOp>(result.getOwner()) : nullptr;
    if (!producer || !plainElementwise(producer) || producer->hasAttr(kWritesSlice) || !source.hasOneUse() ||
        !projectedInputs(producer))
      return failure();
    unsigned r = result.getResultNumber();
    OpOperand* init = producer.getDpsInitOperand(r);
    if (!producer.getMatchingIndexingMap(init).isIdentity() || !producer.getMatchingBlockArgument(init).use_empty())
      return failure();
    Location loc = insert.getLoc();
    SmallVector<OpFoldResult> offsets = slice ? slice.getMixedOffsets() : SmallVector<OpFoldResult>();
    Value into = tensor::ExtractSliceOp::create(rw, loc, type, insert.getDest(), insert.getMixedOffsets(),
                                                insert.getMixedSizes(), insert.getMixedStrides());
    int64_t rank = type.getRank();
    auto write = linalg::GenericOp::create(
        rw, loc, TypeRange{type}, ValueRange{}, ValueRange{into}, ArrayRef<AffineMap>{rw.getMultiDimIdentityMap(rank)},
        SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
        [&](OpBuilder& b, Location l, ValueRange) {
          SmallVector<Value> at;
          for (int64_t k = 0; k < rank; ++k) {
            Value i = linalg::IndexOp::create(b, l, k);
            if (slice) i = arith::AddIOp::create(b, l, getValueOrCreateConstantIndexOp(b, l, offsets[k]), i);
            at.push_back(i);
          }
          linalg::YieldOp::create(b, l, computeAt(b, l, producer, r, at));
        });
    write->setAttr(kWritesSlice, rw.getUnitAttr());
    rw.modifyOpInPlace(insert, [&] { insert.getSourceMutable().assign(write.getResult(0)); });
    return success();
  }
};

// An input of a plain elementwise generic that a slice op made (a concat's
// `tensor.insert_slice`, rotate-half's `tensor.extract_slice`), read through
// a projection of the loops, becomes a `tensor.extract` in the body at those
// loops' indices: the patterns above then read through the slices to where
// the values were computed, and the copies the slice ops would bufferize to
// (a launch each) are gone. rope's half rotation of q and k is then part of
// the rotation's kernel.
struct SliceInputToExtract : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp generic, PatternRewriter& rw) const override {
    if (!plainElementwise(generic) || generic.getNumDpsInits() != 1) return failure();
    OpOperand* picked = nullptr;
    for (OpOperand* input : generic.getDpsInputOperands()) {
      Operation* def = input->get().getDefiningOp();
      bool slice = isa_and_nonnull<tensor::InsertSliceOp, tensor::ExtractSliceOp>(def);
      // A reshaped elementwise result (rope's cos row made [1, D]; the
      // scores widened to f32, then given softmax's query axis) is read
      // through the reshape, where the patterns above may compute it.
      bool reshaped = isa_and_nonnull<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(def) &&
                      plainElementwise(def->getOperand(0).getDefiningOp());
      if ((slice || reshaped) &&
          generic.getMatchingIndexingMap(input).isProjectedPermutation(/*allowZeroInResults=*/true)) {
        picked = input;
        break;
      }
    }
    if (!picked) return failure();
    Location loc = generic.getLoc();
    SmallVector<Value> inputs;
    SmallVector<AffineMap> maps;
    for (OpOperand* input : generic.getDpsInputOperands())
      if (input != picked) {
        inputs.push_back(input->get());
        maps.push_back(generic.getMatchingIndexingMap(input));
      }
    OpOperand* init = generic.getDpsInitOperand(0);
    maps.push_back(generic.getMatchingIndexingMap(init));
    AffineMap pickedMap = generic.getMatchingIndexingMap(picked);
    auto fused = linalg::GenericOp::create(
        rw, loc, generic.getResultTypes(), inputs, ValueRange{init->get()}, maps, generic.getIteratorTypesArray(),
        [&](OpBuilder& b, Location l, ValueRange args) {
          IRMapping map;
          Block& body = generic.getRegion().front();
          size_t next = 0;
          for (OpOperand* input : generic.getDpsInputOperands()) {
            BlockArgument arg = generic.getMatchingBlockArgument(input);
            if (input == picked) {
              SmallVector<Value> at;
              for (AffineExpr e : pickedMap.getResults()) {
                if (auto d = dyn_cast<AffineDimExpr>(e)) at.push_back(linalg::IndexOp::create(b, l, d.getPosition()));
                else at.push_back(arith::ConstantIndexOp::create(b, l, 0));  // a broadcast axis
              }
              map.map(arg, tensor::ExtractOp::create(b, l, picked->get(), at).getResult());
            } else {
              map.map(arg, args[next++]);
            }
          }
          map.map(generic.getMatchingBlockArgument(init), args.back());
          for (Operation& op : body) b.clone(op, map);
        });
    rw.replaceOp(generic, fused.getResults());
    return success();
  }
};

}  // namespace

void fuseElementwise(ModuleOp module) {
  // Transposes (a head split) as generics, so that they fuse into the ops
  // that read them like any elementwise producer instead of each being a
  // copy of its own.
  {
    SmallVector<linalg::TransposeOp> transposes;
    module.walk([&](linalg::TransposeOp t) { transposes.push_back(t); });
    IRRewriter rw(module.getContext());
    for (linalg::TransposeOp t : transposes) {
      rw.setInsertionPoint(t);
      if (failed(linalg::generalizeNamedOp(rw, t)))
        throw transforms::PipelineError("internal compiler error: a transpose could not be made a generic");
    }
  }
  RewritePatternSet patterns(module.getContext());
  linalg::populateElementwiseOpsFusionPatterns(patterns, [](OpOperand* operand) {
    return plainElementwise(operand->get().getDefiningOp()) && plainElementwise(operand->getOwner());
  });
  patterns.add<ComputeExtractedElement, ExtractThroughInsertSlice, ExtractThroughExtractSlice, ExtractThroughReshape,
               SliceInputToExtract>(module.getContext());
  // Rounds until nothing changes: the driver revisits an op only when it or
  // its operands change, and a generic becomes a generator when a read in
  // its body is computed in place, which its readers do not see.
  FrozenRewritePatternSet frozen(std::move(patterns));
  bool changed = true;
  for (int round = 0; changed && round < 4; ++round)
    if (failed(applyPatternsGreedily(module, frozen, GreedyRewriteConfig(), &changed)))
      throw transforms::PipelineError("internal compiler error: fusing elementwise ops did not converge");
  // Writes into states last, and apart: elementwise fusion would replace
  // the write's unread destination slice with an empty tensor, and the
  // write would no longer bufferize in place.
  RewritePatternSet writes(module.getContext());
  writes.add<ComputeWrittenSlice>(module.getContext());
  if (failed(applyPatternsGreedily(module, std::move(writes))))
    throw transforms::PipelineError("internal compiler error: computing writes into states did not converge");
}

namespace {

struct FuseElementwisePass : mlir::PassWrapper<FuseElementwisePass, mlir::OperationPass<mlir::ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(FuseElementwisePass)
  mlir::StringRef getArgument() const final { return "linnet-cuda-fuse-elementwise"; }
  mlir::StringRef getDescription() const final {
    return "The cuda target's elementwise fusion (targets/cuda/fuse_elementwise.h)";
  }
  void runOnOperation() override {
    try {
      fuseElementwise(getOperation());
    } catch (const transforms::PipelineError& e) {
      getOperation().emitError(e.what());
      signalPassFailure();
    }
  }
};

}  // namespace

void registerFuseElementwisePass() { mlir::PassRegistration<FuseElementwisePass>(); }

}  // namespace linnet::cuda
