#include "transforms/pipeline.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>

#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/raw_ostream.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "ir/dialect.h"
#include "transforms/passes.h"

namespace linnet::transforms {

void registerDialects(mlir::DialectRegistry& registry) {
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
}

void addPipeline(mlir::OpPassManager& pm, const std::string& pipeline) {
  // Textual pipelines name upstream passes, which must be registered once.
  static bool registered = [] {
    mlir::registerAllPasses();
    return true;
  }();
  (void)registered;
  std::string errors;
  llvm::raw_string_ostream os(errors);
  if (mlir::failed(mlir::parsePassPipeline(pipeline, pm, os))) throw PipelineError("bad pass pipeline: " + errors);
}

void run(mlir::ModuleOp module, mlir::PassManager& pm, const char* what) {
  if (std::getenv("LINNET_PRINT_PIPELINE")) {
    std::string text;
    llvm::raw_string_ostream os(text);
    pm.printAsTextualPipeline(os);
    fprintf(stderr, "linnetc: %s: %s\n", what, text.c_str());
  }
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  bool errors = false;
  mlir::ScopedDiagnosticHandler handler(module.getContext(), [&](mlir::Diagnostic& d) {
    os << d.getLocation() << ": " << d.str() << "\n";
    errors |= d.getSeverity() == mlir::DiagnosticSeverity::Error;
    return mlir::success();
  });
  // An error diagnostic fails the pipeline even when its pass succeeds
  // (gpu-module-to-binary reports a missing libdevice and carries on).
  if (mlir::failed(pm.run(module)) || errors)
    throw PipelineError(fmt::format("internal compiler error in {}:\n{}", what, diagnostics));
}

std::string translateToLLVMIR(mlir::ModuleOp module) {
  llvm::LLVMContext llvmContext;
  auto llvmModule = mlir::translateModuleToLLVMIR(module, llvmContext, "linnet");
  if (!llvmModule) throw PipelineError("internal compiler error: translation to LLVM IR failed");
  std::string text;
  llvm::raw_string_ostream os(text);
  llvmModule->print(os, nullptr);
  return text;
}

bool targetKeepsAttention(mlir::Operation* op, const SharedOptions& options) {
  auto attention = mlir::dyn_cast<ir::AttentionOp>(op);
  if (!attention || !options.targetAttentionF32) return false;
  auto k = attention.getK().getType();
  return k.getElementType().isF32() && k.getRank() <= 4;  // [..L, K, D], ..L at most two axes
}

void addSharedPipeline(mlir::OpPassManager& pm, const SharedOptions& options) {
  pm.addPass(createExpandAttentionPass(options));
  addPipeline(pm, "canonicalize");  // the linnet peepholes (a product with a transpose) first
  pm.addPass(createPackParamsPass(options));  // after them: it rewrites transpose_b products
  if (options.hoistConstants) pm.addPass(createHoistConstantsPass());
  pm.addPass(createLowerToLinalgPass(options));
  addPipeline(pm, "canonicalize,cse");
}

void addBufferization(mlir::OpPassManager& pm, bool deallocate) {
  addPipeline(pm,
              "canonicalize,"
              "one-shot-bufferize{bufferize-function-boundaries=1 allow-return-allocs-from-loops=1 "
              "function-boundary-type-conversion=identity-layout-map},drop-equivalent-buffer-results,canonicalize");
  if (deallocate) addPipeline(pm, "buffer-deallocation-pipeline");
  addPipeline(pm, "convert-bufferization-to-memref,canonicalize");
}

void lowerToLinalg(mlir::ModuleOp module, const SharedOptions& options) {
  mlir::PassManager pm(module.getContext(), mlir::ModuleOp::getOperationName());
  addSharedPipeline(pm, options);
  run(module, pm, "linnet-to-linalg");
}

}  // namespace linnet::transforms
