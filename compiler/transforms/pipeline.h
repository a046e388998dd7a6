// The shared (target-independent) pipeline, and running pass pipelines.
//
//   linnet-expand-attention -> canonicalize -> linnet-pack-params ->
//   [linnet-gemm-products] -> linnet-hoist-constants -> linnet-to-linalg ->
//   canonicalize, cse
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
  // linnet-expand-attention picks, at run time, the shortest key prefix the
  // mask reaches (a branch on the mask's values): for every attention
  // (Always: the CPU, whose host reads the mask where it lies), only where
  // the scores product goes to the target's library (LibraryProducts: cuda,
  // whose host waits for the device to read the prefix's length, which a
  // CUDA graph cannot hold; decode's own kernels skip the unseen keys on the
  // device instead), or never (every key, no branch).
  enum class KeyPrefix { Never, LibraryProducts, Always };
  KeyPrefix attentionKeyPrefix = KeyPrefix::Always;
  // linnet-hoist-constants: argument-independent tensors computed once by
  // @linnet_init into host globals; off, they are computed in every call.
  bool hoistConstants = true;
  // linnet-pack-params gives f32 weight products to the target as
  // packed_matmul "f32" (the CPU's kernel); off, they stay linnet.matmul.
  bool f32WeightProducts = true;
  // linnet-gemm-products: every other f32 product with a matrix b (a
  // gradient's backward products) to the target's GEMM as packed_matmul
  // "f32" as well (the CPU's kernel); off, they stay linnet.matmul.
  bool gemmProducts = false;
  // A float product of at most kMaxDecodeRows rows of x with a weight
  // [N, K] read by transpose_b (decode's), or of [..L, M, K] with
  // [..L, N, K] (attention's scores against a cache), M at most
  // kMaxDecodeRows, stays linnet.matmul for the target's own kernel (cuda:
  // a warp per output, targets/cuda/warp_kernels.h); so does one with b read
  // as [.., K, N] when K is at least kMinSplitLength (attention's
  // probabilities times the cache's values: cuda splits K, and runs a
  // thread per output column, not per row).
  bool targetDecodeProducts = false;
  static constexpr int64_t kMaxDecodeRows = 8;
  static constexpr int64_t kMinSplitLength = 64;
  // A float sum, mean, max or min over the last axis alone, of at least
  // kMinTargetRow elements, stays linnet.reduce for the target's own kernel
  // (cuda: a warp per row).
  bool targetRowReductions = false;
  static constexpr int64_t kMinTargetRow = 64;
  // A product of more rows than a decode product (kMaxDecodeRows) whose a,
  // b and result share one float type, b a weight (2-D) or a stack with a's
  // leading axes (batched, no broadcast), stays linnet.matmul for a
  // library's GEMM (cuda: cuBLASLt; targets/cuda/library_products.h).
  bool targetLibraryProducts = false;
  static constexpr int64_t kMinLibraryRows = kMaxDecodeRows + 1;
};

// A module attribute: "library" sends every product a target's library
// takes to it (targetLibraryProducts), decode's too (linnetc --products).
inline constexpr char kProductsAttr[] = "linnet.products";

// True when `options` leave this attention op (or a gradient's
// linnet.attention_rows or linnet.attention_grad) to the target.
bool targetKeepsAttention(mlir::Operation* attention, const SharedOptions& options);
// True when `options` leave this product to the target (targetDecodeProducts).
bool targetKeepsDecodeProduct(mlir::Operation* matmul, const SharedOptions& options);
// True when `options` leave this product to a library (targetLibraryProducts).
bool targetKeepsLibraryProduct(mlir::Operation* matmul, const SharedOptions& options);
// True when `options` leave this reduction to the target (targetRowReductions).
bool targetKeepsRowReduction(mlir::Operation* reduce, const SharedOptions& options);

// The shared passes, added to `pm` (a module pass manager).
void addSharedPipeline(mlir::OpPassManager& pm, const SharedOptions& options = {});
// One-shot bufferization across function boundaries, then (with
// `deallocate`) ownership-based deallocation: what every target runs first
// on the `linalg` stage. A target whose allocations last until the call
// returns (a per-call arena) needs no deallocation.
void addBufferization(mlir::OpPassManager& pm, bool deallocate = true);
// Runs them on `module`: the `linalg` stage.
void lowerToLinalg(mlir::ModuleOp module, const SharedOptions& options = {});

// The module (in the LLVM dialect) as LLVM IR text, through the
// translations the target registered.
std::string translateToLLVMIR(mlir::ModuleOp module);

// Adds a textual pipeline of upstream passes to `pm`.
void addPipeline(mlir::OpPassManager& pm, const std::string& pipeline);
// Runs `pm` on `module`; a failure, or any error diagnostic, is a
// PipelineError naming `what`, with the diagnostics. LINNET_PRINT_PIPELINE=1 prints each pipeline first.
void run(mlir::ModuleOp module, mlir::PassManager& pm, const char* what);

}  // namespace linnet::transforms
