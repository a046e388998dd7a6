// linnet-gemm-products: the f32 products that linnet-pack-params leaves as
// linnet.matmul and whose b is a matrix (a gradient's dX = dY W and
// dW = dYᵀ X: two activations, or a weight not read as [N, K]) go to the
// target's GEMM as packed_matmul "f32" too, b read as [N, K] (a transpose
// formed where b is [K, N]). Without it they lower to plain loops: the
// kernel packs panels and runs tiled, the loops do not. Products with a
// stack of matrices as b (attention's) and those with `keep_columns` or
// `skip_zero_terms` (promises only a target's own kernel takes) stay.
#include "ir/dialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/Pass/Pass.h"
#include "transforms/passes.h"

namespace linnet::transforms {

namespace {

using namespace mlir;

bool isF32Matrix(Type t, int64_t rank) {
  auto r = dyn_cast<RankedTensorType>(t);
  return r && r.getElementType().isF32() && (rank < 0 ? r.getRank() >= 1 : r.getRank() == rank);
}

bool takes(ir::MatmulOp m) {
  return isF32Matrix(m.getA().getType(), -1) && isF32Matrix(m.getB().getType(), 2) &&
         isF32Matrix(m.getType(), -1) && !m.getKeepColumns() && !m.getSkipZeroTerms();
}

struct GemmProductsPass : PassWrapper<GemmProductsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(GemmProductsPass)
  StringRef getArgument() const final { return "linnet-gemm-products"; }
  StringRef getDescription() const final {
    return "f32 products with a matrix b that no weight kernel takes yet, as packed_matmul \"f32\"";
  }
  void getDependentDialects(DialectRegistry& registry) const override { registry.insert<ir::LinnetDialect>(); }
  void runOnOperation() override {
    SmallVector<ir::MatmulOp> products;
    getOperation().walk([&](ir::MatmulOp m) {
      if (takes(m)) products.push_back(m);
    });
    for (ir::MatmulOp m : products) {
      OpBuilder b(m);
      Value w = m.getB();
      if (!m.getTransposeB()) {  // [K, N] -> [N, K]
        auto t = cast<RankedTensorType>(w.getType());
        auto transposed = RankedTensorType::get({t.getShape()[1], t.getShape()[0]}, t.getElementType());
        w = ir::PermuteOp::create(b, m.getLoc(), transposed, w, b.getDenseI64ArrayAttr({1, 0}));
      }
      Value r = ir::PackedMatmulOp::create(b, m.getLoc(), m.getType(), m.getA(), w, "f32");
      m.replaceAllUsesWith(r);
      m.erase();
    }
  }
};

}  // namespace

std::unique_ptr<Pass> createGemmProductsPass() { return std::make_unique<GemmProductsPass>(); }
void registerGemmProductsPass() { PassRegistration<GemmProductsPass>(); }

}  // namespace linnet::transforms
