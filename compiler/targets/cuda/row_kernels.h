// The pieces of row_reductions.cpp's row kernels that other warp kernels
// build with (split_attention.cpp): a fused elementwise generic computed at
// one index inside a kernel, and a lane's walk over a row's columns.
// At the tensor stage, before bufferization.
#pragma once

#include <functional>

#include "ir/dialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "transforms/pipeline.h"

namespace linnet::cuda {

// A plain elementwise generic (fuse_elementwise.h) that can be computed at
// one index: one result, its output map the identity and unread, each input
// read at dims or zeros of the index.
bool computableAtIndex(mlir::linalg::GenericOp g);

// Where a kernel reads a fused generic's inputs: their buffers, made before
// the kernel; a scalar input is its value. A tensor the generic's body
// reads element by element (tensor.extract) may map to a buffer too: the
// kernel's own result holding it in the same row-major order. Given: the
// inputs the kernel has computed itself (a row's reduced value), each as
// its value.
using Buffers = llvm::DenseMap<mlir::Value, mlir::Value>;
using Given = llvm::DenseMap<mlir::Value, mlir::Value>;
void addBuffers(mlir::OpBuilder& b, mlir::Location l, mlir::linalg::GenericOp g, Buffers& buffers,
                const Given& given = Given());

// A 0-d input's value, read from its buffer in `buffers` (null when it has
// none): masked_columns.h's `scalar`.
std::function<mlir::Value(mlir::OpBuilder&, mlir::Value)> scalarReader(const Buffers& buffers, mlir::Location l);

// The value `g` yields at iteration `idx`: each input loaded from its buffer
// at its map of idx (or its given value), the body's ops cloned at b's
// insertion point (a tensor.extract of a tensor in `buffers` a load of that
// buffer). With `masked` (a select of the body, masked_columns.h), the
// select yields its false value, the masked score, and what only its true
// side read is left unread.
mlir::Value computeAt(mlir::OpBuilder& b, mlir::Location l, mlir::linalg::GenericOp g,
                      llvm::ArrayRef<mlir::Value> idx, const Buffers& buffers, const Given& given = Given(),
                      mlir::Operation* masked = nullptr);

// Row `row`'s position among the leading axes `lead` (row-major).
llvm::SmallVector<mlir::Value> rowIndices(mlir::OpBuilder& b, mlir::Location l, mlir::Value row,
                                          llvm::ArrayRef<int64_t> lead);

// What follows a reduction r (x [..lead, K] -> one value per row) in the
// same kernel: its only use, a generic over x's shape that reads r's value
// broadcast along the row (after fuseElementwise, the whole chain: the
// norm's `x * rsqrt(r + eps) * w`, softmax's `exp(x - r)`), in r's block.
mlir::linalg::GenericOp epilogueOf(ir::ReduceOp op);

// The reduction of the same row whose value `second` (with its input
// `producer` and its `epilogue`) reads and nothing else does: softmax's max,
// read by exp(x - max) in the sum's input and in the division after it.
// The two are then one kernel. Null when there is none.
ir::ReduceOp leadingReduction(ir::ReduceOp second, mlir::linalg::GenericOp producer,
                              mlir::linalg::GenericOp epilogue, const transforms::SharedOptions& options);

// Moves each read (memref.load, tensor.extract) of `block` up to just
// after the last of its operands defined in the block (else to the block's
// start), so an iteration's loads are issued before the arithmetic that
// waits for them. Only for blocks that store into no buffer they load from.
void issueLoadsFirst(mlir::Block* block);

// The same, stronger: each read moved to the block's start with the index
// arithmetic it needs (ops of the block free of effects), in their order,
// so every read is issued before anything waits for one, where
// issueLoadsFirst leaves a read after index arithmetic that comes after
// another read's consumers. Reads whose indices need anything else stay.
void issueReadsFirst(mlir::Block* block);

// One iteration of a lane's walk over its columns: the columns, whether
// each is one of the lane's (empty: all are; else a column past the row's
// end is given as its last column, in bounds, and must add nothing), the
// values carried, the values carried on.
using ColumnStep = std::function<llvm::SmallVector<mlir::Value>(
    mlir::OpBuilder&, mlir::Location, llvm::ArrayRef<mlir::Value>, llvm::ArrayRef<mlir::Value>, mlir::ValueRange)>;

// A lane's columns lane, lane + 32, .. < k (coalesced across the warp) in
// order, `atOnce` an iteration while whole, then the rest in one
// iteration of masked columns (a step that skips what is masked adds
// nothing), each iteration's loads issued first; what `step` carries, at
// the end. With `end` (an index at most k, computed in the kernel), the
// columns below it.
llvm::SmallVector<mlir::Value> overColumns(mlir::OpBuilder& b, mlir::Location l, mlir::Value lane, int64_t k,
                                           int64_t atOnce, mlir::ValueRange init, const ColumnStep& step,
                                           mlir::Value end = {});

}  // namespace linnet::cuda
