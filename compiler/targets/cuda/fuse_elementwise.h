// Elementwise producers fused into their consumers at the tensor stage, so
// that a chain of elementwise ops (a norm's scale and cast, rope's
// products, softmax's subtract and exp) is one kernel instead of one
// launch each: on a GPU every launch costs about a microsecond even when
// the kernel does nothing, and a decode step is thousands of them.
//
// Only producers whose body is plain arithmetic are fused: a generic with a
// loop inside (a dot product, a reduction written as a parallel generic)
// would be recomputed by every consumer element that reads it (the CPU
// target's reason for not fusing at all).
//
// An index comprehension reads its source with `tensor.extract`, which
// elementwise fusion does not see: an extract of such a producer becomes the
// producer's arithmetic at that index, where that is no more work than the
// producer itself (always, for a producer that only yields a constant).
// Decode's rotary rows then compute the one row they read instead of a
// [MaxSeq, D] table per layer. A producer that reads only scalars and its
// indices (a generator: rope's frequencies, decode's cos and sin rows) is
// computed wherever it is read, through slices and reshapes, within a work
// budget. Last, a write of such a producer into a state (decode's cache
// write) computes it into the state's slice in place.
#pragma once

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/BuiltinOps.h"

namespace linnet::cuda {

// Before bufferization.
void fuseElementwise(mlir::ModuleOp module);

// fuseElementwise as the pass `linnet-cuda-fuse-elementwise`, for
// linnet-opt's lit tests (tests/ir/cuda).
void registerFuseElementwisePass();

// A linalg.generic of parallel loops whose body holds no region (no loop,
// no branch): cheap to compute again inside each consumer.
bool plainElementwise(mlir::Operation* op);

// A plain elementwise generic that reads nothing but scalars (0-d tensors,
// such as `pos`) and its own indices: decode's mask, rope's frequencies.
bool generator(mlir::Operation* op);

// True when every tensor input of `g` is read at dimensions and constants
// of its loops (computeAt can read it at an element's indices).
bool projectedInputs(mlir::linalg::GenericOp g);

// Result `r` of plain elementwise `producer` at the indices `at`: its body
// cloned at b's insertion point, its tensor inputs read with tensor.extract
// at the indices their maps give (each map's results must be dimensions or
// constants), except the inputs `given` pairs with the value they read
// there (a product's element that lane 0 holds: product_epilogues.h).
mlir::Value computeAt(mlir::OpBuilder& b, mlir::Location loc, mlir::linalg::GenericOp producer, unsigned r,
                      mlir::ValueRange at,
                      llvm::ArrayRef<std::pair<mlir::OpOperand*, mlir::Value>> given = {});

}  // namespace linnet::cuda
