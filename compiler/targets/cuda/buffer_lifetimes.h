// Buffer lifetimes for the cuda target's host code: each scratch buffer is
// released right after the last operation that uses it, so the runtime's
// per-call arena (runtime/device/cuda/arena.h) can hand its bytes to a later
// request. Without this, a call held every intermediate until it returned:
// the 8B card's prefill of 512 tokens asked for 54.7 GiB.
//
// Bufferization runs without deallocation here (its ownership bookkeeping
// would read host memory beside device buffers), so the lifetimes are found
// on the host code after mapToGpu, conservatively: a gpu.alloc is released
// when the buffer and every view of it are only launched on, copied, filled
// or viewed, in its own function. One that is returned, yielded, passed to a
// call or a loop, or used by anything else lives until the call returns, as
// before; except that a switch's or an if's result for which each region
// allocates and yields a buffer of its own is released like an allocation
// of the switch's block (prefill's attention over its key prefix). The release goes after the op of the buffer's block that holds the
// last use (a loop or an if holding one counts as a use). The one stream
// orders every kernel that used the buffer before any that reuses it.
#pragma once

namespace mlir {
class ModuleOp;
}

namespace linnet::cuda {

void releaseBuffersAfterLastUse(mlir::ModuleOp module);

}  // namespace linnet::cuda
