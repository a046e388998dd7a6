#include "targets/cpu/kernel_calls.h"

#include "common/storage.h"
#include "ir/dialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

namespace linnet::cpu {

namespace {

using namespace mlir;

class KernelCalls {
 public:
  explicit KernelCalls(ModuleOp module) : module_(module), b_(module.getContext()) {}

  void lower(ir::PackedMatmulOp op) {
    b_.setInsertionPoint(op);
    Location loc = op.getLoc();
    auto x = op.getX().getType();
    int64_t k = x.getShape().back(), n = op.getW().getType().getShape()[0];
    Value x2 = matrix(op.getX(), k);
    int64_t m = cast<RankedTensorType>(x2.getType()).getShape()[0];
    auto outType = MemRefType::get({m, n}, b_.getF32Type());
    Value out = memref::AllocOp::create(b_, loc, outType, b_.getI64IntegerAttr(64));
    Storage storage = *storageNamed(op.getFormat().str());
    if (storage == Storage::F32) {
      call(loc, "linnet_kernel_matmul_f32", {buffer(x2), buffer(op.getW()), dynamic(out)}, {});
    } else {
      call(loc, "linnet_kernel_matmul_packed", {buffer(x2), buffer(op.getW()), dynamic(out)},
           {static_cast<int64_t>(storage), k});
    }
    replace(op, out, outType);
  }

  void lower(ir::PackedGatherOp op) {
    b_.setInsertionPoint(op);
    Location loc = op.getLoc();
    auto result = op.getType();
    int64_t k = result.getShape().back(), rows = 1;
    for (int64_t d : op.getIds().getType().getShape()) rows *= d;
    Value ids = flatIds(op.getIds(), rows);
    auto outType = MemRefType::get({rows, k}, b_.getF32Type());
    Value out = memref::AllocOp::create(b_, loc, outType, b_.getI64IntegerAttr(64));
    call(loc, "linnet_kernel_gather_rows", {buffer(op.getW()), buffer(ids), dynamic(out)},
         {static_cast<int64_t>(*storageNamed(op.getFormat().str())), k});
    replace(op, out, outType);
  }

  void lower(ir::UnpackOp op) {
    b_.setInsertionPoint(op);
    Location loc = op.getLoc();
    auto w = op.getW().getType();
    int64_t k = op.getType().getShape().back(), rowBytes = w.getShape().back();
    Value w2 = matrix(op.getW(), rowBytes);
    int64_t rows = cast<RankedTensorType>(w2.getType()).getShape()[0];
    auto outType = MemRefType::get({rows, k}, b_.getF32Type());
    Value out = memref::AllocOp::create(b_, loc, outType, b_.getI64IntegerAttr(64));
    call(loc, "linnet_kernel_unpack", {buffer(w2), dynamic(out)},
         {static_cast<int64_t>(*storageNamed(op.getFormat().str())), k});
    replace(op, out, outType);
  }

 private:
  // `t` [.., C] as a matrix [rows, C]: collapsed, or [1, C] for a vector.
  Value matrix(Value t, int64_t columns) {
    auto type = cast<RankedTensorType>(t.getType());
    int64_t rows = 1;
    for (int64_t a = 0; a + 1 < type.getRank(); ++a) rows *= type.getShape()[a];
    auto to = RankedTensorType::get({rows, columns}, type.getElementType());
    if (type.getRank() == 2) return t;
    if (type.getRank() == 1)
      return tensor::ExpandShapeOp::create(b_, t.getLoc(), to, t, ArrayRef<ReassociationIndices>{{0, 1}});
    ReassociationIndices lead;
    for (int64_t a = 0; a + 1 < type.getRank(); ++a) lead.push_back(a);
    return tensor::CollapseShapeOp::create(b_, t.getLoc(), to, t,
                                           ArrayRef<ReassociationIndices>{lead, {type.getRank() - 1}});
  }

  // The ids as i64 [rows], the kernel's index type.
  Value flatIds(Value ids, int64_t rows) {
    auto type = cast<RankedTensorType>(ids.getType());
    Location loc = ids.getLoc();
    auto flat = RankedTensorType::get({rows}, type.getElementType());
    if (type.getRank() == 0) {
      ids = tensor::ExpandShapeOp::create(b_, loc, flat, ids, ArrayRef<ReassociationIndices>{});
    } else if (type.getRank() > 1) {
      ReassociationIndices all;
      for (int64_t a = 0; a < type.getRank(); ++a) all.push_back(a);
      ids = tensor::CollapseShapeOp::create(b_, loc, flat, ids, ArrayRef<ReassociationIndices>{all});
    }
    if (type.getElementType().isInteger(64)) return ids;
    auto i64 = b_.getI64Type();
    Value init = tensor::EmptyOp::create(b_, loc, ArrayRef<int64_t>{rows}, i64);
    AffineMap id = b_.getMultiDimIdentityMap(1);
    return linalg::GenericOp::create(
               b_, loc, TypeRange{RankedTensorType::get({rows}, i64)}, ValueRange{ids}, ValueRange{init},
               ArrayRef<AffineMap>{id, id}, ArrayRef<utils::IteratorType>{utils::IteratorType::parallel},
               [&](OpBuilder& nb, Location l, ValueRange args) {
                 linalg::YieldOp::create(nb, l, ValueRange{arith::ExtSIOp::create(nb, l, i64, args[0])});
               })
        .getResult(0);
  }

  // The memref type the kernels take: any sizes, strides and offset.
  static MemRefType dynamicType(ShapedType t) {
    int64_t rank = t.getRank();
    SmallVector<int64_t> sizes(rank, ShapedType::kDynamic), strides(rank, ShapedType::kDynamic);
    return MemRefType::get(sizes, t.getElementType(),
                           StridedLayoutAttr::get(t.getContext(), ShapedType::kDynamic, strides));
  }
  // A tensor operand's future buffer, read only.
  Value buffer(Value t) {
    auto type = cast<RankedTensorType>(t.getType());
    SmallVector<int64_t> strides(type.getRank(), ShapedType::kDynamic);
    auto memref = MemRefType::get(type.getShape(), type.getElementType(),
                                  StridedLayoutAttr::get(type.getContext(), ShapedType::kDynamic, strides));
    Value m = bufferization::ToBufferOp::create(b_, t.getLoc(), memref, t, /*read_only=*/true);
    return dynamic(m);
  }
  Value dynamic(Value m) {
    return memref::CastOp::create(b_, m.getLoc(), dynamicType(cast<MemRefType>(m.getType())), m);
  }

  void call(Location loc, StringRef name, SmallVector<Value> memrefs, ArrayRef<int64_t> ints) {
    for (int64_t v : ints) memrefs.push_back(arith::ConstantIntOp::create(b_, loc, v, 64));
    func::FuncOp fn = declaration(name, ValueRange(memrefs).getTypes());
    func::CallOp::create(b_, loc, fn, memrefs);
  }

  // `func.func private @name(...)` with MLIR's C interface, declared once.
  func::FuncOp declaration(StringRef name, TypeRange inputs) {
    if (auto fn = module_.lookupSymbol<func::FuncOp>(name)) return fn;
    OpBuilder::InsertionGuard guard(b_);
    b_.setInsertionPointToStart(module_.getBody());
    auto fn = func::FuncOp::create(b_, module_.getLoc(), name, b_.getFunctionType(inputs, {}));
    fn.setPrivate();
    fn->setAttr("llvm.emit_c_interface", b_.getUnitAttr());
    return fn;
  }

  // The kernel's output buffer as the op's result tensor.
  void replace(Operation* op, Value out, MemRefType outType) {
    Location loc = op->getLoc();
    auto tensorType = RankedTensorType::get(outType.getShape(), outType.getElementType());
    Value t = bufferization::ToTensorOp::create(b_, loc, tensorType, out, /*restrict=*/true, /*writable=*/true);
    auto result = cast<RankedTensorType>(op->getResult(0).getType());
    if (result != tensorType) {
      ReassociationIndices lead, last{result.getRank() - 1};
      for (int64_t a = 0; a + 1 < result.getRank(); ++a) lead.push_back(a);
      t = result.getRank() == 1
              ? Value(tensor::CollapseShapeOp::create(b_, loc, result, t, ArrayRef<ReassociationIndices>{{0, 1}}))
              : Value(tensor::ExpandShapeOp::create(b_, loc, result, t, ArrayRef<ReassociationIndices>{lead, last}));
    }
    op->getResult(0).replaceAllUsesWith(t);
    op->erase();
  }

  ModuleOp module_;
  OpBuilder b_;
};

}  // namespace

void lowerToKernelCalls(ModuleOp module) {
  KernelCalls calls(module);
  SmallVector<Operation*> ops;
  module.walk([&](Operation* op) {
    if (isa<ir::PackedMatmulOp, ir::PackedGatherOp, ir::UnpackOp>(op)) ops.push_back(op);
  });
  for (Operation* op : ops) {
    if (auto m = dyn_cast<ir::PackedMatmulOp>(op)) calls.lower(m);
    else if (auto g = dyn_cast<ir::PackedGatherOp>(op)) calls.lower(g);
    else calls.lower(cast<ir::UnpackOp>(op));
  }
}

}  // namespace linnet::cpu
