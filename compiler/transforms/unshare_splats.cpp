// linnet-unshare-splats: a splat tensor (a linalg.generic that broadcasts a
// 0-d value into a tensor.empty: zeros, a constant fill) that CSE made one
// value for several users gets a copy of its own for each user that may
// write it in place (a destination operand, an scf.for init, an inserted-
// into tensor, a call's argument). One-shot bufferization otherwise keeps
// the splat in one buffer and copies it for every such user: a derived
// gradient's stacked sums and saved values ([Layers, ...], half a gigabyte
// for SmolLM2) were filled once and copied, where filling each costs half
// as much memory traffic. Users that only read keep sharing the original.
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/Pass.h"
#include "transforms/passes.h"

namespace linnet::transforms {

namespace {

using namespace mlir;

// A generic whose one init is a tensor.empty and whose body yields a 0-d input.
bool isSplat(Operation* op) {
  auto g = dyn_cast<linalg::GenericOp>(op);
  if (!g || g.getNumDpsInits() != 1 || g->getNumResults() != 1 ||
      !g.getDpsInits()[0].getDefiningOp<tensor::EmptyOp>())
    return false;
  for (Value in : g.getDpsInputs()) {
    auto t = dyn_cast<RankedTensorType>(in.getType());
    if (!t || t.getRank() != 0) return false;
  }
  auto yield = cast<linalg::YieldOp>(g.getBody()->getTerminator());
  if (g.getBody()->getOperations().size() != 1 || yield.getNumOperands() != 1) return false;
  Value v = yield.getOperand(0);
  // A scalar from outside (linnet-fuse-elementwise folds a 0-d constant in).
  if (v.getParentBlock() != g.getBody()) return true;
  auto arg = dyn_cast<BlockArgument>(v);
  return arg && arg.getOwner() == g.getBody() && arg.getArgNumber() < g.getNumDpsInputs();
}

bool mayWriteInPlace(OpOperand& use) {
  Operation* user = use.getOwner();
  if (auto dps = dyn_cast<DestinationStyleOpInterface>(user)) return dps.isDpsInit(&use);
  if (auto insert = dyn_cast<tensor::InsertSliceOp>(user)) return &use == &insert.getDestMutable();
  if (auto insert = dyn_cast<tensor::InsertOp>(user)) return &use == &insert.getDestMutable();
  return isa<scf::ForOp, func::CallOp>(user);
}

struct UnshareSplatsPass : PassWrapper<UnshareSplatsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(UnshareSplatsPass)
  StringRef getArgument() const final { return "linnet-unshare-splats"; }
  StringRef getDescription() const final {
    return "a splat tensor shared by users that may write it in place: a splat of its own for each";
  }
  void getDependentDialects(DialectRegistry& registry) const override {
    registry.insert<linalg::LinalgDialect, tensor::TensorDialect>();
  }
  void runOnOperation() override {
    SmallVector<Operation*> splats;
    getOperation().walk([&](Operation* op) {
      if (isSplat(op) && !op->getResult(0).hasOneUse()) splats.push_back(op);
    });
    for (Operation* splat : splats) {
      SmallVector<OpOperand*> writers, all;
      for (OpOperand& use : splat->getResult(0).getUses()) {
        all.push_back(&use);
        if (mayWriteInPlace(use)) writers.push_back(&use);
      }
      // With no reader, the original serves the first writer.
      size_t first = writers.size() == all.size() ? 1 : 0;
      for (size_t k = first; k < writers.size(); ++k) {
        OpBuilder b(splat);
        IRMapping map;
        Operation* empty = cast<linalg::GenericOp>(splat).getDpsInits()[0].getDefiningOp();
        b.clone(*empty, map);
        writers[k]->set(b.clone(*splat, map)->getResult(0));
      }
    }
  }
};

}  // namespace

std::unique_ptr<Pass> createUnshareSplatsPass() { return std::make_unique<UnshareSplatsPass>(); }
void registerUnshareSplatsPass() { PassRegistration<UnshareSplatsPass>(); }

}  // namespace linnet::transforms
