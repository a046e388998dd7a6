// Canonicalization patterns of the `linnet` dialect: peepholes every front
// end gets for free, run by the shared pipeline before linnet-to-linalg.
#include "ir/dialect.h"
#include "mlir/IR/PatternMatch.h"

namespace linnet::ir {

bool swapsLastTwo(llvm::ArrayRef<int64_t> perm) {
  size_t n = perm.size();
  if (n < 2 || perm[n - 2] != static_cast<int64_t>(n - 1) || perm[n - 1] != static_cast<int64_t>(n - 2))
    return false;
  for (size_t i = 0; i + 2 < n; ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return true;
}

namespace {

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

// The transpose of a product, swapping its last two axes, is the product
// the other way round: (a bᵀ)ᵀ = b aᵀ, (a b)ᵀ = bᵀ aᵀ. A gradient's
// weight cotangent dW = (dYᵀ X)ᵀ so needs no transpose of its own (the
// target reads bᵀ as it lies; each element's sum is the same).
struct TransposedProduct : mlir::OpRewritePattern<PermuteOp> {
  using OpRewritePattern::OpRewritePattern;
  mlir::LogicalResult matchAndRewrite(PermuteOp op, mlir::PatternRewriter& rewriter) const override {
    auto product = op.getX().getDefiningOp<MatmulOp>();
    if (!product || !swapsLastTwo(op.getPerm()) || !product->hasOneUse() || product.getKeepColumns() ||
        product.getSkipZeroTerms())
      return mlir::failure();
    auto a = mlir::cast<mlir::RankedTensorType>(product.getA().getType());
    auto b = mlir::cast<mlir::RankedTensorType>(product.getB().getType());
    // Operands of one rank only: bᵀ aᵀ with a stack against a matrix would
    // be a broadcast product, which no target's GEMM takes.
    if (a.getRank() < 2 || a.getRank() != b.getRank()) return mlir::failure();
    mlir::Value first = product.getB(), second = product.getA();
    if (!product.getTransposeB()) {
      first = swapped(rewriter, op.getLoc(), product.getB());
      second = swapped(rewriter, op.getLoc(), product.getA());
    }
    auto result = MatmulOp::create(rewriter, op.getLoc(), op.getType(), first, second, mlir::Value(),
                                   product.getTransposeB(), false);
    rewriter.replaceOp(op, result.getResult());
    return mlir::success();
  }

  static mlir::Value swapped(mlir::PatternRewriter& rewriter, mlir::Location loc, mlir::Value x) {
    auto type = mlir::cast<mlir::RankedTensorType>(x.getType());
    llvm::SmallVector<int64_t> perm = llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
    std::swap(perm[perm.size() - 2], perm[perm.size() - 1]);
    llvm::SmallVector<int64_t> shape(type.getShape());
    std::swap(shape[shape.size() - 2], shape[shape.size() - 1]);
    return PermuteOp::create(rewriter, loc, mlir::RankedTensorType::get(shape, type.getElementType()), x, perm);
  }
};

}  // namespace

void MatmulOp::getCanonicalizationPatterns(mlir::RewritePatternSet& results, mlir::MLIRContext* context) {
  results.add<MatmulOfTransposed>(context);
}

void PermuteOp::getCanonicalizationPatterns(mlir::RewritePatternSet& results, mlir::MLIRContext* context) {
  results.add<PermuteOfPermute, TransposedProduct>(context);
}

}  // namespace linnet::ir
