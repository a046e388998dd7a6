#include "targets/cuda/emulated.h"

#include <algorithm>

#include "artifact/abi.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "targets/cpu/pipeline.h"
#include "targets/cuda/pipeline.h"
#include "targets/cuda/warp_kernels.h"
#include "transforms/pipeline.h"

namespace linnet::cuda {

using namespace mlir;

void launchesAsLoops(ModuleOp module) {
  SmallVector<gpu::LaunchOp> launches;
  module.walk([&](gpu::LaunchOp l) { launches.push_back(l); });
  for (gpu::LaunchOp launch : launches) {
    emulateWarpReductions(launch);
    // The GPU's alignment of a vector load does not hold for host buffers
    // (a weight in the checkpoint's mapping).
    launch.walk([](vector::LoadOp load) { load.setAlignment(std::nullopt); });
    OpBuilder b(launch);
    Location loc = launch.getLoc();
    Value zero = arith::ConstantIndexOp::create(b, loc, 0), one = arith::ConstantIndexOp::create(b, loc, 1);
    auto par = scf::ParallelOp::create(b, loc, ValueRange{zero, zero},
                                       ValueRange{launch.getGridSizeX(), launch.getBlockSizeX()}, ValueRange{one, one});
    IRMapping map;
    gpu::KernelDim3 blocks = launch.getBlockIds(), threads = launch.getThreadIds();
    gpu::KernelDim3 grid = launch.getGridSize(), block = launch.getBlockSize();
    map.map(blocks.x, par.getInductionVars()[0]);
    map.map(threads.x, par.getInductionVars()[1]);
    for (Value v : {blocks.y, blocks.z, threads.y, threads.z}) map.map(v, zero);
    map.map(grid.x, launch.getGridSizeX());
    map.map(grid.y, launch.getGridSizeY());
    map.map(grid.z, launch.getGridSizeZ());
    map.map(block.x, launch.getBlockSizeX());
    map.map(block.y, launch.getBlockSizeY());
    map.map(block.z, launch.getBlockSizeZ());
    b.setInsertionPoint(par.getBody()->getTerminator());
    for (Operation& op : launch.getBody().front().without_terminator()) b.clone(op, map);
    launch.erase();
  }
  // Allocations on the host; the async tokens and waits go.
  module.walk([](gpu::AllocOp alloc) {
    OpBuilder b(alloc);
    auto host = memref::AllocOp::create(b, alloc.getLoc(), alloc.getMemref().getType(), alloc.getDynamicSizes(),
                                        alloc.getSymbolOperands());
    alloc.getMemref().replaceAllUsesWith(host);
  });
  // Releases free the host buffers, so that the tests here run the lifetimes
  // the GPU's arena reuses (a buffer released early reads freed memory).
  module.walk([](gpu::DeallocOp release) {
    OpBuilder b(release);
    memref::DeallocOp::create(b, release.getLoc(), release.getMemref());
  });
  SmallVector<Operation*> sinks, rest;
  module.walk([&](Operation* op) {
    if (auto wait = dyn_cast<gpu::WaitOp>(op); wait && !wait.getAsyncToken()) sinks.push_back(op);
    else if (isa<gpu::WaitOp, gpu::AllocOp, gpu::DeallocOp>(op)) rest.push_back(op);
  });
  for (Operation* op : sinks) op->erase();
  // Users before producers: deallocs and allocs, then the waits that start them.
  std::stable_partition(rest.begin(), rest.end(), [](Operation* op) { return !isa<gpu::WaitOp>(op); });
  for (Operation* op : rest) op->erase();
}

namespace {

class EmulatedTarget : public targets::Target {
 public:
  std::string_view name() const override { return "cuda-emulated"; }
  bool readsStorageFormats() const override { return false; }
  std::vector<std::string> stages() const override { return {"loops", "lowered"}; }
  transforms::SharedOptions sharedOptions() const override { return cuda::sharedOptions(); }
  void registerDialects(mlir::DialectRegistry& registry) const override { cpu::registerDialects(registry); }

  std::optional<std::string> lower(mlir::ModuleOp module, std::string_view stage) const override {
    lowerToLaunches(module);
    launchesAsLoops(module);
    if (stage == "loops") return std::nullopt;
    cpu::lowerLoopsToLLVM(module);
    return std::nullopt;  // "lowered"
  }

  void buildArtifact(mlir::ModuleOp module, const std::vector<std::string>& functions, artifact::Manifest& manifest,
                     const std::filesystem::path& dir, const targets::ArtifactOptions& options) const override {
    lower(module, "lowered");
    std::string llvmIR = transforms::translateToLLVMIR(module);
    for (size_t i = 0; i < manifest.entries.size(); ++i) manifest.entries[i].symbol = artifact::callSymbol(functions[i]);
    manifest.library = "model.so";
    manifest.init.clear();
    cpu::compileSharedObject(llvmIR, cpu::entryShim(manifest, functions) + emulatedLibraryText(),
                             (dir / manifest.library).string());
    if (!options.keepIR) std::filesystem::remove(dir / "model.ll");
  }
};

}  // namespace

std::unique_ptr<targets::Target> makeEmulatedTarget() { return std::make_unique<EmulatedTarget>(); }

}  // namespace linnet::cuda
