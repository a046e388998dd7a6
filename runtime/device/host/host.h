// The host device: this machine's CPU and memory. Buffers are host memory
// (allocated 64-byte aligned, or borrowed in place: a mapped checkpoint, a
// caller's tensor); code is the CPU target's shared object, loaded with
// dlopen and called through the ABI's one signature (runtime/artifact/abi.h).
// No LLVM or MLIR in the process.
#pragma once

#include "device/registry.h"

namespace linnet::device::host {

// Backend "cpu", linnetc target "cpu".
Driver driver();

// Backend and linnetc target "cuda-emulated": the cuda target's kernels as
// loops on this CPU (compiler/targets/cuda/emulated.h), to test the cuda
// target's host/device split where there is no GPU. Never the default.
Driver emulatedCudaDriver();

}  // namespace linnet::device::host
