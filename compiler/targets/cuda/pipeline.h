// The CUDA target's lowering: from the shared pipeline's `linalg` stage to
// kernels for sm_90 and host code that launches them.
//
//   bufferization (shared) -> memref.copy as linalg.copy -> parallel loops
//   -> host/device split (map_to_gpu.h: launches over 1-D grids, what the
//   host read recomputed in the kernels, allocations in the device arena)
//   -> host-code check -> kernel outlining into one gpu.module
//   (kernel_binary.h) -> NVVM (libdevice linked from the toolkit) -> PTX
//   (+ptx80) -> ptxas -arch=sm_90 -> cubin embedded in the host code
//   -> host code to the LLVM dialect (gpu-to-llvm: mgpu* calls) -> LLVM IR
//   -> clang -shared, with the launch shim (launch_shim.c) and the ABI's
//   entry symbols: model.so, loaded by the runtime's CUDA device.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "artifact/manifest.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "transforms/pipeline.h"

namespace linnet::cuda {

// What the target asks of the shared pipeline (its own target and the
// emulated one alike): host code may not read device memory, so no run-time
// choice of attention's key prefix, no constants in host globals, weight
// products as matmuls, decode's products a warp per output element.
transforms::SharedOptions sharedOptions();

// The GPU, NVVM and LLVM IR translations, and NVVM's target attribute.
void registerDialects(mlir::DialectRegistry& registry);

enum class Stage {
  Bufferized,  // memrefs, before loops
  Gpu,         // host code with gpu.launch_func, the kernels in one gpu.module
  Ptx,         // the kernel module as a gpu.binary of PTX
};
// Lowers `module`, at the `linalg` stage, in place through `stage`.
void lower(mlir::ModuleOp module, Stage stage);

// The Bufferized stage.
void bufferize(mlir::ModuleOp module);

// The part of lower() up to host code with gpu.launch ops (checked by
// verifyHostCode), before outlining: what the emulated target runs too.
void lowerToLaunches(mlir::ModuleOp module);

// From the Ptx stage: assembles the kernels (their reports are returned)
// and lowers the host code to the LLVM dialect.
std::vector<artifact::Kernel> assembleAndLowerHost(mlir::ModuleOp module, const std::filesystem::path& workDir);

// C source for model.so beside the host code: the ABI's entry symbols.
std::string entryShim(const artifact::Manifest& manifest, const std::vector<std::string>& functions);

// What the CPU emulation compiles into its model.so beside the entries:
// cuda_api.h's types, the library product as a loop in f32
// (emulated_gemm.c) and linnet_cuda_gemm_<t> (library_gemm.c).
std::string emulatedLibraryText();

// Compiles the host LLVM IR, the entry shim and the launch shim (with
// linnet_cuda_gemm_<t>) into `soPath` with clang. Throws with clang's
// output on failure.
void compileHostLibrary(const std::string& llvmIR, const std::string& entries, const std::filesystem::path& soPath);

}  // namespace linnet::cuda
