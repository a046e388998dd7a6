#include "targets/cuda/buffer_lifetimes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
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

// The last op of the alloc's block that uses the buffer or a view of it;
// null when the buffer escapes or is already released.
Operation* lastUse(gpu::AllocOp alloc) {
  Block* home = alloc->getBlock();
  Operation* last = alloc;
  SmallVector<Value> values = {alloc.getMemref()};
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
      // On the host: launches, copies, fills, library products, host reads and sizes use it; views (the
      // base buffer of extract_strided_metadata among them) alias it, and
      // their uses count too. Anything else may keep it: it lives on.
      bool view = isa<memref::SubViewOp, memref::ExpandShapeOp, memref::CollapseShapeOp, memref::CastOp,
                      memref::ReinterpretCastOp, memref::ViewOp, memref::ExtractStridedMetadataOp>(user);
      if (!view && !isa<gpu::LaunchFuncOp, gpu::MemcpyOp, gpu::MemsetOp, memref::DimOp>(user) && !isLibraryCall(user) &&
          !isHostRead(user))
        return nullptr;
      for (Value result : user->getResults())
        if (isa<BaseMemRefType>(result.getType())) values.push_back(result);
    }
  }
  return last;
}

}  // namespace

void releaseBuffersAfterLastUse(ModuleOp module) {
  SmallVector<std::pair<gpu::AllocOp, Operation*>> releases;
  module.walk([&](func::FuncOp fn) {
    fn.walk([&](gpu::AllocOp alloc) {
      if (alloc->getParentOfType<gpu::LaunchOp>()) return;
      if (Operation* last = lastUse(alloc)) releases.push_back({alloc, last});
    });
  });
  for (auto [alloc, last] : releases) {
    OpBuilder b(last->getContext());
    b.setInsertionPointAfter(last);
    releaseOnDevice(b, alloc.getLoc(), alloc.getMemref());
  }
}

}  // namespace linnet::cuda
