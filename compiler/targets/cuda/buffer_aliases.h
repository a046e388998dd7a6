// Whether two buffers of the cuda target's host code may be the same
// memory, told apart by their roots (map_to_gpu.h, bufferRoot):
//
//   - two allocations are distinct, and so is an allocation from an
//     argument of its function (the caller cannot pass what is not yet
//     allocated) and from any buffer that exists where it is allocated (a
//     loop's result before it: the arena hands out memory no live buffer
//     holds);
//   - two arguments of one function are distinct when they are distinct at
//     every call of it (through the callers' own roots), an entry's calls by
//     the runtime included: it passes each state and output in a buffer of
//     its own (runtime/artifact/abi.h);
//   - a call's result is what the callee allocated or a view of what it
//     was passed: it may alias an allocation or an argument only through
//     the call's operands;
//   - anything else (a buffer a loop carries, a switch's result, which may
//     be a view of an allocation) may alias.
//
// Only distinct roots are told apart: two views of one buffer always may
// alias, whatever their offsets.
#pragma once

#include "mlir/IR/Value.h"

namespace linnet::cuda {

bool mayAlias(mlir::Value rootA, mlir::Value rootB);

}  // namespace linnet::cuda
