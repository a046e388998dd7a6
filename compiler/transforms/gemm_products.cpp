// linnet-gemm-products: the f32 products that linnet-pack-params leaves as
// linnet.matmul go to the target's GEMM as packed_matmul "f32", b read as
// it lies ([.., N, K], or [.., K, N] marked w_kn): those whose b is a
// matrix (a gradient's dX = dY W and dW = dYᵀ X: two activations, or a
// weight not read as [N, K]), and those of two stacks of matrices with the
// same stack axes (attention written out: scores, probabilities times
// values, and their gradients). Without it they lower to plain loops: the
// kernel packs panels and runs tiled, the loops do not. Products that
// broadcast a stack, and those with `keep_columns` or `skip_zero_terms`
// (promises only a target's own kernel takes), stay.
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

// a [B.., M, K] and b [B.., K, N] (or [B.., N, K]) with the same B..: no broadcast.
bool sameStack(Type a, Type b) {
  auto ra = cast<RankedTensorType>(a), rb = cast<RankedTensorType>(b);
  if (rb.getRank() < 3 || ra.getRank() != rb.getRank()) return false;
  return ra.getShape().drop_back(2) == rb.getShape().drop_back(2);
}

bool takes(ir::MatmulOp m) {
  if (!isF32Matrix(m.getA().getType(), -1) || !isF32Matrix(m.getType(), -1) || m.getKeepColumns() ||
      m.getSkipZeroTerms())
    return false;
  return isF32Matrix(m.getB().getType(), 2) ||
         (isF32Matrix(m.getB().getType(), -1) && sameStack(m.getA().getType(), m.getB().getType()));
}

struct GemmProductsPass : PassWrapper<GemmProductsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(GemmProductsPass)
  StringRef getArgument() const final { return "linnet-gemm-products"; }
  StringRef getDescription() const final {
    return "f32 products with a matrix b, or of two stacks of matrices, that no weight kernel takes yet, as "
           "packed_matmul \"f32\"";
  }
  void getDependentDialects(DialectRegistry& registry) const override { registry.insert<ir::LinnetDialect>(); }
  void runOnOperation() override {
    SmallVector<ir::MatmulOp> products;
    getOperation().walk([&](ir::MatmulOp m) {
      if (takes(m)) products.push_back(m);
    });
    for (ir::MatmulOp m : products) {
      OpBuilder b(m);
      // b [.., K, N] is read as it lies (w_kn): no transpose formed in memory.
      Value r = ir::PackedMatmulOp::create(b, m.getLoc(), m.getType(), m.getA(), m.getB(), "f32",
                                           /*w_kn=*/!m.getTransposeB());
      m.replaceAllUsesWith(r);
      m.erase();
    }
  }
};

}  // namespace

std::unique_ptr<Pass> createGemmProductsPass() { return std::make_unique<GemmProductsPass>(); }
void registerGemmProductsPass() { PassRegistration<GemmProductsPass>(); }

}  // namespace linnet::transforms
