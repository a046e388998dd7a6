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
// Linear's `matmul(x, permute(weight, [1, 0]))` would.
struct MatmulOfTransposed : mlir::OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;
  mlir::LogicalResult matchAndRewrite(MatmulOp op, mlir::PatternRewriter& rewriter) const override {
    if (op.getTransposeB()) return mlir::failure();
    auto permute = op.getB().getDefiningOp<PermuteOp>();
    if (!permute || !swapsLastTwo(permute.getPerm())) return mlir::failure();
    rewriter.modifyOpInPlace(op, [&] {
      op.getBMutable().assign(permute.getX());
      op.setTransposeB(true);
    });
    return mlir::success();
  }
};

}  // namespace

void MatmulOp::getCanonicalizationPatterns(mlir::RewritePatternSet& results, mlir::MLIRContext* context) {
  results.add<MatmulOfTransposed>(context);
}

}  // namespace linnet::ir
