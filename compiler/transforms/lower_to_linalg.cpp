// linnet-to-linalg: every `linnet` op becomes upstream linalg, tensor,
// arith, math and scf ops on the same tensors, as a dialect conversion with
// the `linnet` dialect illegal. Each op has one conversion pattern (in
// lower_elementwise.cpp, lower_contractions.cpp, lower_data_movement.cpp);
// an op or a `kind` that no pattern lowers fails the pass with an error at
// that op's location instead of staying in the IR. This file holds the
// pass and the builders the patterns share.
#include "ir/dialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/DialectConversion.h"
#include "transforms/lowering.h"
#include "transforms/passes.h"

namespace linnet::transforms {

namespace lowering {

using namespace mlir;

RankedTensorType typeOf(Value v) { return llvm::cast<RankedTensorType>(v.getType()); }

Value emptyTensor(OpBuilder& b, Location loc, RankedTensorType t) {
  return tensor::EmptyOp::create(b, loc, t.getShape(), t.getElementType());
}

Value cIndex(OpBuilder& b, Location loc, int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }

AffineMap broadcastMap(OpBuilder& b, ArrayRef<int64_t> in, ArrayRef<int64_t> out) {
  SmallVector<AffineExpr> exprs;
  size_t shift = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == 1 && out[i + shift] != 1) exprs.push_back(b.getAffineConstantExpr(0));
    else exprs.push_back(b.getAffineDimExpr(static_cast<unsigned>(i + shift)));
  }
  return AffineMap::get(static_cast<unsigned>(out.size()), 0, exprs, b.getContext());
}

Value elementwise(OpBuilder& b, Location loc, RankedTensorType type, ValueRange inputs, ElementBody body) {
  SmallVector<AffineMap> maps;
  for (Value in : inputs) maps.push_back(broadcastMap(b, typeOf(in).getShape(), type.getShape()));
  maps.push_back(b.getMultiDimIdentityMap(type.getRank()));
  SmallVector<utils::IteratorType> iters(type.getRank(), utils::IteratorType::parallel);
  auto g = linalg::GenericOp::create(b, loc, TypeRange{type}, inputs, ValueRange{emptyTensor(b, loc, type)}, maps,
                                     iters, [&](OpBuilder& nb, Location l, ValueRange args) {
                                       Value r = body(nb, l, args.drop_back());
                                       linalg::YieldOp::create(nb, l, r);
                                     });
  return g.getResult(0);
}

Value indexed(OpBuilder& b, Location loc, RankedTensorType type, ArrayRef<unsigned> order, IndexedBody body) {
  unsigned r = type.getRank();
  SmallVector<AffineExpr> outExprs(r);
  for (unsigned i = 0; i < r; ++i) outExprs[order[i]] = b.getAffineDimExpr(i);
  AffineMap outMap = AffineMap::get(r, 0, outExprs, b.getContext());
  SmallVector<utils::IteratorType> iters(r, utils::IteratorType::parallel);
  auto g = linalg::GenericOp::create(b, loc, TypeRange{type}, ValueRange{}, ValueRange{emptyTensor(b, loc, type)},
                                     ArrayRef<AffineMap>{outMap}, iters, [&](OpBuilder& nb, Location l, ValueRange) {
                                       SmallVector<Value> idx(r);
                                       for (unsigned i = 0; i < r; ++i)
                                         idx[order[i]] = linalg::IndexOp::create(nb, l, i);
                                       linalg::YieldOp::create(nb, l, body(nb, l, idx));
                                     });
  return g.getResult(0);
}

SmallVector<unsigned> identityOrder(unsigned rank) {
  SmallVector<unsigned> o;
  for (unsigned i = 0; i < rank; ++i) o.push_back(i);
  return o;
}

bool isLowFloat(Type t) { return t.isBF16() || t.isF16(); }

Value toF32(OpBuilder& b, Location loc, Value v) {
  if (isLowFloat(v.getType())) return arith::ExtFOp::create(b, loc, b.getF32Type(), v);
  return v;
}

Value fromF32(OpBuilder& b, Location loc, Value v, Type t) {
  if (isLowFloat(t)) return arith::TruncFOp::create(b, loc, t, v);
  return v;
}

arith::FastMathFlagsAttr reassoc(OpBuilder& b) {
  return arith::FastMathFlagsAttr::get(b.getContext(), arith::FastMathFlags::reassoc | arith::FastMathFlags::contract);
}

}  // namespace lowering

namespace {

using namespace mlir;

// Any linnet op whose results all have no elements (a zero-size dimension:
// `--generic S=0`, an empty prompt) is a `tensor.empty` of each result: there
// is nothing to compute, and the ops' own lowerings would index into empty
// operands (a slice at offset 0 of a dimension of 0 is invalid IR).
struct LowerEmptyResults : ConversionPattern {
  explicit LowerEmptyResults(MLIRContext* ctx) : ConversionPattern(MatchAnyOpTypeTag(), /*benefit=*/10, ctx) {}
  LogicalResult matchAndRewrite(Operation* op, ArrayRef<Value>, ConversionPatternRewriter& rw) const override {
    if (!isa<ir::LinnetDialect>(op->getDialect()) || op->getNumResults() == 0) return failure();
    SmallVector<Value> empties;
    for (Type t : op->getResultTypes()) {
      auto type = dyn_cast<RankedTensorType>(t);
      if (!type || !type.hasStaticShape() || type.getNumElements() != 0) return failure();
      empties.push_back(tensor::EmptyOp::create(rw, op->getLoc(), type.getShape(), type.getElementType()));
    }
    rw.replaceOp(op, empties);
    return success();
  }
};

struct LowerToLinalgPass : PassWrapper<LowerToLinalgPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(LowerToLinalgPass)
  LowerToLinalgPass() = default;
  explicit LowerToLinalgPass(const SharedOptions& options) : options(options) {}
  SharedOptions options;
  StringRef getArgument() const final { return "linnet-to-linalg"; }
  StringRef getDescription() const final { return "Lower the linnet dialect to linalg, tensor, arith, math and scf"; }
  void getDependentDialects(DialectRegistry& registry) const override {
    registry.insert<arith::ArithDialect, linalg::LinalgDialect, math::MathDialect, scf::SCFDialect,
                    tensor::TensorDialect>();
  }
  void runOnOperation() override {
    MLIRContext* ctx = &getContext();
    ConversionTarget target(*ctx);
    target.addIllegalDialect<ir::LinnetDialect>();
    // A param in a storage format is read by the target's own kernels.
    target.addLegalOp<ir::PackedMatmulOp, ir::PackedGatherOp, ir::UnpackOp>();
    target.addDynamicallyLegalOp<ir::AttentionOp, ir::AttentionRowsOp, ir::AttentionGradOp>(
        [this](Operation* op) { return targetKeepsAttention(op, options); });
    target.addDynamicallyLegalOp<ir::MatmulOp>([this](Operation* op) {
      return targetKeepsDecodeProduct(op, options) || targetKeepsLibraryProduct(op, options);
    });
    target.addDynamicallyLegalOp<ir::ReduceOp>([this](Operation* op) { return targetKeepsRowReduction(op, options); });
    target.addLegalDialect<arith::ArithDialect, linalg::LinalgDialect, math::MathDialect, scf::SCFDialect,
                           tensor::TensorDialect>();
    RewritePatternSet patterns(ctx);
    patterns.add<LowerEmptyResults>(ctx);
    lowering::populateElementwisePatterns(patterns);
    lowering::populateContractionPatterns(patterns);
    lowering::populateDataMovementPatterns(patterns);
    // Partial: func, memref and bufferization ops (the hoisted globals) stay.
    if (failed(applyPartialConversion(getOperation(), target, std::move(patterns)))) signalPassFailure();
  }
};

}  // namespace

std::unique_ptr<Pass> createLowerToLinalgPass(const SharedOptions& options) {
  return std::make_unique<LowerToLinalgPass>(options);
}

void registerPasses() {
  PassRegistration<LowerToLinalgPass>();
  registerHoistConstantsPass();
  registerExpandAttentionPass();
  registerPackParamsPass();
  registerGemmProductsPass();
  registerUnshareSplatsPass();
  registerFuseElementwisePass();
}

}  // namespace linnet::transforms
