// linnet-hoist-constants: values that depend on no argument (the rope
// tables a model builds from `iota` and constants on every call, say) are
// computed once, when the compiled code is loaded, instead of on every call.
//
// A value is constant when its op is a side-effect-free `linnet` op (or
// arith.constant) without regions whose operands are all constant. Each
// constant tensor that a non-constant op uses, and that is worth keeping
// (big enough, and made by more than a splat or an iota), becomes a
// `memref.global`; the function reads the global, and a new function
// `@linnet_init` computes every global's value once. The runtime calls
// `linnet_init` right after loading the shared object.
#include "ir/dialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/Pass.h"
#include "transforms/passes.h"

namespace linnet::transforms {

namespace {

using namespace mlir;

// Smaller constants are cheaper to recompute than to keep.
constexpr int64_t kMinElements = 256;

bool isConstantOp(Operation* op, const llvm::DenseSet<Operation*>& constants) {
  if (op->getNumRegions() != 0 || op->getNumResults() != 1) return false;
  if (!isa<ir::LinnetDialect>(op->getDialect()) && !isa<arith::ConstantOp>(op)) return false;
  if (!isPure(op)) return false;
  for (Value v : op->getOperands()) {
    Operation* def = v.getDefiningOp();
    if (!def || !constants.contains(def)) return false;
  }
  return true;
}

// Only worth a global when the value takes real work to compute.
bool worthKeeping(Operation* root, const llvm::DenseSet<Operation*>& constants) {
  auto type = dyn_cast<RankedTensorType>(root->getResult(0).getType());
  if (!type || type.getNumElements() < kMinElements) return false;
  SmallVector<Operation*> stack = {root};
  llvm::DenseSet<Operation*> seen;
  while (!stack.empty()) {
    Operation* op = stack.pop_back_val();
    if (!seen.insert(op).second) continue;
    if (isa<ir::UnaryOp, ir::BinaryOp, ir::MatmulOp, ir::ReduceOp, ir::GatherOp, ir::SelectOp>(op)) return true;
    for (Value v : op->getOperands())
      if (Operation* def = v.getDefiningOp(); def && constants.contains(def)) stack.push_back(def);
  }
  return false;
}

// The ops `root` depends on, in an order where each comes after its operands.
SmallVector<Operation*> subgraph(Operation* root, const llvm::DenseSet<Operation*>& constants) {
  SmallVector<Operation*> order;
  llvm::DenseSet<Operation*> seen;
  std::function<void(Operation*)> visit = [&](Operation* op) {
    if (!seen.insert(op).second) return;
    for (Value v : op->getOperands())
      if (Operation* def = v.getDefiningOp(); def && constants.contains(def)) visit(def);
    order.push_back(op);
  };
  visit(root);
  return order;
}

struct HoistConstantsPass : PassWrapper<HoistConstantsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(HoistConstantsPass)
  StringRef getArgument() const final { return "linnet-hoist-constants"; }
  StringRef getDescription() const final {
    return "Compute argument-independent tensors once, in @linnet_init, into globals";
  }
  void getDependentDialects(DialectRegistry& registry) const override {
    registry.insert<memref::MemRefDialect, bufferization::BufferizationDialect, func::FuncDialect>();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    OpBuilder b(&getContext());
    Location loc = module.getLoc();
    b.setInsertionPointToEnd(module.getBody());
    auto init = func::FuncOp::create(b, loc, "linnet_init", b.getFunctionType({}, {}));
    Block* initBlock = init.addEntryBlock();
    int count = 0;

    for (auto fn : llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (fn == init) continue;
      llvm::DenseSet<Operation*> constants;
      fn.walk<WalkOrder::PreOrder>([&](Operation* op) {
        if (isConstantOp(op, constants)) constants.insert(op);
      });
      SmallVector<Operation*> roots;
      for (Operation* op : constants) {
        bool usedOutside = llvm::any_of(op->getUsers(), [&](Operation* u) { return !constants.contains(u); });
        if (usedOutside && worthKeeping(op, constants)) roots.push_back(op);
      }
      // A stable order (the set's is not): by position in the function.
      llvm::sort(roots, [](Operation* x, Operation* y) {
        if (x->getBlock() == y->getBlock()) return x->isBeforeInBlock(y);
        return x < y;
      });
      for (Operation* root : roots) {
        auto type = cast<RankedTensorType>(root->getResult(0).getType());
        auto memrefType = MemRefType::get(type.getShape(), type.getElementType());
        std::string name = "__linnet_constant_" + std::to_string(count++);
        b.setInsertionPoint(init);
        memref::GlobalOp::create(b, root->getLoc(), name, b.getStringAttr("private"), memrefType, Attribute(),
                                 /*constant=*/false, IntegerAttr());
        // @linnet_init computes it once.
        b.setInsertionPointToEnd(initBlock);
        IRMapping map;
        for (Operation* op : subgraph(root, constants)) b.clone(*op, map);
        Value global = memref::GetGlobalOp::create(b, root->getLoc(), memrefType, name);
        auto store = bufferization::MaterializeInDestinationOp::create(b, root->getLoc(), TypeRange{},
                                                                        map.lookup(root->getResult(0)), global);
        store.setWritable(true);
        store.setRestrict(true);
        // The function reads it.
        b.setInsertionPoint(root);
        Value read = memref::GetGlobalOp::create(b, root->getLoc(), memrefType, name);
        Value tensor = bufferization::ToTensorOp::create(b, root->getLoc(), type, read, /*restrict=*/true,
                                                         /*writable=*/false);
        root->getResult(0).replaceUsesWithIf(tensor, [&](OpOperand& use) {
          return !constants.contains(use.getOwner());
        });
      }
      // What only the hoisted values used is dead now.
      SmallVector<Operation*> dead;
      fn.walk<WalkOrder::PostOrder>([&](Operation* op) {
        if (constants.contains(op)) dead.push_back(op);
      });
      for (Operation* op : llvm::reverse(dead))
        if (op->use_empty()) op->erase();
    }
    b.setInsertionPointToEnd(initBlock);
    func::ReturnOp::create(b, loc);
  }
};

}  // namespace

std::unique_ptr<Pass> createHoistConstantsPass() { return std::make_unique<HoistConstantsPass>(); }

void registerHoistConstantsPass() { PassRegistration<HoistConstantsPass>(); }

}  // namespace linnet::transforms
