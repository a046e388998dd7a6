#include "targets/cuda/library_products.h"

#include "ir/dialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "targets/cuda/product_buffers.h"

namespace linnet::cuda {

namespace {

using namespace mlir;

// The private declaration of linnet_cuda_gemm_<t> (f32, bf16, f16): x, w
// and c as unranked memrefs of t, then transpose_w.
func::FuncOp declareGemm(ModuleOp module, Type t) {
  std::string name = std::string(kLibraryGemm) + "_";
  llvm::raw_string_ostream(name) << t;
  auto stack = UnrankedMemRefType::get(t, 0);
  Builder b(module.getContext());
  return declareHostFunction(module, name, b.getFunctionType({stack, stack, stack, b.getI32Type()}, {}));
}

void lowerLibraryProduct(ModuleOp module, ir::MatmulOp op) {
  OpBuilder b(op);
  Location l = op.getLoc();
  auto out = cast<RankedTensorType>(op.getType());
  Type t = out.getElementType();
  ProductShape shape = shapeOf(op);
  auto [x, w] = stackOperands(b, l, op, shape);
  Value c = memref::AllocOp::create(b, l, MemRefType::get({shape.batch, shape.rows, shape.n}, t));
  auto stack = UnrankedMemRefType::get(t, 0);
  SmallVector<Value> args;
  for (Value v : {x, w, c}) args.push_back(memref::CastOp::create(b, l, stack, v));
  args.push_back(arith::ConstantIntOp::create(b, l, op.getTransposeB() ? 1 : 0, 32));
  func::CallOp::create(b, l, declareGemm(module, t), args);
  op.getResult().replaceAllUsesWith(resultTensor(b, l, c, shape.batched, out));
  op.erase();
}

}  // namespace

void lowerLibraryProducts(ModuleOp module, const transforms::SharedOptions& options) {
  SmallVector<ir::MatmulOp> products;
  module.walk([&](Operation* op) {
    if (transforms::targetKeepsLibraryProduct(op, options)) products.push_back(cast<ir::MatmulOp>(op));
  });
  for (ir::MatmulOp op : products) lowerLibraryProduct(module, op);
}

bool isLibraryCall(Operation* op) { return callsHostFunction(op, std::string(kLibraryGemm) + "_"); }

func::FuncOp declareHostFunction(ModuleOp module, const std::string& name, FunctionType type) {
  if (auto fn = module.lookupSymbol<func::FuncOp>(name)) return fn;
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  auto fn = func::FuncOp::create(b, module.getLoc(), name, type);
  fn.setPrivate();
  return fn;
}

bool callsHostFunction(Operation* op, StringRef prefix) {
  auto call = dyn_cast<func::CallOp>(op);
  if (!call) return false;
  auto fn = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(op, call.getCalleeAttr());
  return fn && fn.isExternal() && fn.getSymName().starts_with(prefix);
}

}  // namespace linnet::cuda
