#include "targets/cuda/hoist_invariants.h"

#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/SetVector.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"

namespace linnet::cuda {

using namespace mlir;

namespace {

// True when `v` is defined outside `loop`.
bool definedOutside(Value v, Operation* loop) {
  Operation* owner = v.getDefiningOp();
  if (!owner) owner = cast<BlockArgument>(v).getOwner()->getParentOp();
  return !loop->isAncestor(owner);
}

// True when every value `ops` read from outside them is defined outside `loop`.
bool invariantIn(ArrayRef<Operation*> ops, Operation* loop) {
  llvm::DenseSet<Operation*> set(ops.begin(), ops.end());
  auto outside = [&](Value used) {
    Operation* def = used.getDefiningOp();
    return (def && set.contains(def)) || definedOutside(used, loop);
  };
  for (Operation* op : ops) {
    if (!llvm::all_of(op->getOperands(), outside)) return false;
    SetVector<Value> above;
    for (Region& r : op->getRegions()) getUsedValuesDefinedAbove(r, above);
    if (!llvm::all_of(above, outside)) return false;
  }
  return true;
}

}  // namespace

void passToCall(func::CallOp call, ValueRange computed, ArrayRef<Operation*> moved, ArrayRef<Operation*> cloned) {
  OpBuilder b(call);
  SmallVector<Value> operands(call.getOperands());
  llvm::append_range(operands, computed);
  auto made = func::CallOp::create(b, call.getLoc(), call.getCallee(), call.getResultTypes(), operands);
  made->setAttrs(call->getAttrs());
  call.replaceAllUsesWith(made.getResults());
  call.erase();
  for (Operation* op : llvm::reverse(moved))
    if (op->use_empty()) op->erase();
  for (Operation* loop = made->getParentOp(); isa_and_nonnull<scf::ForOp>(loop) && invariantIn(cloned, loop);
       loop = loop->getParentOp())
    for (Operation* op : cloned) op->moveBefore(loop);
}

namespace {

// The ops of `f`'s top level that compute, free of memory effects, from
// nothing but the arguments marked in `invariant`, in order.
SetVector<Operation*> invariantOps(func::FuncOp f, const llvm::BitVector& invariant) {
  SetVector<Operation*> ops;
  Block* body = &f.front();
  auto known = [&](Value v) {
    if (auto arg = dyn_cast<BlockArgument>(v)) return arg.getOwner() == body && invariant.test(arg.getArgNumber());
    return ops.contains(v.getDefiningOp());
  };
  for (Operation& op : body->without_terminator()) {
    if (!isMemoryEffectFree(&op) || !llvm::all_of(op.getOperands(), known)) continue;
    SetVector<Value> above;
    for (Region& r : op.getRegions()) getUsedValuesDefinedAbove(r, above);
    if (llvm::all_of(above, known)) ops.insert(&op);
  }
  return ops;
}

// The tensors of `ops` worth passing in: of rank 1 or more, computed (a
// linalg op among what makes them, not views and constants alone), and
// read by something else.
SmallVector<Value> passedIn(func::FuncOp f, const SetVector<Operation*>& ops) {
  llvm::DenseSet<Operation*> computes;
  SmallVector<Value> out;
  Block* body = &f.front();
  for (Operation* op : ops) {
    bool work = isa<linalg::LinalgOp>(op) || llvm::any_of(op->getOperands(), [&](Value v) {
                  return computes.contains(v.getDefiningOp());
                });
    if (!work) continue;
    computes.insert(op);
    for (Value r : op->getResults()) {
      auto type = dyn_cast<RankedTensorType>(r.getType());
      if (!type || type.getRank() == 0) continue;
      if (llvm::any_of(r.getUsers(), [&](Operation* user) {
            Operation* top = body->findAncestorOpInBlock(*user);
            return !top || !ops.contains(top);
          }))
        out.push_back(r);
    }
  }
  return out;
}

void hoistFrom(ModuleOp module, func::FuncOp f) {
  std::optional<SymbolTable::UseRange> uses = SymbolTable::getSymbolUses(f, module);
  if (!uses || !llvm::hasSingleElement(*uses)) return;
  auto call = dyn_cast<func::CallOp>(uses->begin()->getUser());
  if (!call || !isa_and_nonnull<scf::ForOp>(call->getParentOp())) return;
  Operation* loop = call->getParentOp();
  llvm::BitVector invariant(f.getNumArguments());
  for (auto [i, operand] : llvm::enumerate(call.getOperands()))
    if (definedOutside(operand, loop)) invariant.set(i);
  SetVector<Operation*> ops = invariantOps(f, invariant);
  SmallVector<Value> values = passedIn(f, ops);
  if (values.empty()) return;

  // What the values are made of, cloned at the call from its operands.
  SetVector<Operation*> needed;
  SmallVector<Operation*> work;
  for (Value v : values) work.push_back(v.getDefiningOp());
  while (!work.empty()) {
    Operation* op = work.pop_back_val();
    if (!ops.contains(op) || !needed.insert(op)) continue;
    for (Value v : op->getOperands())
      if (Operation* def = v.getDefiningOp()) work.push_back(def);
    SetVector<Value> above;
    for (Region& r : op->getRegions()) getUsedValuesDefinedAbove(r, above);
    for (Value v : above)
      if (Operation* def = v.getDefiningOp()) work.push_back(def);
  }
  OpBuilder b(call);
  IRMapping map;
  for (auto [arg, operand] : llvm::zip_equal(f.getArguments(), call.getOperands())) map.map(arg, operand);
  SmallVector<Operation*> cloned;
  for (Operation* op : ops)
    if (needed.contains(op)) cloned.push_back(b.clone(*op, map));

  // f takes each as a new last argument.
  SmallVector<Value> more;
  for (Value v : values) {
    unsigned index = f.getNumArguments();
    if (failed(f.insertArgument(index, v.getType(), {}, v.getLoc()))) return;
    v.replaceAllUsesWith(f.getArgument(index));
    more.push_back(map.lookup(v));
  }
  passToCall(call, more, ops.getArrayRef(), cloned);
}

}  // namespace

void hoistLayerInvariants(ModuleOp module) {
  SmallVector<func::FuncOp> functions;
  for (auto f : module.getOps<func::FuncOp>())
    if (f.isPrivate() && !f.isExternal()) functions.push_back(f);
  for (func::FuncOp f : functions) hoistFrom(module, f);
}

}  // namespace linnet::cuda
