#include "targets/cuda/host_reads.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "targets/cuda/hoist_invariants.h"
#include "targets/cuda/library_products.h"
#include "targets/cuda/product_buffers.h"

namespace linnet::cuda {

namespace {

using namespace mlir;

std::string readName(Type t) {
  std::string name = std::string(kHostRead) + "_";
  llvm::raw_string_ostream(name) << t;
  return name;
}

// The private declaration of linnet_cuda_read_<t>: x as an unranked memref
// of t, returning its value.
func::FuncOp declareRead(ModuleOp module, Type t) {
  Builder b(module.getContext());
  return declareHostFunction(module, readName(t), b.getFunctionType({UnrankedMemRefType::get(t, 0)}, {t}));
}

bool readable(Type t) { return t.isInteger(64) || t.isInteger(32) || t.isF32(); }

}  // namespace

void readScalarsOnHost(ModuleOp module) {
  // The extracts a switch's case is computed from; any other extract
  // outside a kernel (a cache write's position) goes into the kernels that
  // use it when the loops become launches, and a branch or loop of the
  // program's own on a device value is refused by verifyHostCode.
  SetVector<Operation*> slice;
  module.walk([&](scf::IndexSwitchOp sw) {
    if (sw->getParentOfType<linalg::LinalgOp>()) return;
    BackwardSliceOptions options;
    options.inclusive = true;
    (void)getBackwardSlice(sw.getArg(), &slice, options);
  });
  SmallVector<tensor::ExtractOp> reads;
  for (Operation* op : slice)
    if (auto extract = dyn_cast<tensor::ExtractOp>(op))
      if (extract.getTensor().getType().getRank() == 0 && readable(extract.getType())) reads.push_back(extract);
  for (tensor::ExtractOp extract : reads) {
    Type t = extract.getType();
    OpBuilder b(extract);
    Location l = extract.getLoc();
    Value buffer = memref::CastOp::create(b, l, UnrankedMemRefType::get(t, 0), readBuffer(b, l, extract.getTensor()));
    auto call = func::CallOp::create(b, l, declareRead(module, t), ValueRange{buffer});
    extract.replaceAllUsesWith(call.getResult(0));
    extract.erase();
  }
}

bool isHostRead(Operation* op) { return callsHostFunction(op, std::string(kHostRead) + "_"); }

namespace {

// The ops of `f`'s body that `v` is computed from, in order, when they are
// all at its top level, compute from nothing but its arguments and have no
// effect but a host read; else empty.
SmallVector<Operation*> caseSlice(func::FuncOp f, Value v) {
  SetVector<Operation*> slice;
  BackwardSliceOptions options;
  options.inclusive = true;  // v's own definition too
  options.omitUsesFromAbove = false;  // a generic's body may read a constant of the function
  options.omitBlockArguments = true;  // the function's; any other fails the checks below
  (void)getBackwardSlice(v, &slice, options);
  if (slice.empty()) return {};
  Block* body = &f.front();
  auto fromArgumentsOrSlice = [&](Value used) {
    if (auto arg = dyn_cast<BlockArgument>(used)) return arg.getOwner() == body;
    return slice.contains(used.getDefiningOp());
  };
  for (Operation* op : slice) {
    if (op->getBlock() != body) return {};
    if (!isMemoryEffectFree(op) && !isHostRead(op) && !isa<bufferization::ToBufferOp, memref::CastOp>(op)) return {};
    if (!llvm::all_of(op->getOperands(), fromArgumentsOrSlice)) return {};
    SetVector<Value> above;
    for (Region& r : op->getRegions()) getUsedValuesDefinedAbove(r, above);
    if (!llvm::all_of(above, fromArgumentsOrSlice)) return {};
  }
  return SmallVector<Operation*>(slice.begin(), slice.end());
}

void hoistCase(ModuleOp module, scf::IndexSwitchOp sw) {
  auto f = dyn_cast<func::FuncOp>(sw->getParentOp());
  if (!f || !f.isPrivate()) return;
  std::optional<SymbolTable::UseRange> uses = SymbolTable::getSymbolUses(f, module);
  if (!uses || !llvm::hasSingleElement(*uses)) return;
  auto call = dyn_cast<func::CallOp>(uses->begin()->getUser());
  if (!call) return;
  SmallVector<Operation*> slice = caseSlice(f, sw.getArg());
  if (slice.empty()) return;

  // The case at the call, from the call's operands.
  OpBuilder b(call);
  IRMapping map;
  for (auto [arg, operand] : llvm::zip_equal(f.getArguments(), call.getOperands())) map.map(arg, operand);
  SmallVector<Operation*> cloned;
  for (Operation* op : slice) cloned.push_back(b.clone(*op, map));
  Value computed = map.lookup(sw.getArg());
  // f takes it as its last argument.
  unsigned index = f.getNumArguments();
  if (failed(f.insertArgument(index, computed.getType(), {}, sw.getLoc()))) return;
  sw.getArgMutable().assign(f.getArgument(index));
  passToCall(call, computed, slice, cloned);
}

}  // namespace

void hoistSwitchCases(ModuleOp module) {
  SmallVector<scf::IndexSwitchOp> switches;
  module.walk([&](scf::IndexSwitchOp sw) {
    if (isa<func::FuncOp>(sw->getParentOp())) switches.push_back(sw);
  });
  for (scf::IndexSwitchOp sw : switches) hoistCase(module, sw);
}

}  // namespace linnet::cuda
