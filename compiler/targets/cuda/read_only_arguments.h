// Which kernel arguments a kernel only reads, told to ptxas so that their
// loads become `ld.global.nc` (the read-only data path): LLVM's NVPTX back
// end does that for a kernel pointer argument marked `noalias readonly`.
// MLIR's NVVM lowering carries `llvm.readonly` from a memref argument to its
// pointers but drops `llvm.noalias`, hence two steps.
#pragma once

#include "mlir/IR/BuiltinOps.h"

namespace linnet::cuda {

// Marks `llvm.readonly` each memref argument of a kernel that no launch
// lets it write through any argument: the kernel stores into no view of it,
// and into no argument that may be the same memory (buffer_aliases.h).
// After outlining (kernel_binary.h).
void markReadOnlyArguments(mlir::ModuleOp module);

// Adds `llvm.noalias` to every kernel pointer argument marked
// `llvm.readonly`: no one writes that memory while the kernel runs (one
// stream), which is all noalias asks of memory that is only read. After
// convert-gpu-to-nvvm.
void readOnlyArgumentsDoNotAlias(mlir::ModuleOp module);

}  // namespace linnet::cuda
