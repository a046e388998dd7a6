#include "ir/dialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

#include "ir/LinnetDialect.cpp.inc"
#include "ir/LinnetEnums.cpp.inc"

#define GET_OP_CLASSES
#include "ir/LinnetOps.cpp.inc"

namespace linnet::ir {

void LinnetDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "ir/LinnetOps.cpp.inc"
      >();
}

namespace {
// Shapes broadcast when, aligned at the right, each pair of sizes is equal
// or one of them is 1; `out` must be exactly that broadcast.
bool broadcastsTo(llvm::ArrayRef<int64_t> in, llvm::ArrayRef<int64_t> out) {
  if (in.size() > out.size()) return false;
  size_t shift = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i] != out[i + shift] && in[i] != 1) return false;
  return true;
}
}  // namespace

mlir::LogicalResult UnaryOp::verify() {
  if (getX().getType().getShape() != getResult().getType().getShape())
    return emitOpError("result shape differs from the operand's");
  return mlir::success();
}

mlir::LogicalResult BinaryOp::verify() {
  auto out = getResult().getType().getShape();
  if (!broadcastsTo(getLhs().getType().getShape(), out) ||
      !broadcastsTo(getRhs().getType().getShape(), out))
    return emitOpError("operand shapes do not broadcast to the result shape");
  if (getLhs().getType().getElementType() != getRhs().getType().getElementType())
    return emitOpError("operands have different element types");
  return mlir::success();
}

mlir::LogicalResult MatmulOp::verify() {
  if (!getKeepColumns()) return mlir::success();
  auto keep = mlir::cast<mlir::RankedTensorType>(getKeepColumns().getType());
  auto out = getResult().getType();
  if (keep.getRank() != 2 || !keep.getElementType().isInteger(1) || out.getRank() < 1 ||
      keep.getShape()[1] != out.getShape().back())
    return emitOpError("keep_columns must be i1 [R, N], N the result's last dimension");
  return mlir::success();
}

mlir::LogicalResult AttentionOp::verify() {
  auto q = getQ().getType(), k = getK().getType(), v = getV().getType(), mask = getMask().getType();
  int64_t r = k.getRank();
  if (r < 2 || q.getRank() != r + 1 || v.getRank() != r) return emitOpError("needs q [..L, G, Q, D], k [..L, K, D], v [..L, K, E]");
  mlir::Type t = q.getElementType();
  if (!mlir::isa<mlir::FloatType>(t) || k.getElementType() != t || v.getElementType() != t)
    return emitOpError("q, k and v must have one float element type");
  for (int64_t i = 0; i < r - 2; ++i)
    if (q.getShape()[i] != k.getShape()[i] || v.getShape()[i] != k.getShape()[i])
      return emitOpError("leading dimension ") << i << " differs";
  if (q.getShape()[r] != k.getShape()[r - 1] || v.getShape()[r - 2] != k.getShape()[r - 2])
    return emitOpError("head or key dimensions differ");
  auto scale = getScale().getType();
  if (scale.getRank() != 0 || !scale.getElementType().isF32()) return emitOpError("scale must be a rank-0 f32 tensor");
  llvm::SmallVector<int64_t> scores(q.getShape().begin(), q.getShape().end() - 1);
  scores.push_back(k.getShape()[r - 2]);
  if (!mask.getElementType().isInteger(1) || !broadcastsTo(mask.getShape(), scores))
    return emitOpError("mask must be i1 and broadcast to the scores");
  llvm::SmallVector<int64_t> out(q.getShape().begin(), q.getShape().end() - 1);
  out.push_back(v.getShape()[r - 1]);
  if (getResult().getType() != mlir::RankedTensorType::get(out, t)) return emitOpError("result type must be [..L, G, Q, E] of T");
  return mlir::success();
}

namespace {

// q [..L, G, Q, D], k [..L, K, D], v [..L, K, E] of f32 with at most two
// axes in ..L, a rank-0 f32 scale and an i1 mask broadcasting to the scores.
mlir::LogicalResult verifyTrainingAttention(mlir::Operation* op, mlir::RankedTensorType q, mlir::RankedTensorType k,
                                           mlir::RankedTensorType v, mlir::RankedTensorType scale,
                                           mlir::RankedTensorType mask) {
  int64_t r = k.getRank();
  if (r < 2 || r > 4 || q.getRank() != r + 1 || v.getRank() != r)
    return op->emitOpError("needs q [..L, G, Q, D], k [..L, K, D], v [..L, K, E] with at most two axes in ..L");
  for (auto t : {q, k, v})
    if (!t.getElementType().isF32()) return op->emitOpError("q, k and v must be f32");
  for (int64_t i = 0; i < r - 2; ++i)
    if (q.getShape()[i] != k.getShape()[i] || v.getShape()[i] != k.getShape()[i])
      return op->emitOpError("leading dimension ") << i << " differs";
  if (q.getShape()[r] != k.getShape()[r - 1] || v.getShape()[r - 2] != k.getShape()[r - 2])
    return op->emitOpError("head or key dimensions differ");
  if (scale.getRank() != 0 || !scale.getElementType().isF32())
    return op->emitOpError("scale must be a rank-0 f32 tensor");
  llvm::SmallVector<int64_t> scores(q.getShape().begin(), q.getShape().end() - 1);
  scores.push_back(k.getShape()[r - 2]);
  if (!mask.getElementType().isInteger(1) || !broadcastsTo(mask.getShape(), scores))
    return op->emitOpError("mask must be i1 and broadcast to the scores");
  return mlir::success();
}

}  // namespace

mlir::LogicalResult AttentionRowsOp::verify() {
  auto q = getQ().getType(), v = getV().getType();
  if (failed(verifyTrainingAttention(*this, q, getK().getType(), v, getScale().getType(), getMask().getType())))
    return mlir::failure();
  llvm::SmallVector<int64_t> out(q.getShape().begin(), q.getShape().end() - 1);
  out.push_back(v.getShape().back() + 2);
  if (getResult().getType() != mlir::RankedTensorType::get(out, q.getElementType()))
    return emitOpError("result type must be [..L, G, Q, E + 2] of f32");
  return mlir::success();
}

mlir::LogicalResult AttentionGradOp::verify() {
  auto q = getQ().getType(), k = getK().getType(), v = getV().getType();
  if (failed(verifyTrainingAttention(*this, q, k, v, getScale().getType(), getMask().getType())))
    return mlir::failure();
  llvm::SmallVector<int64_t> rows(q.getShape().begin(), q.getShape().end() - 1);
  rows.push_back(1);
  auto f32 = mlir::Float32Type::get(getContext());
  if (getMax().getType() != mlir::RankedTensorType::get(rows, f32) || getSum().getType() != getMax().getType())
    return emitOpError("max and sum must be [..L, G, Q, 1] of f32");
  llvm::SmallVector<int64_t> out(q.getShape().begin(), q.getShape().end() - 1);
  out.push_back(v.getShape().back());
  if (getDout().getType() != mlir::RankedTensorType::get(out, f32)) return emitOpError("dout must be [..L, G, Q, E] of f32");
  if (getDq().getType() != q || getDk().getType() != k || getDv().getType() != v)
    return emitOpError("dq, dk and dv must have q's, k's and v's types");
  return mlir::success();
}

mlir::LogicalResult WritePointsOp::verify() {
  auto dest = getDest().getType(), x = getX().getType();
  if (getResult().getType() != dest) return emitOpError("result type differs from the destination's");
  if (x.getElementType() != dest.getElementType() || x.getRank() != dest.getRank())
    return emitOpError("x must have dest's element type and rank");
  int64_t axis = getAxis();
  if (axis < 1 || axis >= dest.getRank()) return emitOpError("axis must be 1 .. rank - 1");
  if (x.getShape()[0] != 1) return emitOpError("x must have one row");
  for (int64_t k = 1; k < dest.getRank(); ++k)
    if (k != axis && x.getShape()[k] != dest.getShape()[k]) return emitOpError("dimension ") << k << " differs";
  for (auto t : {getRows().getType(), getPositions().getType()})
    if (t.getRank() != 1 || t.getShape()[0] != x.getShape()[axis] || !t.getElementType().isInteger())
      return emitOpError("rows and positions must be one integer per point");
  return mlir::success();
}

mlir::LogicalResult WriteSliceOp::verify() {
  auto dest = getDest().getType(), x = getX().getType();
  if (getResult().getType() != dest) return emitOpError("result type differs from the destination's");
  if (x.getElementType() != dest.getElementType()) return emitOpError("element types differ");
  if (x.getRank() != dest.getRank()) return emitOpError("ranks differ");
  int64_t axis = getAxis();
  if (axis < 0 || axis >= dest.getRank()) return emitOpError("axis out of range");
  for (int64_t k = 0; k < dest.getRank(); ++k)
    if (k != axis && x.getShape()[k] != dest.getShape()[k])
      return emitOpError("dimension ") << k << " differs off the written axis";
  auto start = getStart().getType();
  bool perRow = start.getRank() == 1 && axis > 0 && start.getShape()[0] == dest.getShape()[0];
  if ((start.getRank() != 0 && !perRow) || !start.getElementType().isInteger())
    return emitOpError("start must be a rank-0 integer tensor, or one per row (axis 0) when the axis is not 0");
  return mlir::success();
}

mlir::LogicalResult ReshapeOp::verify() {
  if (getX().getType().getNumElements() != getResult().getType().getNumElements())
    return emitOpError("reshape changes the number of elements");
  return mlir::success();
}

}  // namespace linnet::ir
