// Canonicalization patterns of the `linnet` dialect: peepholes every front
// end gets for free, run by the shared pipeline before linnet-to-linalg.
#include "ir/dialect.h"
#include "mlir/IR/PatternMatch.h"

namespace linnet::ir {

namespace {

// True when `perm` swaps the last two axes and keeps the others in place
// (`[1, 0]`, or attention's `[0, 1, 3, 2]`).
bool swapsLastTwo(llvm::ArrayRef<int64_t> perm) {
  size_t n = perm.size();
  if (n < 2 || perm[n - 2] != static_cast<int64_t>(n - 1) || perm[n - 1] != static_cast<int64_t>(n - 2))
    return false;
  for (size_t i = 0; i + 2 < n; ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return true;
}

// matmul(x, permute(w)) with that swap: read w's rows directly
// (`transpose_b`) instead of forming its transpose on every call, as
// Linear's `matmul(x, permute(weight, [1, 0]))` would. Already
// `transpose_b` (a gradient's dX = dY (Wᵀ)ᵀ): w as it lies, [K, N].
struct MatmulOfTransposed : mlir::OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;
  mlir::LogicalResult matchAndRewrite(MatmulOp op, mlir::PatternRewriter& rewriter) const override {
    auto permute = op.getB().getDefiningOp<PermuteOp>();
    if (!permute || !swapsLastTwo(permute.getPerm())) return mlir::failure();
    rewriter.modifyOpInPlace(op, [&] {
      op.getBMutable().assign(permute.getX());
      op.setTransposeB(!op.getTransposeB());
    });
    return mlir::success();
  }
};

// permute(permute(x, inner), outer) is one permute of x, or x itself (a
// gradient transposes back what its forward transposed).
struct PermuteOfPermute : mlir::OpRewritePattern<PermuteOp> {
  using OpRewritePattern::OpRewritePattern;
  mlir::LogicalResult matchAndRewrite(PermuteOp op, mlir::PatternRewriter& rewriter) const override {
    auto inner = op.getX().getDefiningOp<PermuteOp>();
    llvm::ArrayRef<int64_t> outer = op.getPerm();
    llvm::SmallVector<int64_t> composed;
    for (int64_t axis : outer) composed.push_back(inner ? inner.getPerm()[axis] : axis);
    mlir::Value x = inner ? inner.getX() : op.getX();
    if (llvm::equal(composed, llvm::seq<int64_t>(0, static_cast<int64_t>(composed.size())))) {
      rewriter.replaceOp(op, x);
      return mlir::success();
    }
    if (!inner) return mlir::failure();
    rewriter.replaceOpWithNewOp<PermuteOp>(op, op.getType(), x, composed);
    return mlir::success();
  }
};

}  // namespace

void MatmulOp::getCanonicalizationPatterns(mlir::RewritePatternSet& results, mlir::MLIRContext* context) {
  results.add<MatmulOfTransposed>(context);
}

void PermuteOp::getCanonicalizationPatterns(mlir::RewritePatternSet& results, mlir::MLIRContext* context) {
  results.add<PermuteOfPermute>(context);
}

}  // namespace linnet::ir
