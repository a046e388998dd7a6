// Elementwise consumers of decode's weight products computed by the
// product's own warp, as lane 0 stores (warp_kernels.h): the residual adds
// after the output and down projections, SwiGLU's silu(gate) * up after the
// gate|up products. The consumer's launch goes, and so does the product's
// buffer: lane 0 rounds each total to T as the product's store would, and
// computes the consumer's body on that value at the same element, so the
// bits are those of the two kernels apart.
//
// A consumer qualifies when it is a plain elementwise generic
// (fuse_elementwise.h) with one result, that reads each product (through
// reshapes only, nothing else reading it) at its own element, and whose
// other operands exist where the product's launch goes. At the tensor
// stage, before bufferization.
#pragma once

#include <optional>

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Builders.h"

namespace linnet::cuda {

struct Epilogue {
  mlir::linalg::GenericOp consumer;
  // For each product, the consumer's inputs that read it.
  llvm::SmallVector<llvm::SmallVector<mlir::OpOperand*>> reads;
  // The reshapes between the products and the consumer.
  llvm::SmallVector<mlir::Operation*> reshapes;
  // The consumer's result, written by lane 0 (epilogueBuffer).
  mlir::Value buffer;
};

// The consumer all of `products` (results of the same shape's element
// count) feed, when one qualifies for a launch at `launch`.
std::optional<Epilogue> findEpilogue(llvm::ArrayRef<mlir::Value> products, mlir::Operation* launch);

// Allocates e.buffer, the consumer's result; before the launch.
void allocateEpilogue(mlir::OpBuilder& b, mlir::Location l, Epilogue& e);

// Inside the launch: the consumer's element at row-major position `linear`
// of its result, with product i's element there given as values[i] (T),
// stored into e.buffer.
void storeEpilogue(mlir::OpBuilder& b, mlir::Location l, const Epilogue& e, llvm::ArrayRef<mlir::Value> values,
                   mlir::Value linear);

// After the launch: the consumer's result is e.buffer's; the consumer and
// the reshapes are erased, so the products' results are unread.
void finishEpilogue(mlir::OpBuilder& b, mlir::Location l, Epilogue& e);

}  // namespace linnet::cuda
