#include "targets/cuda/product_buffers.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace linnet::cuda {

using namespace mlir;

SmallVector<ReassociationIndices> foldLeading(int64_t rank, int64_t lead) {
  SmallVector<ReassociationIndices> g(1);
  for (int64_t a = 0; a < lead; ++a) g[0].push_back(a);
  for (int64_t a = lead; a < rank; ++a) {
    if (g.back().empty()) g.back().push_back(a);
    else g.push_back({a});
  }
  return g;
}

Value stackBuffer(OpBuilder& b, Location l, Value t, bool batched, int64_t batch, int64_t rows, int64_t cols) {
  auto type = cast<RankedTensorType>(t.getType());
  Type et = type.getElementType();
  int64_t rank = type.getRank();
  auto stack = RankedTensorType::get({batch, rows, cols}, et);
  if (batched) {
    if (rank > 3) {
      auto g = foldLeading(rank, rank - 2);
      t = tensor::CollapseShapeOp::create(b, l, stack, t, g);
    }
  } else {
    auto matrix = RankedTensorType::get({rows, cols}, et);
    if (rank == 1) {
      t = tensor::ExpandShapeOp::create(b, l, matrix, t, ArrayRef<ReassociationIndices>{{0, 1}});
    } else if (rank > 2) {
      auto g = foldLeading(rank, rank - 1);
      t = tensor::CollapseShapeOp::create(b, l, matrix, t, g);
    }
    t = tensor::ExpandShapeOp::create(b, l, stack, t, ArrayRef<ReassociationIndices>{{0, 1}, {2}});
  }
  auto layout = StridedLayoutAttr::get(b.getContext(), ShapedType::kDynamic, {ShapedType::kDynamic, cols, 1});
  return bufferization::ToBufferOp::create(b, l, MemRefType::get({batch, rows, cols}, et, layout), t,
                                           /*read_only=*/true);
}

Value readBuffer(OpBuilder& b, Location l, Value t) {
  auto type = cast<RankedTensorType>(t.getType());
  SmallVector<int64_t> strides(type.getRank(), ShapedType::kDynamic);
  auto layout = StridedLayoutAttr::get(b.getContext(), ShapedType::kDynamic, strides);
  return bufferization::ToBufferOp::create(b, l, MemRefType::get(type.getShape(), type.getElementType(), layout), t,
                                           /*read_only=*/true);
}

Value resultTensor(OpBuilder& b, Location l, Value buffer, bool batched, RankedTensorType result) {
  auto type = cast<MemRefType>(buffer.getType());
  Value t = bufferization::ToTensorOp::create(b, l, RankedTensorType::get(type.getShape(), type.getElementType()),
                                              buffer, /*restrict=*/true, /*writable=*/true);
  int64_t rank = result.getRank();
  if (batched) {
    if (rank == 3) return t;
    auto g = foldLeading(rank, rank - 2);
    return tensor::ExpandShapeOp::create(b, l, result, t, g);
  }
  int64_t rows = type.getShape()[1], n = type.getShape()[2];
  Value matrix = tensor::CollapseShapeOp::create(b, l, RankedTensorType::get({rows, n}, type.getElementType()), t,
                                                 ArrayRef<ReassociationIndices>{{0, 1}, {2}});
  if (rank == 2) return matrix;
  if (rank == 1) return tensor::CollapseShapeOp::create(b, l, result, matrix, ArrayRef<ReassociationIndices>{{0, 1}});
  auto g = foldLeading(rank, rank - 1);
  return tensor::ExpandShapeOp::create(b, l, result, matrix, g);
}

ProductShape shapeOf(ir::MatmulOp op) {
  auto out = cast<RankedTensorType>(op.getType());
  ArrayRef<int64_t> bShape = cast<RankedTensorType>(op.getB().getType()).getShape();
  int64_t r = static_cast<int64_t>(bShape.size());
  ProductShape p{r > 2, 1, 1, bShape[r - 1], bShape[r - 2]};
  if (!op.getTransposeB()) std::swap(p.k, p.n);
  for (int64_t d : bShape.drop_back(2)) p.batch *= d;
  if (p.batched) p.rows = out.getShape()[out.getRank() - 2];
  else
    for (int64_t d : out.getShape().drop_back()) p.rows *= d;
  return p;
}

std::pair<Value, Value> stackOperands(OpBuilder& b, Location l, ir::MatmulOp op, const ProductShape& s) {
  Value x = stackBuffer(b, l, op.getA(), s.batched, s.batch, s.rows, s.k);
  Value w = op.getTransposeB() ? stackBuffer(b, l, op.getB(), s.batched, s.batch, s.n, s.k)
                               : stackBuffer(b, l, op.getB(), s.batched, s.batch, s.k, s.n);
  return {x, w};
}

}  // namespace linnet::cuda
