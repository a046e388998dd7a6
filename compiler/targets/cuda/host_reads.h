// Device values the cuda target's host code branches on: a `tensor.extract`
// of a 0-d tensor that the case of an scf.index_switch outside the kernels
// is computed from (expand-attention's key prefix, chosen from the mask
// where the scores go to cuBLASLt, whose sizes the host sets). Each becomes
// a host call
//   linnet_cuda_read_<t>(x)      t: i64, i32 or f32
// on x's buffer, compiled into model.so (host_read.c): the device waits for
// its stream and copies the value back (cuda_api.h's `read`), so an entry
// that reads cannot be captured as a CUDA graph and runs plainly. At the
// tensor stage, before bufferization.
#pragma once

#include "mlir/IR/BuiltinOps.h"

namespace linnet::cuda {

inline constexpr const char* kHostRead = "linnet_cuda_read";

// Every such extract of an i64, i32 or f32, as the call above. Any other
// device value on the host is left to verifyHostCode, which refuses it.
void readScalarsOnHost(mlir::ModuleOp module);

// True for a call of linnet_cuda_read_<t>: it reads its buffer once and keeps nothing.
bool isHostRead(mlir::Operation* op);

// A switch's case computed, reads and all, from nothing but the arguments
// of the private function it is in (prefill's key prefix: from `pos`, in
// the layer function) is computed by the function's one caller and passed
// in as a new last argument; and before the caller's loop when nothing it
// reads is computed in the loop. So the host reads the key prefix's length
// once a call, not once a layer (a stall of the stream each). After
// readScalarsOnHost.
void hoistSwitchCases(mlir::ModuleOp module);

}  // namespace linnet::cuda
