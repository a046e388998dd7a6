// A product that the shared pipeline left to the cuda target (a warp
// kernel's or a library's) seen as a stack of matrices: a as
// [batch, rows, K], b as it is stored ([batch, N, K] when read by
// transpose_b, else [batch, K, N]), the result as [batch, rows, N]. Each a
// buffer whose rows are packed (a stride of `cols`) at any offset and batch
// stride, so a layer's slice of a stacked weight or a cache's heads are read
// where they are. At the tensor stage, before bufferization.
#pragma once

#include <utility>

#include "ir/dialect.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/IR/Builders.h"

namespace linnet::cuda {

// A kept product as a stack of `batch` products of [rows, K] with b
// ([N, K] read by transpose_b, else [K, N]).
struct ProductShape {
  bool batched;  // b is [..L, .., ..], a [..L, rows, K]; else b is 2-D, a [.., K]
  int64_t batch, rows, k, n;
};
ProductShape shapeOf(ir::MatmulOp op);

// Reassociation folding axes [0, lead) into one, the rest kept: [..L, a, b] <-> [L, a, b].
llvm::SmallVector<mlir::ReassociationIndices> foldLeading(int64_t rank, int64_t lead);

// `t` as the buffer of a stack of matrices [batch, rows, cols] whose rows
// are `cols` apart, read only: a view at any offset or batch stride as it
// is; bufferization copies one whose rows are not packed. With `batched`, t
// is [..L, rows, cols]; without, t is [.., cols] with `rows` rows in all.
mlir::Value stackBuffer(mlir::OpBuilder& b, mlir::Location l, mlir::Value t, bool batched, int64_t batch,
                        int64_t rows, int64_t cols);

// a as [batch, rows, K] and b as it is stored: [batch, N, K] when read by
// transpose_b, else [batch, K, N].
std::pair<mlir::Value, mlir::Value> stackOperands(mlir::OpBuilder& b, mlir::Location l, ir::MatmulOp op,
                                                  const ProductShape& s);

// `t`'s buffer, any layout, read only: a tensor a kernel reads in place.
mlir::Value readBuffer(mlir::OpBuilder& b, mlir::Location l, mlir::Value t);

// A [batch, rows, n] buffer as a tensor of `result`'s shape ([..L, rows, n]
// when batched, else [.., n] with `rows` rows in all).
mlir::Value resultTensor(mlir::OpBuilder& b, mlir::Location l, mlir::Value buffer, bool batched,
                         mlir::RankedTensorType result);

}  // namespace linnet::cuda
