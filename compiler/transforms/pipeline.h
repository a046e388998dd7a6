// The shared (target-independent) pipeline, and running pass pipelines.
//
//   linnet-hoist-constants -> linnet-to-linalg -> canonicalize, cse
//
// Its output, the `linalg` stage (linalg/tensor/arith/math/scf on static
// tensors), is where every target's own lowering starts (targets/target.h).
#pragma once

#include <stdexcept>
#include <string>

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"

namespace linnet::transforms {

// A pass pipeline that failed; the message holds MLIR's diagnostics.
struct PipelineError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Every dialect and extension the shared pipeline and upstream passes use.
void registerDialects(mlir::DialectRegistry& registry);

// The shared passes, added to `pm` (a module pass manager).
void addSharedPipeline(mlir::OpPassManager& pm);
// Runs them on `module`: the `linalg` stage.
void lowerToLinalg(mlir::ModuleOp module);

// Adds a textual pipeline of upstream passes to `pm`.
void addPipeline(mlir::OpPassManager& pm, const std::string& pipeline);
// Runs `pm` on `module`; a failure is a PipelineError naming `what`, with
// the diagnostics. LINNET_PRINT_PIPELINE=1 prints each pipeline first.
void run(mlir::ModuleOp module, mlir::PassManager& pm, const char* what);

}  // namespace linnet::transforms
