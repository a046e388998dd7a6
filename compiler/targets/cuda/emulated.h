// The `cuda-emulated` target: the cuda target's host/device split run on
// this CPU, so that its mapping can be checked against the reference
// backend and transformers on a machine without a GPU. The module goes
// through the cuda target's lowering up to host code with gpu.launch ops
// (pipeline.h, lowerToLaunches), exactly as for the GPU; then each launch
// becomes a parallel loop over (block, thread) with the kernel as its body,
// device allocations become host ones, and the CPU target's back end
// builds model.so. What it checks: the grids and their guards, the
// order of the iterations' indices, the device reads moved into kernels,
// bufferization without deallocation, the buffers' lifetimes (each release
// frees its host buffer: one released too early is read after it is freed).
// What it does not: NVVM, PTX, the cubin, the launch shim and the driver.
// Buffers that live until the call returns (the GPU's per-call arena takes
// them back) are never freed here: for tests only.
#pragma once

#include <memory>

#include "targets/target.h"

namespace linnet::cuda {

std::unique_ptr<targets::Target> makeEmulatedTarget();

// Each gpu.launch as scf.parallel over (block, thread), device allocations
// as host ones. After lowerToLaunches.
void launchesAsLoops(mlir::ModuleOp module);

}  // namespace linnet::cuda
