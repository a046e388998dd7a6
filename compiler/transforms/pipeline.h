// The shared (target-independent) pipeline, and running pass pipelines.
//
//   linnet-expand-attention -> canonicalize -> linnet-pack-params ->
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

// What a target lowers itself instead of the shared pipeline (targets/target.h).
struct SharedOptions {
  // f32 linnet.attention with at most two leading axes (..L) stays as it
  // is for the target's own kernel (targetKeepsAttention).
  bool targetAttentionF32 = false;
};

// True when `options` leave this attention op to the target.
bool targetKeepsAttention(mlir::Operation* attention, const SharedOptions& options);

// The shared passes, added to `pm` (a module pass manager).
void addSharedPipeline(mlir::OpPassManager& pm, const SharedOptions& options = {});
// Runs them on `module`: the `linalg` stage.
void lowerToLinalg(mlir::ModuleOp module, const SharedOptions& options = {});

// Adds a textual pipeline of upstream passes to `pm`.
void addPipeline(mlir::OpPassManager& pm, const std::string& pipeline);
// Runs `pm` on `module`; a failure is a PipelineError naming `what`, with
// the diagnostics. LINNET_PRINT_PIPELINE=1 prints each pipeline first.
void run(mlir::ModuleOp module, mlir::PassManager& pm, const char* what);

}  // namespace linnet::transforms
