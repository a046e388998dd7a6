#include "targets/cuda/pipeline.h"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>

#include "artifact/abi.h"
#include "common/process.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "targets/cuda/kernel_binary.h"
#include "targets/cuda/library_products.h"
#include "targets/cuda/buffer_lifetimes.h"
#include "targets/cuda/fuse_elementwise.h"
#include "targets/cuda/hoist_invariants.h"
#include "targets/cuda/host_reads.h"
#include "targets/cuda/map_to_gpu.h"
#include "targets/cuda/merge_launches.h"
#include "targets/cuda/read_only_arguments.h"
#include "targets/cuda/warp_kernels.h"
#include "transforms/pipeline.h"

namespace linnet::cuda {

using transforms::addPipeline;
using transforms::PipelineError;

transforms::SharedOptions sharedOptions() {
  return {.attentionKeyPrefix = transforms::SharedOptions::KeyPrefix::LibraryProducts,
          .hoistConstants = false,
          .f32WeightProducts = false,
          .targetDecodeProducts = true,
          .targetRowReductions = true,
          .targetLibraryProducts = true};
}

void registerDialects(mlir::DialectRegistry& registry) {
  mlir::registerBuiltinDialectTranslation(registry);
  mlir::registerLLVMDialectTranslation(registry);
  mlir::registerGPUDialectTranslation(registry);
  mlir::registerNVVMDialectTranslation(registry);
  mlir::NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  mlir::gpu::registerOffloadingLLVMTranslationInterfaceExternalModels(registry);
}

namespace {

// The toolkit whose libdevice the kernels link: $LINNET_CUDA_PATH, else the
// one found at configure time.
std::string toolkit() {
  const char* path = std::getenv("LINNET_CUDA_PATH");
  return path ? path : LINNET_CUDA_PATH;
}

void runPipeline(mlir::ModuleOp module, const std::string& pipeline, const char* what) {
  mlir::PassManager pm(module.getContext(), mlir::ModuleOp::getOperationName());
  addPipeline(pm, pipeline);
  transforms::run(module, pm, what);
}

}  // namespace

void lower(mlir::ModuleOp module, Stage stage) {
  if (stage == Stage::Bufferized) return bufferize(module);
  lowerToLaunches(module);
  std::vector<std::string> families = launchFamilies(module);
  runPipeline(module, "gpu-kernel-outlining", "kernel outlining");
  setLaunchFamilies(module, families);
  mergeKernelModules(module);
  markReadOnlyArguments(module);
  if (stage == Stage::Gpu) return;
  // PTX 8.0: the default (6.0) cannot target sm_90.
  runPipeline(module, fmt::format("nvvm-attach-target{{chip={} features=+ptx80 O=3}}", kChip), "attaching NVVM");
  lowerWarpReductionsToShuffles(module);
  runPipeline(module,
              "gpu.module(expand-strided-metadata,lower-affine,convert-scf-to-cf,convert-gpu-to-nvvm,"
              "canonicalize,cse,reconcile-unrealized-casts)",
              "lowering kernels to NVVM");
  readOnlyArgumentsDoNotAlias(module);
  // gpu-module-to-binary reports a missing libdevice as an error diagnostic
  // yet succeeds; transforms::run fails on any error diagnostic, and ptxas
  // would refuse the unresolved `__nv_*` call anyway.
  runPipeline(module, fmt::format("gpu-module-to-binary{{format=isa toolkit={}}}", toolkit()),
              "lowering kernels to PTX");
}

void bufferize(mlir::ModuleOp module) {
  readScalarsOnHost(module);
  hoistSwitchCases(module);
  lowerLibraryProducts(module, sharedOptions());
  // Fused first, so that decode's mask is one generator when the scores'
  // warp kernel computes it where it reads it (warp_kernels.h).
  fuseElementwise(module);
  lowerWarpKernels(module, sharedOptions());
  lowerRowReductions(module, sharedOptions());
  hoistLayerInvariants(module);
  {
    mlir::PassManager pm(module.getContext(), mlir::ModuleOp::getOperationName());
    // Allocations live in the runtime's per-call arena, reset when the
    // call returns: no deallocation (and no host bookkeeping for it).
    transforms::addBufferization(pm, /*deallocate=*/false);
    transforms::run(module, pm, "bufferization");
  }
}

void lowerToLaunches(mlir::ModuleOp module) {
  bufferize(module);
  // cse first: a state's write-back copies a view into an identical view.
  runPipeline(module, "cse", "merging equal views");
  copiesToLinalg(module);
  // No canonicalization until the loops are launches: it would inline
  // one-iteration loops into the host code.
  runPipeline(module, "convert-linalg-to-parallel-loops", "lowering to loops");
  foldConstantLoads(module);
  mapToGpu(module);
  runPipeline(module, "canonicalize,cse", "mapping to the GPU");
  verifyHostCode(module);
  mergeIndependentLaunches(module);
  releaseBuffersAfterLastUse(module);
  sinkConstants(module);
}

std::vector<artifact::Kernel> assembleAndLowerHost(mlir::ModuleOp module, const std::filesystem::path& workDir) {
  std::vector<artifact::Kernel> kernels = assembleKernels(module, workDir);
  runPipeline(module,
              "expand-strided-metadata,lower-affine,convert-scf-to-cf,finalize-memref-to-llvm,gpu-to-llvm,"
              "convert-math-to-llvm,convert-arith-to-llvm,convert-index-to-llvm,convert-func-to-llvm,"
              "convert-cf-to-llvm,reconcile-unrealized-casts",
              "lowering host code to the LLVM dialect");
  return kernels;
}

std::string entryShim(const artifact::Manifest& manifest, const std::vector<std::string>& functions) {
  return "/* Generated by linnetc: one uniform symbol per entry (runtime/artifact/abi.h). */\n" +
         artifact::cEntryPoints(manifest, functions);
}

namespace {

constexpr const char* kLaunchShim =
#include "launch_shim.inc"
    ;
constexpr const char* kLibraryGemmText =
#include "library_gemm.inc"
    ;
constexpr const char* kHostReadText =
#include "host_read.inc"
    ;
constexpr const char* kEmulatedGemmText =
#include "emulated_gemm.inc"
    ;

}  // namespace

const char* const kCudaApiText =
#include "cuda_api.inc"
    ;

std::string emulatedLibraryText() {
  return std::string(kCudaApiText) + kEmulatedGemmText + kLibraryGemmText + kHostReadText;
}

void compileHostLibrary(const std::string& llvmIR, const std::string& entries, const std::filesystem::path& soPath) {
  namespace fs = std::filesystem;
  fs::path dir = soPath.parent_path().empty() ? fs::path(".") : soPath.parent_path();
  std::string stem = soPath.stem().string();
  fs::path ll = dir / (stem + ".ll"), entriesC = dir / (stem + "_entries.c"), shim = dir / (stem + "_launch.c"),
           api = dir / "cuda_api.h";
  std::ofstream(ll) << llvmIR;
  std::ofstream(entriesC) << entries;
  std::ofstream(shim) << kLaunchShim << kLibraryGemmText << kHostReadText;
  std::ofstream(api) << kCudaApiText;
  const char* clang = std::getenv("LINNET_CLANG");
  ProcessResult r = runProcess({clang ? clang : LINNET_CLANG, "-O2", "-fPIC", "-shared", "-w", "-o", soPath.string(),
                                ll.string(), entriesC.string(), shim.string(), "-I", dir.string()});
  for (const fs::path& p : {entriesC, shim, api}) fs::remove(p);
  if (r.exitCode != 0) throw PipelineError(fmt::format("clang failed to build {}:\n{}", soPath.string(), r.errors));
}

}  // namespace linnet::cuda
