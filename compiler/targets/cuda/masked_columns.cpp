#include "targets/cuda/masked_columns.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "sema/primitives.h"

namespace linnet::cuda {

namespace {

using namespace mlir;

// `v` through integer casts to the index of loop `dim`.
bool isColumnIndex(Value v, unsigned dim) {
  while (Operation* def = v.getDefiningOp()) {
    if (auto index = dyn_cast<linalg::IndexOp>(def)) return index.getDim() == dim;
    if (!isa<arith::IndexCastOp, arith::IndexCastUIOp, arith::TruncIOp, arith::ExtSIOp, arith::ExtUIOp>(def))
      return false;
    v = def->getOperand(0);
  }
  return false;
}

bool isMaskedScore(Value v) {
  auto c = v.getDefiningOp<arith::ConstantOp>();
  auto f = c ? dyn_cast<FloatAttr>(c.getValue()) : FloatAttr();
  return f && f.getType().isF32() &&
         f.getValueAsDouble() == static_cast<double>(static_cast<float>(sema::kAttentionMasked));
}

}  // namespace

std::optional<MaskedSelect> maskedSelect(linalg::GenericOp g) {
  if (!g || g.getNumLoops() == 0) return std::nullopt;
  unsigned dim = g.getNumLoops() - 1;
  using P = arith::CmpIPredicate;
  for (Operation& op : g.getRegion().front()) {
    auto select = dyn_cast<arith::SelectOp>(op);
    if (!select || !isMaskedScore(select.getFalseValue())) continue;
    auto cmp = select.getCondition().getDefiningOp<arith::CmpIOp>();
    if (!cmp) continue;
    Value col = cmp.getLhs(), p = cmp.getRhs();
    P pred = cmp.getPredicate();
    if (pred == P::sge || pred == P::sgt) {
      std::swap(col, p);
      pred = pred == P::sge ? P::sle : P::slt;
    }
    if ((pred == P::sle || pred == P::slt) && isColumnIndex(col, dim)) return MaskedSelect{select, p, pred == P::sle};
  }
  return std::nullopt;
}

bool neutralWhenMasked(linalg::GenericOp g, const MaskedSelect& m, ir::ReduceKind kind) {
  Value y = g.getRegion().front().getTerminator()->getOperand(0);
  Value masked = m.select->getResult(0);
  if (kind == ir::ReduceKind::Max) return y == masked;
  if (kind == ir::ReduceKind::Sum) {
    auto e = y.getDefiningOp<math::ExpOp>();
    auto sub = e ? e.getOperand().getDefiningOp<arith::SubFOp>() : arith::SubFOp();
    return sub && sub.getLhs() == masked;
  }
  return false;
}

Value unmaskedEnd(OpBuilder& b, Location l, linalg::GenericOp g, const MaskedSelect& m, int64_t k,
                  const std::function<Value(OpBuilder&, Value)>& scalar) {
  Block& body = g.getRegion().front();
  IRMapping map;
  // p's ops cloned here, its block arguments the generic's 0-d inputs.
  std::function<bool(Value)> make = [&](Value v) -> bool {
    if (map.contains(v)) return true;
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      if (arg.getOwner() != &body) return true;
      OpOperand& in = g->getOpOperand(arg.getArgNumber());
      if (!g.isDpsInput(&in)) return false;
      auto t = dyn_cast<RankedTensorType>(in.get().getType());
      if (t && t.getRank() != 0) return false;
      Value read = t ? scalar(b, in.get()) : in.get();
      if (!read) return false;
      map.map(v, read);
      return true;
    }
    Operation* def = v.getDefiningOp();
    if (def->getBlock() != &body) return true;  // from above the generic
    if (isa<linalg::IndexOp>(def) || def->getNumRegions() != 0 || !isMemoryEffectFree(def)) return false;
    if (auto e = dyn_cast<tensor::ExtractOp>(def); e && e.getTensor().getType().getRank() != 0) return false;
    for (Value o : def->getOperands())
      if (!make(o)) return false;
    b.clone(*def, map);
    return true;
  };
  if (!make(m.p)) return {};
  Value p = map.lookupOrDefault(m.p);
  Type i64 = b.getI64Type();
  if (p.getType().isIndex()) p = arith::IndexCastOp::create(b, l, i64, p);
  else if (p.getType().getIntOrFloatBitWidth() < 64) p = arith::ExtSIOp::create(b, l, i64, p);
  if (m.inclusive) p = arith::AddIOp::create(b, l, p, arith::ConstantIntOp::create(b, l, i64, 1));
  Value all = arith::ConstantIntOp::create(b, l, i64, k);
  Value some = arith::CmpIOp::create(b, l, arith::CmpIPredicate::sge, p, arith::ConstantIntOp::create(b, l, i64, 1));
  Value end = arith::SelectOp::create(b, l, some, arith::MinSIOp::create(b, l, p, all), all);
  return arith::IndexCastOp::create(b, l, b.getIndexType(), end);
}

}  // namespace linnet::cuda
