#include "targets/cuda/map_to_gpu.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>

#include "llvm/Support/raw_ostream.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"
#include "transforms/pipeline.h"

namespace linnet::cuda {

namespace {

using namespace mlir;

bool onDevice(Operation* op) { return op->getParentOfType<gpu::LaunchOp>() || op->getParentOfType<scf::ParallelOp>(); }

// An op whose regions run on the host: it holds parallel loops, launches or
// calls somewhere inside.
bool holdsHostWork(Operation* op) {
  bool found = false;
  op->walk([&](Operation* inner) {
    if (inner != op && isa<scf::ParallelOp, gpu::LaunchOp, func::CallOp>(inner)) found = true;
  });
  return found;
}

bool touchesMemory(Operation* op) {
  bool found = false;
  op->walk([&](Operation* inner) {
    if (isa<memref::LoadOp, memref::StoreOp>(inner)) found = true;
  });
  return found;
}

Value index(OpBuilder& b, Location loc, int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }

// --- 1. serial work on device memory into one-iteration parallel loops ---

void wrapInParallel(Operation* op) {
  OpBuilder b(op);
  Location loc = op->getLoc();
  auto par = scf::ParallelOp::create(b, loc, ValueRange{index(b, loc, 0)}, ValueRange{index(b, loc, 1)},
                                     ValueRange{index(b, loc, 1)});
  op->moveBefore(par.getBody()->getTerminator());
}

// A serial loop nest that yields scalars (a reduction to one number): its
// results go through 0-d device buffers, which the consumers then read
// (and step 3 moves those reads into the consumers' kernels).
void wrapWithResults(Operation* op) {
  OpBuilder b(op);
  Location loc = op->getLoc();
  SmallVector<Value> slots;
  for (Value r : op->getResults()) slots.push_back(memref::AllocOp::create(b, loc, MemRefType::get({}, r.getType())));
  wrapInParallel(op);
  b.setInsertionPointAfter(op);
  for (auto [r, slot] : llvm::zip(op->getResults(), slots)) memref::StoreOp::create(b, loc, r, slot);
  b.setInsertionPointAfter(op->getParentOp());
  for (auto [r, slot] : llvm::zip(op->getResults(), slots)) {
    Value read = memref::LoadOp::create(b, loc, slot);
    r.replaceUsesWithIf(read, [&](OpOperand& use) { return !op->getParentOp()->isAncestor(use.getOwner()); });
  }
}

bool scalarResults(Operation* op) {
  return llvm::all_of(op->getResultTypes(), [](Type t) { return t.isIntOrIndexOrFloat(); });
}

void wrapSerialWork(Block& block) {
  for (Operation& op : llvm::make_early_inc_range(block)) {
    if (isa<scf::ParallelOp>(op)) continue;
    if (op.getNumRegions() == 0) {
      if (isa<memref::StoreOp>(op)) wrapInParallel(&op);
      continue;
    }
    if (holdsHostWork(&op)) {
      for (Region& r : op.getRegions())
        for (Block& inner : r) wrapSerialWork(inner);
    } else if (touchesMemory(&op)) {
      // A serial loop nest on device memory.
      if (op.getNumResults() == 0) wrapInParallel(&op);
      else if (scalarResults(&op)) wrapWithResults(&op);
    }
  }
}

// --- 2. outermost parallel loops as launches over a 1-D grid ---

// Marks a launch of one iteration (one thread works), for step 3.
constexpr const char* kOneIteration = "linnet.one_iteration";

// What an index computation can be, from its constants: [lo, hi], either
// end unknown. The grid must not depend on device data (the host cannot
// read it, and a graph replays the same grid), so a trip count computed
// from a loaded position (a cache write's clamped length) launches its
// upper bound and the kernel checks the real count.
struct Range {
  std::optional<int64_t> lo, hi;
};

// Bounds of the form `v <= base + c` (upper) or `v >= base + c` (lower),
// compared for the same base on the two sides of a difference: a cache
// write's row count min(pos + 1, S) - max(pos, 0) is at most 1 whatever pos is.
using Affine = std::pair<Value, int64_t>;

void affineBounds(Value v, bool upper, SmallVectorImpl<Affine>& into, int64_t shift = 0, int depth = 0) {
  into.push_back({v, shift});
  Operation* def = v.getDefiningOp();
  if (!def || depth > 16) return;
  if (isa<arith::AddIOp>(def)) {
    for (unsigned i = 0; i < 2; ++i)
      if (auto c = getConstantIntValue(def->getOperand(1 - i)))
        affineBounds(def->getOperand(i), upper, into, shift + *c, depth + 1);
  } else if (upper ? isa<arith::MinSIOp>(def) : isa<arith::MaxSIOp>(def)) {
    for (Value o : def->getOperands()) affineBounds(o, upper, into, shift, depth + 1);
  }
}

std::optional<int64_t> differenceBound(Value a, Value b) {
  SmallVector<Affine> uppers, lowers;
  affineBounds(a, /*upper=*/true, uppers);
  affineBounds(b, /*upper=*/false, lowers);
  std::optional<int64_t> best;
  for (auto [ua, ca] : uppers)
    for (auto [lb, cb] : lowers)
      if (ua == lb && (!best || ca - cb < *best)) best = ca - cb;
  return best;
}

Range rangeOf(Value v, int depth = 0) {
  if (auto c = getConstantIntValue(v)) return {*c, *c};
  Operation* def = v.getDefiningOp();
  if (!def || depth > 32 || def->getNumOperands() == 0) return {};
  auto operand = [&](unsigned i) { return rangeOf(def->getOperand(i), depth + 1); };
  auto both = [](std::optional<int64_t> a, std::optional<int64_t> b, auto f) -> std::optional<int64_t> {
    if (a && b) return f(*a, *b);
    return std::nullopt;
  };
  auto add = [](int64_t a, int64_t b) { return a + b; };
  auto sub = [](int64_t a, int64_t b) { return a - b; };
  auto lesser = [](int64_t a, int64_t b) { return std::min(a, b); };
  auto greater = [](int64_t a, int64_t b) { return std::max(a, b); };
  if (isa<arith::IndexCastOp, arith::ExtSIOp>(def)) return operand(0);
  if (isa<arith::SelectOp>(def)) {
    Range a = operand(1), b = operand(2);
    return {both(a.lo, b.lo, lesser), both(a.hi, b.hi, greater)};
  }
  if (isa<arith::AddIOp>(def)) {
    Range a = operand(0), b = operand(1);
    return {both(a.lo, b.lo, add), both(a.hi, b.hi, add)};
  }
  if (isa<arith::SubIOp>(def)) {
    Range a = operand(0), b = operand(1);
    std::optional<int64_t> hi = both(a.hi, b.lo, sub), symbolic = differenceBound(def->getOperand(0), def->getOperand(1));
    if (symbolic && (!hi || *symbolic < *hi)) hi = symbolic;
    return {both(a.lo, b.hi, sub), hi};
  }
  if (isa<arith::MinSIOp>(def)) {
    Range a = operand(0), b = operand(1);
    std::optional<int64_t> hi = a.hi && b.hi ? std::min(*a.hi, *b.hi) : a.hi ? a.hi : b.hi;
    return {both(a.lo, b.lo, lesser), hi};
  }
  if (isa<arith::MaxSIOp>(def)) {
    Range a = operand(0), b = operand(1);
    std::optional<int64_t> lo = a.lo && b.lo ? std::max(*a.lo, *b.lo) : a.lo ? a.lo : b.lo;
    return {lo, both(a.hi, b.hi, greater)};
  }
  return {};
}

void toLaunch(scf::ParallelOp par) {
  OpBuilder b(par);
  Location loc = par.getLoc();
  size_t n = par.getNumLoops();
  // Per loop: its trip count, and the static count the grid covers.
  SmallVector<Value> trips;
  SmallVector<int64_t> gridTrips;
  int64_t total = 1;
  for (size_t k = 0; k < n; ++k) {
    Value span = b.createOrFold<arith::SubIOp>(loc, par.getUpperBound()[k], par.getLowerBound()[k]);
    Value trip = getConstantIntValue(par.getStep()[k]) == 1
                     ? span
                     : b.createOrFold<arith::CeilDivUIOp>(loc, span, par.getStep()[k]);
    std::optional<int64_t> bound = getConstantIntValue(trip);
    if (!bound) bound = rangeOf(trip).hi;
    if (!bound) {
      par.emitError("cuda: a parallel loop whose trip count has no static bound");
      return;
    }
    trips.push_back(trip);
    gridTrips.push_back(std::max<int64_t>(0, *bound));
    total *= gridTrips.back();
  }
  int64_t threads = std::min<int64_t>(kThreadsPerBlock, std::max<int64_t>(32, (total + 31) / 32 * 32));
  int64_t blocks = std::max<int64_t>(1, (total + threads - 1) / threads);
  Value one = index(b, loc, 1);
  auto launch = gpu::LaunchOp::create(b, loc, index(b, loc, blocks), one, one, index(b, loc, threads), one, one);
  if (total == 1) launch->setAttr(kOneIteration, b.getUnitAttr());
  Attribute family = par->getAttr(kKernelFamily);
  if (!family) family = par.getBody()->getTerminator()->getAttr(kKernelFamily);
  launch->setAttr(kKernelFamily, family ? family : b.getStringAttr("elementwise"));
  Block& body = launch.getBody().front();
  b.setInsertionPointToStart(&body);
  Value lin = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, launch.getBlockIds().x, index(b, loc, threads)), launch.getThreadIds().x);
  // Row-major: the last loop varies fastest, so neighbouring threads take
  // neighbouring elements of the innermost (contiguous) axis.
  Value inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, lin, index(b, loc, total));
  SmallVector<Value> positions(n);
  Value rest = lin;
  for (size_t k = n; k-- > 0;) {
    Value grid = index(b, loc, gridTrips[k]);
    positions[k] = k == 0 ? rest : arith::RemUIOp::create(b, loc, rest, grid).getResult();
    if (k > 0) rest = arith::DivUIOp::create(b, loc, rest, grid);
    if (!getConstantIntValue(trips[k]))  // the real count, read on the device
      inRange = arith::AndIOp::create(
          b, loc, inRange, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, positions[k], trips[k]));
  }
  auto guard = scf::IfOp::create(b, loc, inRange, /*withElseRegion=*/false);
  gpu::TerminatorOp::create(b, loc);
  b.setInsertionPoint(guard.thenBlock()->getTerminator());
  IRMapping map;
  for (size_t k = 0; k < n; ++k)
    map.map(par.getInductionVars()[k],
            arith::AddIOp::create(b, loc, par.getLowerBound()[k],
                                  arith::MulIOp::create(b, loc, positions[k], par.getStep()[k])));
  for (Operation& op : par.getBody()->without_terminator()) b.clone(op, map);
  par.erase();
}

// --- 3. recompute, inside each kernel, what the host read from device memory ---

// Ops a kernel can recompute: memory-effect free and region-free, or loads.
bool recomputable(Operation* op) {
  return op && op->getNumRegions() == 0 && (isa<memref::LoadOp>(op) || isMemoryEffectFree(op));
}

// `op`, or its ancestor in `block`.
Operation* ancestorIn(Block* block, Operation* op) {
  while (op && op->getBlock() != block) op = op->getParentOp();
  return op;
}

class Sinker {
 public:
  explicit Sinker(func::FuncOp fn) {
    // Who may write each buffer: a launch that stores into a view of it, or
    // a call given a view of it.
    fn.walk([&](Operation* op) {
      if (auto launch = dyn_cast<gpu::LaunchOp>(op)) {
        launch.walk([&](memref::StoreOp s) { writers_[bufferRoot(s.getMemRef())].push_back(launch); });
      } else if (auto call = dyn_cast<func::CallOp>(op)) {
        for (Value a : call.getOperands())
          if (isa<BaseMemRefType>(a.getType())) writers_[bufferRoot(a)].push_back(call);
      }
    });
  }

  void sinkInto(gpu::LaunchOp launch) {
    llvm::SetVector<Value> above;
    getUsedValuesDefinedAbove(launch.getBody(), above);
    OpBuilder b(&launch.getBody().front(), launch.getBody().front().begin());
    IRMapping map;
    for (Value v : above) {
      if (!readsDevice(v) || !safeToSink(v, launch)) continue;
      Value inside = clone(v, b, map);
      v.replaceUsesWithIf(inside, [&](OpOperand& use) { return launch->isProperAncestor(use.getOwner()); });
    }
  }

 private:
  // True when `v` is computed on the host from a load of device memory.
  bool readsDevice(Value v) {
    Operation* def = v.getDefiningOp();
    if (!recomputable(def)) return false;
    if (isa<memref::LoadOp>(def)) return true;
    for (Value o : def->getOperands())
      if (readsDevice(o)) return true;
    return false;
  }

  // A load may move to the launch only if nothing can write its buffer
  // between the two: every writer runs before the load.
  bool safeToSink(Value v, gpu::LaunchOp launch) {
    Operation* def = v.getDefiningOp();
    if (!recomputable(def)) return true;
    if (auto load = dyn_cast<memref::LoadOp>(def)) {
      for (Operation* w : writers_[bufferRoot(load.getMemRef())]) {
        // A kernel may read what it writes only when one thread does both.
        if (w == launch.getOperation()) {
          if (launch->hasAttr(kOneIteration)) continue;
          return false;
        }
        // A writer outside the load's block cannot run between the load
        // and the launch (which the load's value dominates); one in it
        // must not sit between them.
        Operation* a = ancestorIn(load->getBlock(), w);
        if (!a) continue;
        Operation* x = ancestorIn(load->getBlock(), launch);
        if (a == x || (load->isBeforeInBlock(a) && a->isBeforeInBlock(x))) return false;
      }
    }
    for (Value o : def->getOperands())
      if (!safeToSink(o, launch)) return false;
    return true;
  }

  Value clone(Value v, OpBuilder& b, IRMapping& map) {
    if (Value known = map.lookupOrNull(v)) return known;
    Operation* def = v.getDefiningOp();
    if (!recomputable(def) || !readsDevice(v)) return v;  // a kernel argument
    for (Value o : def->getOperands()) clone(o, b, map);
    b.clone(*def, map);
    return map.lookup(v);
  }

  llvm::DenseMap<Value, SmallVector<Operation*>> writers_;
};

// --- 4. host allocations in device memory ---

// gpu-to-llvm lowers only the async forms: each is its own little chain
// (a token, the op, a wait), which becomes mgpuMemAlloc/mgpuMemFree on the
// one stream (the launch shim's stream functions do nothing).
void allocateOnDevice(func::FuncOp fn) {
  auto tokenType = gpu::AsyncTokenType::get(fn.getContext());
  fn.walk([&](Operation* op) {
    if (onDevice(op)) return;
    OpBuilder b(op);
    Location loc = op->getLoc();
    if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
      Value start = gpu::WaitOp::create(b, loc, tokenType, ValueRange{}).getAsyncToken();
      auto g = gpu::AllocOp::create(b, loc, alloc.getType(), tokenType, ValueRange{start}, alloc.getDynamicSizes(),
                                    alloc.getSymbolOperands(), /*hostShared=*/false);
      gpu::WaitOp::create(b, loc, Type(), ValueRange{g.getAsyncToken()});
      alloc.replaceAllUsesWith(g.getMemref());
      alloc.erase();
    } else if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
      releaseOnDevice(b, loc, dealloc.getMemref());
      dealloc.erase();
    }
  });
}

}  // namespace

Value bufferRoot(Value v) {
  while (Operation* def = v.getDefiningOp()) {
    if (auto view = dyn_cast<ViewLikeOpInterface>(def)) v = view.getViewSource();
    else if (auto cast = dyn_cast<memref::CastOp>(def)) v = cast.getSource();
    else break;
  }
  return v;
}

void releaseOnDevice(OpBuilder& b, Location loc, Value memref) {
  auto tokenType = gpu::AsyncTokenType::get(b.getContext());
  Value start = gpu::WaitOp::create(b, loc, tokenType, ValueRange{}).getAsyncToken();
  auto release = gpu::DeallocOp::create(b, loc, tokenType, ValueRange{start}, memref);
  gpu::WaitOp::create(b, loc, Type(), ValueRange{release.getAsyncToken()});
}

void copiesToLinalg(ModuleOp module) {
  module.walk([](memref::CopyOp copy) {
    // A copy of a buffer into itself (bufferization's write-back of a state
    // updated in place) would read and write the whole buffer for nothing.
    if (copy.getSource() != copy.getTarget()) {
      OpBuilder b(copy);
      linalg::CopyOp::create(b, copy.getLoc(), copy.getSource(), copy.getTarget());
    }
    copy.erase();
  });
}

void foldConstantLoads(ModuleOp module) {
  SymbolTable symbols(module);
  module.walk([&](memref::LoadOp load) {
    auto get = load.getMemRef().getDefiningOp<memref::GetGlobalOp>();
    if (!get) return;
    auto global = symbols.lookup<memref::GlobalOp>(get.getName());
    auto init = global ? dyn_cast_or_null<DenseElementsAttr>(global.getInitialValueAttr()) : nullptr;
    if (!global || !global.getConstant() || !init || !init.isSplat()) return;
    OpBuilder b(load);
    Value c = arith::ConstantOp::create(b, load.getLoc(), init.getSplatValue<TypedAttr>());
    load.replaceAllUsesWith(c);
    load.erase();
  });
  module.walk([](memref::GetGlobalOp get) {
    if (get->use_empty()) get.erase();
  });
}

void mapToGpu(ModuleOp module) {
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (fn.isExternal()) continue;
    for (Block& block : fn.getBody()) wrapSerialWork(block);
    SmallVector<scf::ParallelOp> outermost;
    fn.walk([&](scf::ParallelOp par) {
      if (!par->getParentOfType<scf::ParallelOp>()) outermost.push_back(par);
    });
    for (scf::ParallelOp par : outermost) toLaunch(par);
    Sinker sinker(fn);
    fn.walk([&](gpu::LaunchOp launch) {
      sinker.sinkInto(launch);
      launch->removeAttr(kOneIteration);
    });
    allocateOnDevice(fn);
  }
  // What the kernels now recompute is dead on the host.
  for (auto fn : module.getOps<func::FuncOp>()) {
    bool changed = true;
    while (changed) {
      changed = false;
      fn.walk<WalkOrder::PostOrder>([&](Operation* op) {
        if (onDevice(op) || !op->use_empty() || op->getNumResults() == 0 || !recomputable(op)) return;
        op->erase();
        changed = true;
      });
    }
  }
}

void sinkConstants(ModuleOp module) {
  module.walk([](gpu::LaunchOp launch) {
    llvm::SetVector<Value> above;
    getUsedValuesDefinedAbove(launch.getBody(), above);
    OpBuilder b(&launch.getBody().front(), launch.getBody().front().begin());
    for (Value v : above) {
      Operation* def = v.getDefiningOp();
      if (!def || !def->hasTrait<OpTrait::ConstantLike>()) continue;
      Value inside = b.clone(*def)->getResult(0);
      v.replaceUsesWithIf(inside, [&](OpOperand& use) { return launch->isProperAncestor(use.getOwner()); });
    }
  });
}

void verifyHostCode(ModuleOp module) {
  std::string problems;
  module.walk([&](Operation* op) {
    if (op->getParentOfType<gpu::GPUModuleOp>() || op->getParentOfType<gpu::LaunchOp>()) return;
    if (!op->getParentOfType<func::FuncOp>()) return;
    const char* what = nullptr;
    if (isa<memref::LoadOp>(op)) what = "reads device memory on the host";
    else if (isa<memref::StoreOp, memref::CopyOp>(op)) what = "writes device memory on the host";
    else if (isa<memref::GetGlobalOp>(op)) what = "uses a host global as a device buffer";
    else if (isa<memref::AllocOp, memref::AllocaOp>(op)) what = "allocates host memory for a device buffer";
    else if (isa<scf::ParallelOp>(op) || isa<linalg::LinalgDialect>(op->getDialect())) what = "is not mapped to the GPU";
    if (!what) return;
    std::string loc;
    llvm::raw_string_ostream os(loc);
    op->getLoc().print(os);
    problems += fmt::format("  {}: `{}` {}\n", loc, op->getName().getStringRef().str(), what);
  });
  if (!problems.empty() && std::getenv("LINNET_CUDA_DUMP")) module.print(llvm::errs());
  if (!problems.empty())
    throw transforms::PipelineError(
        "the cuda target cannot build this program: its host code would touch device memory (a loop bound, a "
        "branch or a size that depends on a tensor's values):\n" + problems);
}

}  // namespace linnet::cuda
