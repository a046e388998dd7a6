#include "targets/cuda/buffer_lifetimes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "targets/cuda/host_reads.h"
#include "targets/cuda/library_products.h"
#include "targets/cuda/map_to_gpu.h"

namespace linnet::cuda {

namespace {

using namespace mlir;

// The op of `home` that holds `user` (itself, or the loop or if around it);
// null when `user` is not inside `home`.
Operation* holderIn(Block* home, Operation* user) { return home->findAncestorOpInBlock(*user); }

// A view of its operand's buffer (the base buffer of extract_strided_metadata among them).
bool isView(Operation* op) {
  return isa<memref::SubViewOp, memref::ExpandShapeOp, memref::CollapseShapeOp, memref::CastOp,
             memref::ReinterpretCastOp, memref::ViewOp, memref::ExtractStridedMetadataOp>(op);
}

// Host work that uses a buffer without keeping it: launches, copies, fills,
// library products, host reads and sizes.
bool usesWithoutKeeping(Operation* op) {
  return isa<gpu::LaunchFuncOp, gpu::MemcpyOp, gpu::MemsetOp, memref::DimOp>(op) || isLibraryCall(op) || isHostRead(op);
}

// The last op of `buffer`'s block that uses it or a view of it; null when
// the buffer escapes or is already released.
Operation* lastUse(Value buffer) {
  Operation* last = buffer.getDefiningOp();
  Block* home = last->getBlock();
  SmallVector<Value> values = {buffer};
  while (!values.empty()) {
    Value v = values.pop_back_val();
    for (OpOperand& use : v.getUses()) {
      Operation* user = use.getOwner();
      if (isa<gpu::DeallocOp>(user)) return nullptr;  // the code releases it already
      Operation* holder = holderIn(home, user);
      if (!holder) return nullptr;
      if (last->isBeforeInBlock(holder)) last = holder;
      // A kernel's body (a gpu.launch captures the buffer) cannot let it
      // escape: a device op only reads or writes its elements.
      if (user->getParentOfType<gpu::LaunchOp>()) continue;
      // On the host: work that does not keep it, and views, which alias it
      // (their uses count too). Anything else may keep it: it lives on.
      bool view = isView(user);
      if (!view && !usesWithoutKeeping(user)) return nullptr;
      for (Value result : user->getResults())
        if (isa<BaseMemRefType>(result.getType())) values.push_back(result);
    }
  }
  return last;
}

// True when every region of `op` (a switch or an if) yields, as result
// `i`, a buffer allocated in that region for nothing but to be yielded
// there once: the result is then one buffer, whichever region ran, which
// its block may release (prefill's attention over a key prefix: each case
// its own result).
bool freshInEveryRegion(Operation* op, unsigned i) {
  if (op->getNumRegions() == 0) return false;
  for (Region& region : op->getRegions()) {
    if (region.empty()) return false;
    Operation* yield = region.front().getTerminator();
    // The allocation behind the yielded view, in the region's block.
    Value v = yield->getOperand(i);
    Operation* def = v.getDefiningOp();
    while (def && isa<memref::ExpandShapeOp, memref::CollapseShapeOp, memref::CastOp>(def)) def = def->getOperand(0).getDefiningOp();
    auto alloc = dyn_cast_or_null<gpu::AllocOp>(def);
    if (!alloc || alloc->getBlock() != &region.front()) return false;
    // Used only by work that does not keep it, by views and, once, by the yield as result i.
    int yielded = 0;
    SmallVector<Value> values = {alloc.getMemref()};
    while (!values.empty()) {
      for (OpOperand& use : values.pop_back_val().getUses()) {
        Operation* user = use.getOwner();
        if (user == yield) {
          if (use.getOperandNumber() != i || ++yielded > 1) return false;
        } else if (isView(user)) {
          for (Value result : user->getResults())
            if (isa<BaseMemRefType>(result.getType())) values.push_back(result);
        } else if (!user->getParentOfType<gpu::LaunchOp>() && !usesWithoutKeeping(user)) {
          return false;
        }
      }
    }
    if (yielded != 1) return false;
  }
  return true;
}

}  // namespace

void releaseBuffersAfterLastUse(ModuleOp module) {
  SmallVector<std::pair<Value, Operation*>> releases;
  module.walk([&](func::FuncOp fn) {
    fn.walk([&](Operation* op) {
      if (op->getParentOfType<gpu::LaunchOp>()) return;
      if (auto alloc = dyn_cast<gpu::AllocOp>(op)) {
        if (Operation* last = lastUse(alloc.getMemref())) releases.push_back({alloc.getMemref(), last});
      } else if (isa<scf::IndexSwitchOp, scf::IfOp>(op)) {
        for (OpResult result : op->getResults())
          if (isa<MemRefType>(result.getType()) && freshInEveryRegion(op, result.getResultNumber()))
            if (Operation* last = lastUse(result)) releases.push_back({result, last});
      }
    });
  });
  for (auto [buffer, last] : releases) {
    OpBuilder b(last->getContext());
    b.setInsertionPointAfter(last);
    releaseOnDevice(b, buffer.getLoc(), buffer);
  }
}

}  // namespace linnet::cuda
