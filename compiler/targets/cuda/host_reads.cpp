#include "targets/cuda/host_reads.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
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

}  // namespace linnet::cuda
