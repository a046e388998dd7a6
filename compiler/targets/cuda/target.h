// The CUDA target (targets/target.h): stages bufferized, gpu (host code and
// one kernel module), ptx (the kernels' PTX), lowered (the host code in the
// LLVM dialect, the cubin embedded) and llvm (the host code's LLVM IR); the artifact's code is model.so (host code, the cubin embedded) and
// kernels.ptx, for reading.
#pragma once

#include <memory>

#include "targets/target.h"

namespace linnet::cuda {

std::unique_ptr<targets::Target> makeTarget();

}  // namespace linnet::cuda
