#include "targets/cuda/product_epilogues.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dominance.h"
#include "mlir/Transforms/RegionUtils.h"
#include "targets/cuda/fuse_elementwise.h"
#include "targets/cuda/warp_helpers.h"

namespace linnet::cuda {

namespace {

using namespace mlir;

int64_t elements(Value v) { return cast<RankedTensorType>(v.getType()).getNumElements(); }

// Follows `v` through reshapes that nothing else reads to the one generic
// that reads it; the inputs of that generic it feeds, or null.
linalg::GenericOp readerOf(Value v, SmallVectorImpl<OpOperand*>& reads, SmallVectorImpl<Operation*>& reshapes) {
  while (true) {
    if (v.use_empty()) return {};
    Operation* user = v.getUses().begin()->getOwner();
    if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(user)) {
      if (!v.hasOneUse()) return {};
      reshapes.push_back(user);
      v = user->getResult(0);
      continue;
    }
    auto generic = dyn_cast<linalg::GenericOp>(user);
    if (!generic) return {};
    for (OpOperand& use : v.getUses()) {
      if (use.getOwner() != user || !generic.isDpsInput(&use)) return {};
      reads.push_back(&use);
    }
    return generic;
  }
}

// The consumer's own conditions: one plain elementwise result over a
// static shape, computed afresh (its init unread), its inputs readable by
// computeAt, each product read at its own element.
bool qualifies(linalg::GenericOp g, const Epilogue& e) {
  if (!plainElementwise(g) || g->getNumResults() != 1 || !projectedInputs(g)) return false;
  auto result = cast<RankedTensorType>(g->getResult(0).getType());
  OpOperand* init = g.getDpsInitOperand(0);
  if (!result.hasStaticShape() || !g.getMatchingIndexingMap(init).isIdentity() ||
      !g.getMatchingBlockArgument(init).use_empty())
    return false;
  for (const auto& reads : e.reads)
    for (OpOperand* read : reads)
      if (!g.getMatchingIndexingMap(read).isIdentity()) return false;
  return true;
}

// True when everything the consumer reads besides the products exists
// before `launch`.
bool availableAt(linalg::GenericOp g, const Epilogue& e, Operation* launch) {
  DominanceInfo dominance(launch->getParentOfType<func::FuncOp>());
  auto fromProduct = [&](OpOperand* operand) {
    return llvm::any_of(e.reads, [&](const auto& reads) { return llvm::is_contained(reads, operand); });
  };
  for (OpOperand* input : g.getDpsInputOperands())
    if (!fromProduct(input) && !dominance.properlyDominates(input->get(), launch)) return false;
  llvm::SetVector<Value> above;
  getUsedValuesDefinedAbove(g.getRegion(), above);
  return llvm::all_of(above, [&](Value v) { return dominance.properlyDominates(v, launch); });
}

}  // namespace

std::optional<Epilogue> findEpilogue(ArrayRef<Value> products, Operation* launch) {
  Epilogue e;
  for (Value product : products) {
    SmallVector<OpOperand*> reads;
    linalg::GenericOp g = readerOf(product, reads, e.reshapes);
    if (!g || (e.consumer && g != e.consumer)) return std::nullopt;
    e.consumer = g;
    e.reads.push_back(std::move(reads));
  }
  if (!e.consumer || !qualifies(e.consumer, e) || !availableAt(e.consumer, e, launch)) return std::nullopt;
  int64_t count = elements(e.consumer->getResult(0));
  if (llvm::any_of(products, [&](Value p) { return elements(p) != count; })) return std::nullopt;
  return e;
}

void allocateEpilogue(OpBuilder& b, Location l, Epilogue& e) {
  auto result = cast<RankedTensorType>(e.consumer->getResult(0).getType());
  e.buffer = memref::AllocOp::create(b, l, MemRefType::get(result.getShape(), result.getElementType()));
}

void storeEpilogue(OpBuilder& b, Location l, const Epilogue& e, ArrayRef<Value> values, Value linear) {
  ArrayRef<int64_t> shape = cast<RankedTensorType>(e.consumer->getResult(0).getType()).getShape();
  SmallVector<Value> at = delinearize(b, l, linear, shape);
  SmallVector<std::pair<OpOperand*, Value>> given;
  for (auto [reads, value] : llvm::zip_equal(e.reads, values))
    for (OpOperand* read : reads) given.push_back({read, value});
  Value v = computeAt(b, l, e.consumer, 0, at, given);
  memref::StoreOp::create(b, l, v, e.buffer, at);
}

void finishEpilogue(OpBuilder& b, Location l, Epilogue& e) {
  Value t = bufferization::ToTensorOp::create(b, l, e.consumer->getResult(0).getType(), e.buffer, /*restrict=*/true,
                                              /*writable=*/true);
  e.consumer->getResult(0).replaceAllUsesWith(t);
  e.consumer->erase();
  // Each reshape's reader goes before it.
  for (Operation* reshape : llvm::reverse(e.reshapes)) reshape->erase();
}

}  // namespace linnet::cuda
