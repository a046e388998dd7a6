#include "targets/cpu/exp_underflow.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/TypeUtilities.h"

namespace linnet::cpu {

namespace {

// Below this, expf is +0 (exp_underflow.h); an f32 value exactly.
constexpr float kZeroBelow = -104.0f;

mlir::Value splat(mlir::OpBuilder& b, mlir::Location l, mlir::Type type, float v) {
  mlir::FloatAttr f = b.getF32FloatAttr(v);
  if (auto shaped = mlir::dyn_cast<mlir::ShapedType>(type))
    return mlir::arith::ConstantOp::create(b, l, mlir::DenseElementsAttr::get(shaped, f));
  return mlir::arith::ConstantOp::create(b, l, f);
}

void guard(mlir::math::ExpOp exp) {
  mlir::OpBuilder b(exp);
  mlir::Location l = exp.getLoc();
  mlir::Type type = exp.getType();
  mlir::Value x = exp.getOperand();
  mlir::Value zero = splat(b, l, type, 0.0f);
  mlir::Value under =
      mlir::arith::CmpFOp::create(b, l, mlir::arith::CmpFPredicate::OLT, x, splat(b, l, type, kZeroBelow));
  exp.getOperandMutable().assign(mlir::arith::SelectOp::create(b, l, under, zero, x));
  b.setInsertionPointAfter(exp);
  auto result = mlir::arith::SelectOp::create(b, l, under, zero, exp.getResult());
  exp.getResult().replaceAllUsesExcept(result, result);
}

}  // namespace

void guardExpUnderflow(mlir::ModuleOp module) {
  llvm::SmallVector<mlir::math::ExpOp> exps;
  module.walk([&](mlir::math::ExpOp e) {
    if (mlir::getElementTypeOrSelf(e.getType()).isF32()) exps.push_back(e);
  });
  for (mlir::math::ExpOp e : exps) guard(e);
}

}  // namespace linnet::cpu
