#include "transforms/pipeline.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>

#include "llvm/Support/raw_ostream.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassRegistry.h"
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
  mlir::ScopedDiagnosticHandler handler(module.getContext(), [&](mlir::Diagnostic& d) {
    os << d.getLocation() << ": " << d.str() << "\n";
    return mlir::success();
  });
  if (mlir::failed(pm.run(module))) throw PipelineError(fmt::format("internal compiler error in {}:\n{}", what, diagnostics));
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
  pm.addPass(createPackParamsPass());  // after them: it rewrites transpose_b products
  pm.addPass(createHoistConstantsPass());
  pm.addPass(createLowerToLinalgPass(options));
  addPipeline(pm, "canonicalize,cse");
}

void lowerToLinalg(mlir::ModuleOp module, const SharedOptions& options) {
  mlir::PassManager pm(module.getContext(), mlir::ModuleOp::getOperationName());
  addSharedPipeline(pm, options);
  run(module, pm, "linnet-to-linalg");
}

}  // namespace linnet::transforms
