// The passes of the shared (target-independent) path.
#pragma once

#include <memory>

#include "mlir/Pass/Pass.h"

namespace linnet::transforms {

// linnet-to-linalg: the `linnet` dialect to linalg/tensor/arith/math/scf.
std::unique_ptr<mlir::Pass> createLowerToLinalgPass();

// Makes every pass above available to textual pipelines (linnet-opt).
void registerPasses();

}  // namespace linnet::transforms
