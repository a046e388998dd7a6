// linnet-fuse-elementwise: a linalg.generic that only maps elements (every
// loop parallel, a body of plain operations: no inner loop) is computed
// inside its one consumer, where that consumer reads it element for element
// (a permutation map, no broadcast). A chain of such ops (attention's scale,
// mask, subtraction and exp; a gradient's products of cotangents) becomes
// one pass over memory instead of one per op, each of which read and wrote
// megabytes. Every element's operations are the same ones in the same
// order, so results keep their bits.
//
// MLIR's linalg-fuse-elementwise-ops fuses unrestricted, and so took a
// reduction or a dot product written as a parallel generic with an inner
// loop, and a producer read by broadcast, into consumers that recomputed it
// for each of their elements (softmax's sum once per probability: decode
// 6x slower). Here neither is fused, nor a value with other users.
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "transforms/passes.h"

namespace linnet::transforms {

namespace {

using namespace mlir;

// Every loop parallel and no operation with a region (an inner loop).
bool onlyMapsElements(linalg::GenericOp g) {
  if (g.getNumLoops() != g.getNumParallelLoops()) return false;
  for (Operation& op : g.getBody()->without_terminator())
    if (op.getNumRegions() != 0 || !isPure(&op)) return false;
  return true;
}

bool fusable(OpOperand* operand) {
  auto producer = operand->get().getDefiningOp<linalg::GenericOp>();
  auto consumer = dyn_cast<linalg::GenericOp>(operand->getOwner());
  if (!producer || !consumer || !onlyMapsElements(producer) || !operand->get().hasOneUse()) return false;
  return consumer.getMatchingIndexingMap(operand).isPermutation();
}

struct FuseElementwisePass : PassWrapper<FuseElementwisePass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(FuseElementwisePass)
  StringRef getArgument() const final { return "linnet-fuse-elementwise"; }
  StringRef getDescription() const final {
    return "an elementwise linalg.generic with one consumer that reads it element for element, computed in "
           "that consumer";
  }
  void getDependentDialects(DialectRegistry& registry) const override {
    registry.insert<linalg::LinalgDialect, tensor::TensorDialect>();
  }
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    linalg::populateElementwiseOpsFusionPatterns(patterns, fusable);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns)))) signalPassFailure();
  }
};

}  // namespace

std::unique_ptr<Pass> createFuseElementwisePass() { return std::make_unique<FuseElementwisePass>(); }
void registerFuseElementwisePass() { PassRegistration<FuseElementwisePass>(); }

}  // namespace linnet::transforms
