#include "targets/cuda/fuse_elementwise.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "transforms/pipeline.h"

namespace linnet::cuda {

namespace {

using namespace mlir;

// A generic of parallel loops whose body holds no region (no loop, no
// branch): cheap to compute again inside each consumer.
bool plainElementwise(Operation* op) {
  auto generic = dyn_cast_or_null<linalg::GenericOp>(op);
  if (!generic || generic.getNumParallelLoops() != generic.getNumLoops()) return false;
  for (Operation& inner : generic.getRegion().front())
    if (inner.getNumRegions() != 0) return false;
  return true;
}

}  // namespace

void fuseElementwise(ModuleOp module) {
  RewritePatternSet patterns(module.getContext());
  linalg::populateElementwiseOpsFusionPatterns(patterns, [](OpOperand* operand) {
    return plainElementwise(operand->get().getDefiningOp()) && plainElementwise(operand->getOwner());
  });
  if (failed(applyPatternsGreedily(module, std::move(patterns))))
    throw transforms::PipelineError("internal compiler error: fusing elementwise ops did not converge");
}

}  // namespace linnet::cuda
