// Verifiers of the ops that read a param in its storage format
// (common/storage_formats.def): the weight's bytes must be whole rows of
// the logical K elements in that format.
#include "common/storage.h"
#include "ir/dialect.h"

namespace linnet::ir {

namespace {

// The weight operand of `format` holding rows of `k` elements: f32 [.., K]
// for f32, i8 [.., RowBytes] otherwise.
mlir::LogicalResult verifyWeight(mlir::Operation* op, llvm::StringRef format, mlir::RankedTensorType w, int64_t k) {
  std::optional<Storage> storage = storageNamed(format.str());
  if (!storage) return op->emitOpError("unknown storage format `") << format << "` (known: " << storageNames().data() << ")";
  if (w.getRank() < 2) return op->emitOpError("the weight must have rank 2 or more");
  std::optional<int64_t> rowBytes = storageRowBytes(*storage, k);
  if (!rowBytes) return op->emitOpError("K = ") << k << " is not a whole number of " << format << " blocks";
  if (*storage == Storage::F32) {
    if (!w.getElementType().isF32() || w.getShape().back() != k)
      return op->emitOpError("an f32 weight must be f32 with K = ") << k << " columns";
    return mlir::success();
  }
  if (!w.getElementType().isInteger(8) || w.getShape().back() != *rowBytes)
    return op->emitOpError("a ") << format << " weight of K = " << k << " must be i8 with " << *rowBytes
                                 << " bytes per row";
  return mlir::success();
}

}  // namespace

mlir::LogicalResult PackedMatmulOp::verify() {
  auto x = getX().getType(), w = getW().getType(), r = getResult().getType();
  if (!x.getElementType().isF32() || !r.getElementType().isF32()) return emitOpError("x and the result must be f32");
  if (getWKn()) return verifyKn();
  if (w.getRank() > 2) return verifyStack();
  if (x.getRank() < 1 || w.getRank() != 2 || r.getRank() != x.getRank())
    return emitOpError("x must be [.., K], the weight [N, ..], the result [.., N]");
  if (failed(verifyWeight(*this, getFormat(), w, x.getShape().back()))) return mlir::failure();
  for (int64_t a = 0; a + 1 < x.getRank(); ++a)
    if (r.getShape()[a] != x.getShape()[a]) return emitOpError("the result's leading axes must be x's");
  if (r.getShape().back() != w.getShape()[0]) return emitOpError("the result's last axis must be the weight's rows");
  return mlir::success();
}

// A stack of f32 matrices: x [B.., M, K], w [B.., N, K], result [B.., M, N].
mlir::LogicalResult PackedMatmulOp::verifyStack() {
  auto x = getX().getType(), w = getW().getType(), r = getResult().getType();
  if (getFormat().str() != name(Storage::F32)) return emitOpError("a stack of weights must be f32");
  if (x.getRank() != w.getRank() || r.getRank() != w.getRank())
    return emitOpError("with a stack of weights [B.., N, K], x must be [B.., M, K] and the result [B.., M, N]");
  const int64_t rank = w.getRank();
  for (int64_t a = 0; a + 2 < rank; ++a)
    if (x.getShape()[a] != w.getShape()[a] || r.getShape()[a] != w.getShape()[a])
      return emitOpError("x, the weights and the result must share the stack's axes");
  if (failed(verifyWeight(*this, getFormat(), w, x.getShape().back()))) return mlir::failure();
  if (r.getShape()[rank - 2] != x.getShape()[rank - 2] || r.getShape().back() != w.getShape()[rank - 2])
    return emitOpError("the result must be [B.., M, N]");
  return mlir::success();
}

// w_kn: f32 w [B.., K, N] with x [B.., M, K] (no B: any leading axes of x),
// result [B.., M, N].
mlir::LogicalResult PackedMatmulOp::verifyKn() {
  auto x = getX().getType(), w = getW().getType(), r = getResult().getType();
  if (getFormat().str() != name(Storage::F32) || !w.getElementType().isF32())
    return emitOpError("w_kn takes an f32 weight");
  const int64_t rank = w.getRank();
  if (rank < 2 || r.getRank() != x.getRank() || (rank > 2 && x.getRank() != rank))
    return emitOpError("with w_kn, w must be [K, N] or [B.., K, N], x [.., K] and the result [.., N]");
  for (int64_t a = 0; a + 2 < rank; ++a)
    if (x.getShape()[a] != w.getShape()[a] || r.getShape()[a] != w.getShape()[a])
      return emitOpError("x, the weights and the result must share the stack's axes");
  for (int64_t a = 0; a + 1 < x.getRank(); ++a)
    if (r.getShape()[a] != x.getShape()[a]) return emitOpError("the result's leading axes must be x's");
  if (x.getShape().back() != w.getShape()[rank - 2] || r.getShape().back() != w.getShape()[rank - 1])
    return emitOpError("with w_kn, w must be [K, N] for x [.., K] and a result [.., N]");
  return mlir::success();
}

mlir::LogicalResult PackedGatherOp::verify() {
  auto w = getW().getType(), ids = getIds().getType(), r = getResult().getType();
  if (!ids.getElementType().isInteger()) return emitOpError("ids must be integers");
  if (!r.getElementType().isF32() || r.getRank() != ids.getRank() + 1)
    return emitOpError("the result must be f32 [..ids, K]");
  if (w.getRank() != 2) return emitOpError("the weight must be [N, RowBytes]");
  if (getFormat().str() == name(Storage::F32)) return emitOpError("an f32 weight is read with linnet.gather");
  for (int64_t a = 0; a < ids.getRank(); ++a)
    if (r.getShape()[a] != ids.getShape()[a]) return emitOpError("the result's leading axes must be the ids'");
  return verifyWeight(*this, getFormat(), w, r.getShape().back());
}

mlir::LogicalResult UnpackOp::verify() {
  auto w = getW().getType(), r = getResult().getType();
  if (!r.getElementType().isF32() || r.getRank() != w.getRank()) return emitOpError("the result must be f32 [.., N, K]");
  if (getFormat().str() == name(Storage::F32)) return emitOpError("an f32 weight needs no unpacking");
  for (int64_t a = 0; a + 1 < w.getRank(); ++a)
    if (r.getShape()[a] != w.getShape()[a]) return emitOpError("the result's leading axes must be the weight's");
  return verifyWeight(*this, getFormat(), w, r.getShape().back());
}

}  // namespace linnet::ir
