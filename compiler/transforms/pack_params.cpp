// linnet-pack-params: params read in their storage format.
//
// The driver marks an entry's param arguments with `linnet.storage`
// (driver/param_storage.h). A param in a block format (q4_1, bf16, ...)
// arrives as its bytes: the argument's f32 [.., N, K] becomes i8
// [.., N, RowBytes], and the pass follows the value through the slices that
// pick a layer and the calls that pass it to a layer's function, then
// rewrites each read:
//   matmul(x, w) with transpose_b   -> linnet.packed_matmul (a kernel reads the blocks)
//   gather(w, [ids, iota])          -> linnet.packed_gather (rows of an embedding)
//   anything else                   -> linnet.unpack, then the read as before
// so every program stays correct, and the common reads never form the f32
// weight. An f32 param keeps its type; only its weight products become
// packed_matmul "f32", so that a target can give them its own kernel.
#include "common/storage.h"
#include "ir/dialect.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/Pass.h"
#include "transforms/passes.h"

namespace linnet::transforms {

namespace {

using namespace mlir;

// A value that holds a param: its logical type (f32 [.., N, K]) and format.
struct Packed {
  Storage storage;
  RankedTensorType logical;
  bool bytes() const { return storage != Storage::F32; }
};

class Packer {
 public:
  Packer(ModuleOp module) : module_(module), b_(module.getContext()) {}

  void packArgument(func::FuncOp fn, unsigned index, Storage storage) {
    BlockArgument arg = fn.getArgument(index);
    auto memref = dyn_cast<MemRefType>(arg.getType());
    if (!memref || !memref.getElementType().isF32() || memref.getRank() < 2) return;
    Packed p{storage, RankedTensorType::get(memref.getShape(), memref.getElementType())};
    if (p.bytes()) {
      arg.setType(MemRefType::get(packedShape(p, memref.getShape()), b_.getI8Type()));
      updateFunctionType(fn);
    }
    for (Operation* user : llvm::to_vector(arg.getUsers())) {
      auto toTensor = dyn_cast<bufferization::ToTensorOp>(user);
      if (!toTensor) continue;
      if (p.bytes()) toTensor->getResult(0).setType(packedType(p, p.logical));
      follow(toTensor.getResult(), p);
    }
  }

 private:
  SmallVector<int64_t> packedShape(const Packed& p, ArrayRef<int64_t> logical) const {
    SmallVector<int64_t> shape(logical);
    shape.back() = *storageRowBytes(p.storage, logical.back());
    return shape;
  }
  RankedTensorType packedType(const Packed& p, RankedTensorType logical) {
    if (!p.bytes()) return logical;
    return RankedTensorType::get(packedShape(p, logical.getShape()), b_.getI8Type());
  }
  static void updateFunctionType(func::FuncOp fn) {
    fn.setType(FunctionType::get(fn.getContext(), fn.getBody().getArgumentTypes(), fn.getResultTypes()));
  }
  StringAttr format(const Packed& p) { return b_.getStringAttr(std::string(name(p.storage))); }

  // Every read of `v` (a value of p's packed type, holding p.logical).
  void follow(Value v, const Packed& p) {
    for (OpOperand& use : llvm::make_early_inc_range(v.getUses())) {
      Operation* user = use.getOwner();
      if (auto slice = dyn_cast<tensor::ExtractSliceOp>(user)) {
        if (followSlice(slice, p)) continue;
      } else if (auto call = dyn_cast<func::CallOp>(user)) {
        if (followCall(call, use.getOperandNumber(), p)) continue;
      } else if (auto matmul = dyn_cast<ir::MatmulOp>(user)) {
        if (rewriteMatmul(matmul, use.getOperandNumber(), p)) continue;
      } else if (auto gather = dyn_cast<ir::GatherOp>(user)) {
        if (use.getOperandNumber() == 0 && rewriteGather(gather, p)) continue;
      }
      if (!p.bytes()) continue;  // plain f32: any other read reads it as it is
      b_.setInsertionPoint(user);
      use.set(ir::UnpackOp::create(b_, user->getLoc(), p.logical, v, format(p)));
    }
  }

  // A slice that keeps the rows whole (a layer of a stacked param) slices
  // the bytes the same way.
  bool followSlice(tensor::ExtractSliceOp slice, const Packed& p) {
    int64_t last = p.logical.getRank() - 1;
    auto result = slice.getResultType();
    if (slice.isDynamicSize(last) || slice.getStaticSizes()[last] != p.logical.getShape()[last] ||
        slice.isDynamicOffset(last) || slice.getStaticOffsets()[last] != 0 || slice.isDynamicStride(last) ||
        slice.getStaticStrides()[last] != 1 || result.getRank() == 0 ||
        result.getShape().back() != p.logical.getShape()[last])
      return false;
    Packed sliced{p.storage, result};
    if (p.bytes()) {
      SmallVector<int64_t> sizes(slice.getStaticSizes());
      sizes[last] = packedShape(p, p.logical.getShape())[last];
      slice.setStaticSizes(sizes);
      slice.getResult().setType(packedType(p, result));
    }
    follow(slice.getResult(), sliced);
    return true;
  }

  // A call to a function with one caller: its parameter holds the param.
  bool followCall(func::CallOp call, unsigned operand, const Packed& p) {
    auto callee = module_.lookupSymbol<func::FuncOp>(call.getCallee());
    if (!callee || callee.isExternal()) return false;
    auto uses = SymbolTable::getSymbolUses(callee, module_);
    if (!uses || std::distance(uses->begin(), uses->end()) != 1) return false;
    BlockArgument arg = callee.getArgument(operand);
    if (arg.getType() != p.logical) return false;
    if (p.bytes()) {
      arg.setType(packedType(p, p.logical));
      updateFunctionType(callee);
    }
    follow(arg, p);
    return true;
  }

  bool rewriteMatmul(ir::MatmulOp matmul, unsigned operand, const Packed& p) {
    auto x = matmul.getA().getType();
    if (operand != 1 || !matmul.getTransposeB() || p.logical.getRank() != 2 || !x.getElementType().isF32() ||
        x.getRank() < 1)
      return false;
    b_.setInsertionPoint(matmul);
    Value r = ir::PackedMatmulOp::create(b_, matmul.getLoc(), matmul.getType(), matmul.getA(), matmul.getB(),
                                         format(p));
    matmul.replaceAllUsesWith(r);
    matmul.erase();
    return true;
  }

  // gather(w, [ids, iota over K]): rows `ids` of an embedding, when the ids
  // end in an axis of 1 that the iota runs along.
  bool rewriteGather(ir::GatherOp gather, const Packed& p) {
    if (!p.bytes() || p.logical.getRank() != 2 || gather.getIndices().size() != 2) return false;
    auto result = gather.getType();
    int64_t k = p.logical.getShape()[1], rank = result.getRank();
    auto iota = gather.getIndices()[1].getDefiningOp<ir::IotaOp>();
    auto ids = cast<RankedTensorType>(gather.getIndices()[0].getType());
    if (!iota || iota.getAxis() != rank - 1 || rank < 1 || result.getShape().back() != k || ids.getRank() != rank ||
        ids.getShape().back() != 1)
      return false;
    for (int64_t a = 0; a + 1 < rank; ++a)
      if (ids.getShape()[a] != result.getShape()[a]) return false;
    b_.setInsertionPoint(gather);
    Location loc = gather.getLoc();
    auto rowsType = RankedTensorType::get(ids.getShape().drop_back(), ids.getElementType());
    Value rows = ir::ReshapeOp::create(b_, loc, rowsType, gather.getIndices()[0]);
    Value r = ir::PackedGatherOp::create(b_, loc, result, gather.getX(), rows, format(p));
    gather.replaceAllUsesWith(r);
    gather.erase();
    return true;
  }

  ModuleOp module_;
  OpBuilder b_;
};

struct PackParamsPass : PassWrapper<PackParamsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(PackParamsPass)
  PackParamsPass() = default;
  explicit PackParamsPass(const SharedOptions& options) : options(options) {}
  SharedOptions options;
  StringRef getArgument() const final { return "linnet-pack-params"; }
  StringRef getDescription() const final {
    return "Read the params marked linnet.storage in their storage format (packed_matmul, packed_gather, unpack)";
  }
  void getDependentDialects(DialectRegistry& registry) const override {
    registry.insert<ir::LinnetDialect, tensor::TensorDialect, bufferization::BufferizationDialect>();
  }
  void runOnOperation() override {
    Packer packer(getOperation());
    for (auto fn : llvm::to_vector(getOperation().getOps<func::FuncOp>())) {
      for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
        auto attr = fn.getArgAttrOfType<StringAttr>(i, "linnet.storage");
        if (!attr) continue;
        std::optional<Storage> storage = storageNamed(attr.getValue().str());
        if (!storage) {
          fn.emitError("unknown linnet.storage `") << attr.getValue() << "`";
          return signalPassFailure();
        }
        if (*storage == Storage::F32 && !options.f32WeightProducts) continue;
        packer.packArgument(fn, i, *storage);
      }
    }
  }
};

}  // namespace

std::unique_ptr<Pass> createPackParamsPass(const SharedOptions& options) {
  return std::make_unique<PackParamsPass>(options);
}
void registerPackParamsPass() { PassRegistration<PackParamsPass>(); }

}  // namespace linnet::transforms
