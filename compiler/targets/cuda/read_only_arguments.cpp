#include "targets/cuda/read_only_arguments.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "targets/cuda/buffer_aliases.h"
#include "targets/cuda/map_to_gpu.h"

namespace linnet::cuda {

namespace {

using namespace mlir;

// The kernel's arguments it may write; all of them when a write's target is unknown.
llvm::SmallDenseSet<unsigned> writtenArguments(gpu::GPUFuncOp kernel) {
  llvm::SmallDenseSet<unsigned> written;
  bool unknown = false;
  kernel.walk([&](Operation* op) {
    auto iface = dyn_cast<MemoryEffectOpInterface>(op);
    if (!iface) {
      // Warp collectives touch registers only.
      bool collective = isa<gpu::SubgroupReduceOp, gpu::ShuffleOp>(op);
      if (op->getNumRegions() == 0 && !collective && !isMemoryEffectFree(op)) unknown = true;
      return;
    }
    SmallVector<MemoryEffects::EffectInstance> effects;
    iface.getEffects(effects);
    for (auto& e : effects) {
      if (!isa<MemoryEffects::Write>(e.getEffect())) continue;
      Value target = e.getValue();
      if (!target) {
        unknown = true;
        continue;
      }
      auto arg = dyn_cast<BlockArgument>(bufferRoot(target));
      if (arg && arg.getOwner() == &kernel.getBody().front()) written.insert(arg.getArgNumber());
      // else: kernel-local memory (an alloca), not an argument
    }
  });
  if (unknown)
    for (unsigned i = 0; i < kernel.getNumArguments(); ++i) written.insert(i);
  return written;
}

}  // namespace

void markReadOnlyArguments(ModuleOp module) {
  SmallVector<gpu::LaunchFuncOp> launches;
  module.walk([&](gpu::LaunchFuncOp l) { launches.push_back(l); });
  module.walk([&](gpu::GPUFuncOp kernel) {
    if (!kernel.isKernel()) return;
    llvm::SmallDenseSet<unsigned> written = writtenArguments(kernel);
    SmallVector<bool> readOnly(kernel.getNumArguments(), false);
    for (unsigned i = 0; i < kernel.getNumArguments(); ++i)
      readOnly[i] = isa<MemRefType>(kernel.getArgument(i).getType()) && !written.contains(i);
    auto symbol = SymbolRefAttr::get(kernel->getParentOfType<gpu::GPUModuleOp>().getNameAttr(),
                                     {FlatSymbolRefAttr::get(kernel.getNameAttr())});
    bool launched = false;
    for (gpu::LaunchFuncOp launch : launches) {
      if (launch.getKernel() != symbol) continue;
      launched = true;
      auto operands = launch.getKernelOperands();
      for (unsigned i = 0; i < operands.size(); ++i) {
        if (!readOnly[i]) continue;
        for (unsigned j : written)
          if (j < operands.size() && mayAlias(bufferRoot(operands[i]), bufferRoot(operands[j]))) readOnly[i] = false;
      }
    }
    if (!launched) return;
    for (unsigned i = 0; i < kernel.getNumArguments(); ++i)
      if (readOnly[i]) kernel.setArgAttr(i, LLVM::LLVMDialect::getReadonlyAttrName(), UnitAttr::get(kernel.getContext()));
  });
}

void readOnlyArgumentsDoNotAlias(ModuleOp module) {
  for (auto kernels : module.getOps<gpu::GPUModuleOp>()) {
    kernels.walk([](LLVM::LLVMFuncOp fn) {
      for (unsigned i = 0; i < fn.getNumArguments(); ++i)
        if (fn.getArgAttr(i, LLVM::LLVMDialect::getReadonlyAttrName()))
          fn.setArgAttr(i, LLVM::LLVMDialect::getNoAliasAttrName(), UnitAttr::get(fn.getContext()));
    });
  }
}

}  // namespace linnet::cuda
