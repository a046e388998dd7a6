#include "targets/cuda/warp_helpers.h"

#include "targets/cuda/map_to_gpu.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

namespace linnet::cuda {

using namespace mlir;

Value cIndex(OpBuilder& b, Location l, int64_t v) { return arith::ConstantIndexOp::create(b, l, v); }

Value toF32(OpBuilder& b, Location l, Value v) {
  Type f32 = b.getF32Type();
  if (auto vt = dyn_cast<VectorType>(v.getType())) {
    if (vt.getElementType().isF32()) return v;
    return arith::ExtFOp::create(b, l, VectorType::get(vt.getShape(), f32), v);
  }
  return v.getType().isF32() ? v : Value(arith::ExtFOp::create(b, l, f32, v));
}

Value combine(OpBuilder& b, Location l, gpu::AllReduceOperation kind, Value x, Value y) {
  using K = gpu::AllReduceOperation;
  switch (kind) {
    case K::ADD: return arith::AddFOp::create(b, l, x, y);
    case K::MAXNUMF: return arith::MaxNumFOp::create(b, l, x, y);
    case K::MINNUMF: return arith::MinNumFOp::create(b, l, x, y);
    case K::MAXIMUMF: return arith::MaximumFOp::create(b, l, x, y);
    case K::MINIMUMF: return arith::MinimumFOp::create(b, l, x, y);
    case K::MUL: return arith::MulFOp::create(b, l, x, y);
    default: return {};
  }
}

SmallVector<Value> delinearize(OpBuilder& b, Location l, Value linear, ArrayRef<int64_t> shape) {
  SmallVector<Value> indices(shape.size());
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    indices[d] = arith::RemUIOp::create(b, l, linear, cIndex(b, l, shape[d]));
    linear = arith::DivUIOp::create(b, l, linear, cIndex(b, l, shape[d]));
  }
  return indices;
}

scf::ParallelOp parallelLoop(OpBuilder& b, Location l, ArrayRef<int64_t> extents, StringRef family) {
  SmallVector<Value> zeros, ends, ones;
  for (int64_t e : extents) {
    zeros.push_back(cIndex(b, l, 0));
    ends.push_back(cIndex(b, l, e));
    ones.push_back(cIndex(b, l, 1));
  }
  auto par = scf::ParallelOp::create(b, l, zeros, ends, ones);
  // On the terminator too: canonicalization rebuilds a loop with a unit
  // extent without the loop's attributes, but clones its body's ops.
  par->setAttr(kKernelFamily, b.getStringAttr(family));
  par.getBody()->getTerminator()->setAttr(kKernelFamily, b.getStringAttr(family));
  b.setInsertionPoint(par.getBody()->getTerminator());
  return par;
}

}  // namespace linnet::cuda
