#include "targets/cuda/buffer_aliases.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "targets/cuda/map_to_gpu.h"

namespace linnet::cuda {

namespace {

using namespace mlir;

bool isAllocation(Value v) { return v.getDefiningOp<gpu::AllocOp>() || v.getDefiningOp<memref::AllocOp>(); }

// The function whose entry block `v` is an argument of; null otherwise.
func::FuncOp argumentOf(Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || !arg.getOwner()->isEntryBlock()) return nullptr;
  return dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
}

// True when `v` exists where `op` runs: a buffer live then is not what
// `op` (an allocation) hands out fresh.
bool definedBefore(Value v, Operation* op) {
  Block* home = v.getParentBlock();
  Operation* at = home ? home->findAncestorOpInBlock(*op) : nullptr;
  if (!at) return false;
  Operation* def = v.getDefiningOp();
  return !def || (def != at && def->isBeforeInBlock(at));
}

// Calls nest no deeper than the program's blocks; the bound only keeps a
// malformed (recursive) module from looping.
constexpr int kMaxCallDepth = 16;

bool mayAliasAt(Value a, Value b, int depth);

// A call's result is a buffer the callee allocated or a view of what it
// was passed: it may alias `other` (an allocation or an argument of the
// caller) only through one of the call's operands.
bool callResultMayAlias(func::CallOp call, Value other, int depth) {
  for (Value operand : call.getOperands())
    if (isa<BaseMemRefType>(operand.getType()) && mayAliasAt(bufferRoot(operand), other, depth + 1)) return true;
  return false;
}

bool mayAliasAt(Value a, Value b, int depth) {
  if (a == b) return true;
  if (depth > kMaxCallDepth) return true;
  bool allocA = isAllocation(a), allocB = isAllocation(b);
  // Fresh memory: not another allocation, nor anything that exists where
  // it is allocated (its function's arguments included).
  if (allocA && allocB) return false;
  if (allocA && definedBefore(b, a.getDefiningOp())) return false;
  if (allocB && definedBefore(a, b.getDefiningOp())) return false;
  func::FuncOp fa = argumentOf(a), fb = argumentOf(b);
  auto ca = a.getDefiningOp<func::CallOp>(), cb = b.getDefiningOp<func::CallOp>();
  if (ca && (allocB || fb)) return callResultMayAlias(ca, b, depth);
  if (cb && (allocA || fa)) return callResultMayAlias(cb, a, depth);
  if (!fa || fa != fb) return true;
  auto module = fa->getParentOfType<ModuleOp>();
  std::optional<SymbolTable::UseRange> uses = SymbolTable::getSymbolUses(fa, module);
  if (!uses) return true;
  if (uses->empty()) return !fa.isPublic();  // an entry the runtime calls; a private function nobody calls
  unsigned i = cast<BlockArgument>(a).getArgNumber(), j = cast<BlockArgument>(b).getArgNumber();
  for (const SymbolTable::SymbolUse& use : *uses) {
    auto call = dyn_cast<func::CallOp>(use.getUser());
    if (!call) return true;
    if (mayAliasAt(bufferRoot(call.getOperand(i)), bufferRoot(call.getOperand(j)), depth + 1)) return true;
  }
  return false;
}

}  // namespace

bool mayAlias(Value rootA, Value rootB) { return mayAliasAt(rootA, rootB, 0); }

}  // namespace linnet::cuda
