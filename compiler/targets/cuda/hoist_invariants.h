// Tensors a layer function computes from what every layer passes it alike,
// computed once before the caller's loop over the layers and passed in.
// The card computes its rope tables (`[MaxSeq, D/2]`: 2 MiB each on the 8B
// card) and prefill's mask (`[S, MaxSeq]` from `pos`) inside the layer, so
// a prefill of the 8B card computed them 32 times, in 4 launches a layer.
//
// For a private function with one call, inside an scf.for: the ops of its
// body that compute, free of memory effects, from nothing but the
// arguments whose operands at the call are defined outside the loop
// (constants included); each tensor of rank 1 or more that a linalg op
// among them makes and that something else reads is computed by those ops
// at the call, before the loop (and before every enclosing loop it does not
// depend on), and passed in as a new last argument. At the tensor stage,
// after fusion and the warp kernels: a generator that fusion computes where
// it is read (decode's rotary rows, from `pos`) is no tensor by then, and
// stays where it is.
#pragma once

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace linnet::cuda {

void hoistLayerInvariants(mlir::ModuleOp module);

// The end of a hoist into the one `call` of a function that has just taken
// `computed` as new last arguments: the call made again passing them, the
// callee's `moved` ops (in order) erased where nothing reads them any more,
// and `cloned` (computing `computed` just before the call, in order) moved
// before each scf.for around it that they do not depend on.
void passToCall(mlir::func::CallOp call, mlir::ValueRange computed, llvm::ArrayRef<mlir::Operation*> moved,
                llvm::ArrayRef<mlir::Operation*> cloned);

}  // namespace linnet::cuda
