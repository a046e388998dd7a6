#include "targets/cuda/merge_launches.h"

#include <algorithm>
#include <optional>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/Pass.h"
#include "targets/cuda/buffer_aliases.h"
#include "targets/cuda/map_to_gpu.h"
#include "targets/cuda/warp_helpers.h"

namespace linnet::cuda {

namespace {

using namespace mlir;

// --- what a launch reads and writes ---

struct Accesses {
  SmallVector<Value> reads, writes;  // roots
};

// The roots of the buffers `launch` reads and writes; nullopt when an op
// in it has an effect on something that is not one of its buffers (or
// declares none). A buffer the kernel allocates itself is its own.
std::optional<Accesses> accessesOf(gpu::LaunchOp launch) {
  Accesses out;
  bool known = true;
  launch.getBody().walk([&](Operation* op) {
    if (op->hasTrait<OpTrait::HasRecursiveMemoryEffects>()) return;  // its ops are walked
    auto iface = dyn_cast<MemoryEffectOpInterface>(op);
    if (!iface) {
      known = false;
      return;
    }
    SmallVector<MemoryEffects::EffectInstance> effects;
    iface.getEffects(effects);
    for (const MemoryEffects::EffectInstance& effect : effects) {
      Value v = effect.getValue();
      if (!v || !isa<BaseMemRefType>(v.getType())) {
        known = false;
        continue;
      }
      Value root = bufferRoot(v);
      Operation* def = root.getDefiningOp();
      Region* home = def ? def->getParentRegion() : cast<BlockArgument>(root).getParentRegion();
      if (launch.getBody().isAncestor(home)) continue;
      if (isa<MemoryEffects::Read>(effect.getEffect())) out.reads.push_back(root);
      else out.writes.push_back(root);
    }
  });
  if (!known) return std::nullopt;
  return out;
}

bool independent(const Accesses& x, const Accesses& y) {
  auto clash = [](ArrayRef<Value> writes, const Accesses& other) {
    for (Value w : writes)
      for (ArrayRef<Value> roots : {ArrayRef<Value>(other.reads), ArrayRef<Value>(other.writes)})
        for (Value r : roots)
          if (mayAlias(w, r)) return true;
    return false;
  };
  return !clash(x.writes, y) && !clash(y.writes, x);
}

// --- which launches, and what may stand between them ---

// An elementwise launch over a 1-D grid of known size, one block of
// threads along x, nothing else attached: a block of it can run anywhere
// in a larger grid given its block index.
bool mergeable(gpu::LaunchOp launch) {
  auto family = launch->getAttrOfType<StringAttr>(kKernelFamily);
  if (!family || family.getValue() != "elementwise") return false;
  if (!launch.getAsyncDependencies().empty() || launch.getAsyncToken() || launch.getDynamicSharedMemorySize() ||
      launch.hasClusterSize() || !launch.getWorkgroupAttributions().empty() ||
      !launch.getPrivateAttributions().empty() || !launch.getBody().hasOneBlock())
    return false;
  for (Value v : {launch.getGridSizeX(), launch.getBlockSizeX()})
    if (!getConstantIntValue(v)) return false;
  for (Value v : {launch.getGridSizeY(), launch.getGridSizeZ(), launch.getBlockSizeY(), launch.getBlockSizeZ()})
    if (getConstantIntValue(v) != 1) return false;
  return true;
}

// Host work a launch may be moved past: it touches no device memory (a
// view, index arithmetic, a constant) or only takes a new buffer.
bool neutral(Operation& op) {
  if (isa<gpu::AllocOp, gpu::WaitOp>(op)) return true;
  return op.getNumRegions() == 0 && isMemoryEffectFree(&op);
}

// --- the merged launch ---

// `part`'s body at b's insertion point inside `merged`, its blocks those
// from `firstBlock` on.
void clonePart(OpBuilder& b, gpu::LaunchOp merged, gpu::LaunchOp part, int64_t firstBlock, int64_t threads) {
  Location loc = part.getLoc();
  int64_t blocks = *getConstantIntValue(part.getGridSizeX());
  int64_t partThreads = *getConstantIntValue(part.getBlockSizeX());
  IRMapping map;
  Value block = merged.getBlockIds().x;
  if (firstBlock > 0) block = arith::SubIOp::create(b, loc, block, cIndex(b, loc, firstBlock));
  map.map(part.getBlockIds().x, block);
  map.map(part.getBlockIds().y, merged.getBlockIds().y);
  map.map(part.getBlockIds().z, merged.getBlockIds().z);
  map.map(part.getThreadIds().x, merged.getThreadIds().x);
  map.map(part.getThreadIds().y, merged.getThreadIds().y);
  map.map(part.getThreadIds().z, merged.getThreadIds().z);
  if (!part.getGridSizeX().use_empty()) map.map(part.getGridSizeX(), cIndex(b, loc, blocks));
  map.map(part.getGridSizeY(), merged.getGridSizeY());
  map.map(part.getGridSizeZ(), merged.getGridSizeZ());
  if (!part.getBlockSizeX().use_empty()) map.map(part.getBlockSizeX(), cIndex(b, loc, partThreads));
  map.map(part.getBlockSizeY(), merged.getBlockSizeY());
  map.map(part.getBlockSizeZ(), merged.getBlockSizeZ());
  OpBuilder::InsertionGuard guard(b);
  if (partThreads < threads) {  // the merged blocks are wider: the extra threads wait
    Value inBlock = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, merged.getThreadIds().x,
                                          cIndex(b, loc, partThreads));
    auto branch = scf::IfOp::create(b, loc, inBlock, /*withElseRegion=*/false);
    b.setInsertionPoint(branch.thenBlock()->getTerminator());
  }
  for (Operation& op : part.getBody().front().without_terminator()) b.clone(op, map);
}

void mergeGroup(SmallVector<gpu::LaunchOp> group) {
  gpu::LaunchOp last = group.back();
  OpBuilder b(last);
  SmallVector<Location> locs;
  int64_t blocks = 0, threads = 0;
  for (gpu::LaunchOp launch : group) {
    locs.push_back(launch.getLoc());
    blocks += *getConstantIntValue(launch.getGridSizeX());
    threads = std::max(threads, *getConstantIntValue(launch.getBlockSizeX()));
  }
  Location loc = b.getFusedLoc(locs);
  Value one = cIndex(b, loc, 1);
  auto merged = gpu::LaunchOp::create(b, loc, cIndex(b, loc, blocks), one, one, cIndex(b, loc, threads), one, one);
  merged->setAttr(kKernelFamily, b.getStringAttr("elementwise"));
  b.setInsertionPointToStart(&merged.getBody().front());
  gpu::TerminatorOp::create(b, loc);
  b.setInsertionPointToStart(&merged.getBody().front());
  // Blocks [first, first + n) run group[i]: a chain of ifs on the block index.
  int64_t first = 0;
  for (size_t i = 0; i < group.size(); ++i) {
    int64_t n = *getConstantIntValue(group[i].getGridSizeX());
    if (i + 1 == group.size()) {
      clonePart(b, merged, group[i], first, threads);
      break;
    }
    Value mine = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, merged.getBlockIds().x,
                                       cIndex(b, loc, first + n));
    auto branch = scf::IfOp::create(b, loc, mine, /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(branch.thenBlock()->getTerminator());
      clonePart(b, merged, group[i], first, threads);
    }
    b.setInsertionPoint(branch.elseBlock()->getTerminator());
    first += n;
  }
  for (gpu::LaunchOp launch : group) launch.erase();
}

void mergeInBlock(Block& block) {
  SmallVector<gpu::LaunchOp> group;
  SmallVector<Accesses> accesses;
  auto flush = [&] {
    if (group.size() > 1) mergeGroup(group);
    group.clear();
    accesses.clear();
  };
  for (Operation& op : llvm::make_early_inc_range(block)) {
    if (auto launch = dyn_cast<gpu::LaunchOp>(op)) {
      std::optional<Accesses> mine = mergeable(launch) ? accessesOf(launch) : std::nullopt;
      if (!mine) {
        flush();
        continue;
      }
      if (!llvm::all_of(accesses, [&](const Accesses& other) { return independent(other, *mine); })) flush();
      group.push_back(launch);
      accesses.push_back(*mine);
      continue;
    }
    if (neutral(op)) continue;
    flush();
    for (Region& region : op.getRegions())
      for (Block& inner : region) mergeInBlock(inner);
  }
  flush();
}

}  // namespace

void mergeIndependentLaunches(ModuleOp module) {
  for (auto fn : module.getOps<func::FuncOp>())
    for (Block& block : fn.getBody()) mergeInBlock(block);
}

namespace {

struct MergeLaunchesPass : PassWrapper<MergeLaunchesPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(MergeLaunchesPass)
  StringRef getArgument() const final { return "linnet-cuda-merge-launches"; }
  StringRef getDescription() const final {
    return "The cuda target's merge of independent elementwise launches (targets/cuda/merge_launches.h)";
  }
  void runOnOperation() override { mergeIndependentLaunches(getOperation()); }
};

}  // namespace

void registerMergeLaunchesPass() { PassRegistration<MergeLaunchesPass>(); }

}  // namespace linnet::cuda
