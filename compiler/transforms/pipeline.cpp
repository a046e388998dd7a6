#include "transforms/pipeline.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <optional>

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
  if (!options.targetAttentionF32) return false;
  // Made only for such a target; its verifier holds it to f32 and ..L of at most two axes.
  if (mlir::isa<ir::AttentionRowsOp, ir::AttentionGradOp>(op)) return true;
  auto attention = mlir::dyn_cast<ir::AttentionOp>(op);
  if (!attention) return false;
  auto k = attention.getK().getType();
  return k.getElementType().isF32() && k.getRank() <= 4;  // [..L, K, D], ..L at most two axes
}

namespace {

// The rows of x a float product with static shapes multiplies: all but the
// last axis of a 2-D weight's x, or M of a stack [..L, M, K] x [..L, .., ..]
// with the same ..L (no broadcast). None for any other product.
std::optional<int64_t> stackedProductRows(ir::MatmulOp matmul) {
  auto a = mlir::cast<mlir::RankedTensorType>(matmul.getA().getType());
  auto w = mlir::cast<mlir::RankedTensorType>(matmul.getB().getType());
  auto out = mlir::cast<mlir::RankedTensorType>(matmul.getType());
  if (w.getRank() < 2 || !a.hasStaticShape() || !w.hasStaticShape() || !out.hasStaticShape()) return std::nullopt;
  for (mlir::Type t : {a.getElementType(), w.getElementType(), out.getElementType()})
    if (!mlir::isa<mlir::FloatType>(t)) return std::nullopt;
  if (w.getRank() == 2) {
    int64_t rows = 1;
    for (int64_t d : out.getShape().drop_back()) rows *= d;
    return rows;
  }
  if (a.getRank() != w.getRank() || a.getShape().drop_back(2) != w.getShape().drop_back(2)) return std::nullopt;
  return a.getShape()[a.getRank() - 2];
}

// linnetc --products library: the module says every product goes to the
// library that can take it.
bool libraryForAll(mlir::Operation* op) {
  auto module = op->getParentOfType<mlir::ModuleOp>();
  auto mode = module ? module->getAttrOfType<mlir::StringAttr>(kProductsAttr) : nullptr;
  return mode && mode.getValue() == "library";
}

}  // namespace

bool targetKeepsDecodeProduct(mlir::Operation* op, const SharedOptions& options) {
  auto matmul = mlir::dyn_cast<ir::MatmulOp>(op);
  if (!matmul || !options.targetDecodeProducts) return false;
  if (libraryForAll(op) && targetKeepsLibraryProduct(op, options)) return false;
  std::optional<int64_t> rows = stackedProductRows(matmul);
  // b read as [.., K, N]: only a long reduction is worth splitting.
  auto a = mlir::cast<mlir::RankedTensorType>(matmul.getA().getType());
  if (!matmul.getTransposeB() && a.getShape().back() < SharedOptions::kMinSplitLength) return false;
  return rows && *rows <= SharedOptions::kMaxDecodeRows;
}

bool targetKeepsLibraryProduct(mlir::Operation* op, const SharedOptions& options) {
  auto matmul = mlir::dyn_cast<ir::MatmulOp>(op);
  if (!matmul || !options.targetLibraryProducts) return false;
  std::optional<int64_t> rows = stackedProductRows(matmul);
  if (!rows || *rows < (libraryForAll(op) ? 1 : SharedOptions::kMinLibraryRows)) return false;
  // One element type of the three that cuBLASLt takes, x a matrix or more.
  mlir::Type t = matmul.getType().getElementType();
  return (t.isF32() || t.isBF16() || t.isF16()) && matmul.getA().getType().getElementType() == t &&
         matmul.getB().getType().getElementType() == t && matmul.getA().getType().getRank() >= 2;
}

bool targetKeepsRowReduction(mlir::Operation* op, const SharedOptions& options) {
  auto reduce = mlir::dyn_cast<ir::ReduceOp>(op);
  if (!reduce || !options.targetRowReductions) return false;
  using K = ir::ReduceKind;
  K kind = reduce.getKind();
  if (kind != K::Sum && kind != K::Mean && kind != K::Max && kind != K::Min) return false;
  auto x = mlir::cast<mlir::RankedTensorType>(reduce.getX().getType());
  auto out = mlir::cast<mlir::RankedTensorType>(reduce.getType());
  if (!x.hasStaticShape() || x.getRank() == 0 || !mlir::isa<mlir::FloatType>(x.getElementType()) ||
      !mlir::isa<mlir::FloatType>(out.getElementType()))
    return false;
  return reduce.getAxes().size() == 1 && reduce.getAxes()[0] == x.getRank() - 1 &&
         x.getShape().back() >= SharedOptions::kMinTargetRow;
}

void addSharedPipeline(mlir::OpPassManager& pm, const SharedOptions& options) {
  pm.addPass(createExpandAttentionPass(options));
  addPipeline(pm, "canonicalize");  // the linnet peepholes (a product with a transpose) first
  pm.addPass(createPackParamsPass(options));  // after them: it rewrites transpose_b products
  if (options.gemmProducts) pm.addPass(createGemmProductsPass());  // what pack-params left
  if (options.hoistConstants) pm.addPass(createHoistConstantsPass());
  pm.addPass(createLowerToLinalgPass(options));
  addPipeline(pm, "canonicalize,cse");
}

void addBufferization(mlir::OpPassManager& pm, bool deallocate) {
  addPipeline(pm, "canonicalize");
  pm.addPass(createUnshareSplatsPass());
  // A value written into a slice of a larger tensor (a stacked tape, a
  // concatenation) is computed in that slice, not in a buffer of its own
  // then copied.
  addPipeline(pm, "eliminate-empty-tensors");
  addPipeline(pm,
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
