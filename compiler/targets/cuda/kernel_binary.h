// The CUDA target's kernels as one module: outlining makes a gpu.module per
// kernel; they are merged into one (one PTX file, one ptxas run, one
// cuModuleLoadData), lowered to PTX by MLIR, then assembled here by the
// toolkit's ptxas for sm_90 with -v, whose report (registers, spills, shared
// memory) goes into the manifest. Any ptxas error fails the build, so an
// unresolved libdevice call (`.extern .func __nv_expf`) can never reach a GPU.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "artifact/manifest.h"
#include "mlir/IR/BuiltinOps.h"

namespace linnet::cuda {

inline constexpr const char* kKernelModule = "linnet_kernels";
inline constexpr const char* kChip = "sm_90";

// Outlining drops a launch's attributes, its kernel family among them
// (map_to_gpu.h): launchFamilies reads them before, in walk order, and
// setLaunchFamilies puts them on the gpu.launch_func ops that replaced the
// launches (in the same order) after, for assembleKernels to report.
std::vector<std::string> launchFamilies(mlir::ModuleOp module);
void setLaunchFamilies(mlir::ModuleOp module, const std::vector<std::string>& families);

// Moves every outlined kernel into one gpu.module named kKernelModule and
// points the launches at it. After gpu-kernel-outlining.
void mergeKernelModules(mlir::ModuleOp module);

// The PTX of the kernel module (after gpu-module-to-binary{format=isa}).
std::string kernelPTX(mlir::ModuleOp module);

// Assembles the PTX with ptxas ($LINNET_PTXAS, else the toolkit's found at
// configure time) in `workDir`, replaces the PTX object by the cubin, and
// returns each kernel's launch shape and ptxas report, in launch order.
// Throws transforms::PipelineError with ptxas's output when it fails.
std::vector<artifact::Kernel> assembleKernels(mlir::ModuleOp module, const std::filesystem::path& workDir);

}  // namespace linnet::cuda
