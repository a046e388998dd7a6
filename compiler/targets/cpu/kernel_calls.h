// The CPU target's reads of params in a storage format: each
// linnet.packed_matmul, packed_gather and unpack (transforms/pack_params.cpp)
// becomes a call to the weight kernels (kernels/linnet_kernels.h, compiled
// into model.so), on the buffers of its operands and a fresh output buffer,
// before bufferization; the calls take MLIR's C interface.
#pragma once

#include "mlir/IR/BuiltinOps.h"

namespace linnet::cpu {

void lowerToKernelCalls(mlir::ModuleOp module);

}  // namespace linnet::cpu
