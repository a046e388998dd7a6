#include "targets/cpu/approximate_math.h"

#include <array>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "transforms/pipeline.h"

namespace linnet::cpu {

namespace {

// Where the polynomial hands over to the exp form: below it 1 - 2/(e + 1)
// would cancel to few correct bits.
constexpr double kPolynomialBound = 0.625;
// (tanh(x) - x) / x^3 as a polynomial in t = x^2 on [0, 0.625^2]: a
// relative-error least-squares fit on Chebyshev nodes (near minimax), the
// f32 values of its coefficients, lowest first
// (tests/ops/fit_tanh_polynomial.py prints them and their error).
constexpr std::array<double, 6> kTanhOddTerms = {-0.3333333134651184, 0.1333320587873459,   -0.05394670367240906,
                                                 0.021700501441955566, -0.008177093230187893, 0.002142803743481636};

struct TanhAsExp : mlir::OpRewritePattern<mlir::math::TanhOp> {
  using OpRewritePattern::OpRewritePattern;

  mlir::LogicalResult matchAndRewrite(mlir::math::TanhOp op, mlir::PatternRewriter& rw) const override {
    mlir::Type type = op.getType();
    if (!mlir::getElementTypeOrSelf(type).isF32()) return mlir::failure();
    mlir::Location l = op.getLoc();
    mlir::Value x = op.getOperand();
    auto constant = [&](double v) -> mlir::Value { return mlir::arith::ConstantOp::create(rw, l, splat(type, v, rw)); };
    mlir::Value ax = mlir::math::AbsFOp::create(rw, l, x);
    // Near zero: x + x^3 P(x^2), Horner's rule in fused multiply-adds.
    mlir::Value t = mlir::arith::MulFOp::create(rw, l, x, x);
    mlir::Value p = constant(kTanhOddTerms.back());
    for (size_t k = kTanhOddTerms.size() - 1; k-- > 0;) p = mlir::math::FmaOp::create(rw, l, p, t, constant(kTanhOddTerms[k]));
    mlir::Value xt = mlir::arith::MulFOp::create(rw, l, x, t);
    mlir::Value small = mlir::math::FmaOp::create(rw, l, xt, p, x);
    // Elsewhere: 1 - 2 / (exp(2|x|) + 1) with x's sign (exp's overflow to
    // infinity gives exactly 1; a NaN stays NaN).
    mlir::Value e = mlir::math::ExpOp::create(rw, l, mlir::arith::AddFOp::create(rw, l, ax, ax));
    mlir::Value q = mlir::arith::DivFOp::create(rw, l, constant(2.0), mlir::arith::AddFOp::create(rw, l, e, constant(1.0)));
    mlir::Value large = mlir::math::CopySignOp::create(rw, l, mlir::arith::SubFOp::create(rw, l, constant(1.0), q), x);
    mlir::Value near = mlir::arith::CmpFOp::create(rw, l, mlir::arith::CmpFPredicate::OLT, ax, constant(kPolynomialBound));
    rw.replaceOpWithNewOp<mlir::arith::SelectOp>(op, near, small, large);
    return mlir::success();
  }

  static mlir::TypedAttr splat(mlir::Type type, double v, mlir::PatternRewriter& rw) {
    mlir::FloatAttr f = rw.getF32FloatAttr(static_cast<float>(v));
    if (auto shaped = mlir::dyn_cast<mlir::ShapedType>(type)) return mlir::DenseElementsAttr::get(shaped, f);
    return f;
  }
};

}  // namespace

void approximateMath(mlir::ModuleOp module) {
  mlir::RewritePatternSet patterns(module.getContext());
  patterns.add<TanhAsExp>(module.getContext());
  if (mlir::failed(mlir::applyPatternsGreedily(module, std::move(patterns))))
    throw transforms::PipelineError("rewriting math.tanh did not converge");
}

}  // namespace linnet::cpu
