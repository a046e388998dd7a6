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
    if (op.getW().getType().getRank() > 2) return lowerStack(op);
    b_.setInsertionPoint(op);
    Location loc = op.getLoc();
    auto x = op.getX().getType();
    int64_t k = x.getShape().back(), n = op.getW().getType().getShape()[op.getWKn() ? 1 : 0];
    Value x2 = matrix(op.getX(), k);
    int64_t m = cast<RankedTensorType>(x2.getType()).getShape()[0];
    auto outType = MemRefType::get({m, n}, b_.getF32Type());
    Value out = memref::AllocOp::create(b_, loc, outType, b_.getI64IntegerAttr(64));
    Storage storage = *storageNamed(op.getFormat().str());
    if (storage == Storage::F32) {
      call(loc, op.getWKn() ? "linnet_kernel_matmul_f32_kn" : "linnet_kernel_matmul_f32",
           {xBuffer(x2), buffer(op.getW()), dynamic(out)}, {});
    } else {
      // `fast` numerics (linnetc --numerics fast): activations quantized to 8 bits.
      auto numerics = module_->getAttrOfType<StringAttr>("linnet.numerics");
      bool fast = numerics && numerics.getValue() == "fast";
      call(loc, fast ? "linnet_kernel_matmul_packed_fast" : "linnet_kernel_matmul_packed",
           {buffer(x2), buffer(op.getW()), dynamic(out)}, {static_cast<int64_t>(storage), k});
    }
    replace(op, out, outType);
  }

  // f32 x [B.., M, K] and a stack of weights [B.., N, K]: one call over
  // the B matrices (the stack axes collapsed to one).
  void lowerStack(ir::PackedMatmulOp op) {
    b_.setInsertionPoint(op);
    Location loc = op.getLoc();
    auto result = op.getType();
    Value x = stack(op.getX()), w = stack(op.getW());
    auto xs = cast<RankedTensorType>(x.getType()).getShape();
    int64_t n = cast<RankedTensorType>(w.getType()).getShape()[op.getWKn() ? 2 : 1];
    auto outType = MemRefType::get({xs[0], xs[1], n}, b_.getF32Type());
    Value out = memref::AllocOp::create(b_, loc, outType, b_.getI64IntegerAttr(64));
    call(loc, op.getWKn() ? "linnet_kernel_batched_matmul_f32_kn" : "linnet_kernel_batched_matmul_f32",
         {xBuffer(x), buffer(w), dynamic(out)}, {});
    Value t = bufferization::ToTensorOp::create(b_, loc, RankedTensorType::get(outType.getShape(), b_.getF32Type()),
                                                out, /*restrict=*/true, /*writable=*/true);
    if (result.getRank() != 3) t = tensor::ExpandShapeOp::create(b_, loc, result, t, stackGroups(result.getRank()));
    op.getResult().replaceAllUsesWith(t);
    op.erase();
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

  // q [..L, G, Q, D], k [..L, K, D], v [..L, K, E] (f32, ..L of at most two
  // axes, padded to two), the mask broadcast by zero strides: one call.
  void lower(ir::AttentionOp op) {
    b_.setInsertionPoint(op);
    AttentionCall c = attentionCall(op.getQ(), op.getK(), op.getV(), op.getMask());
    Value out = newBuffer(op.getLoc(), c.rowsBy(op.getType().getShape().back()));
    c.operands.append({dynamic(out), scalar(op.getScale())});
    callAttention(op.getLoc(), "linnet_kernel_attention_f32", c.operands);
    op.getResult().replaceAllUsesWith(fromTwoLeading(asTensor(out), op.getType(), c.lead));
    op.erase();
  }

  // A gradient's forward f32 attention: one [L0, L1, G, Q, E + 2] buffer,
  // whose first E columns the kernel writes as the output and the last
  // two as each row's max and sum.
  void lower(ir::AttentionRowsOp op) {
    b_.setInsertionPoint(op);
    Location loc = op.getLoc();
    AttentionCall c = attentionCall(op.getQ(), op.getK(), op.getV(), op.getMask());
    const int64_t e = op.getType().getShape().back() - 2;
    SmallVector<int64_t> packed = c.rowsBy(e + 2);
    Value rows = newBuffer(loc, packed);
    auto columns = [&](int64_t from, int64_t count) {
      SmallVector<int64_t> offsets{0, 0, 0, 0, from}, sizes(packed), strides(5, 1);
      sizes[4] = count;
      return dynamic(memref::SubViewOp::create(b_, loc, rows, offsets, sizes, strides));
    };
    c.operands.append({columns(0, e), columns(e, 1), columns(e + 1, 1), scalar(op.getScale())});
    callAttention(loc, "linnet_kernel_attention_rows_f32", c.operands);
    op.getResult().replaceAllUsesWith(fromTwoLeading(asTensor(rows), op.getType(), c.lead));
    op.erase();
  }

  // A gradient's reverse of f32 attention: the operands as attention's,
  // with the row statistics and dout [..L, G, Q, .] padded alike, and
  // dq, dk and dv written by one call.
  void lower(ir::AttentionGradOp op) {
    b_.setInsertionPoint(op);
    Location loc = op.getLoc();
    AttentionCall c = attentionCall(op.getQ(), op.getK(), op.getV(), op.getMask());
    for (Value t : {op.getMax(), op.getSum(), op.getDout()}) c.operands.push_back(buffer(withTwoLeading(t, c.lead)));
    SmallVector<Value> outs;
    for (Value padded : c.padded) {  // dq, dk and dv: q's, k's and v's padded shapes
      outs.push_back(newBuffer(loc, cast<RankedTensorType>(padded.getType()).getShape()));
      c.operands.push_back(dynamic(outs.back()));
    }
    c.operands.push_back(scalar(op.getScale()));
    callAttention(loc, "linnet_kernel_attention_grad_f32", c.operands);
    for (int k = 0; k < 3; ++k) {
      Value result = op->getResult(k);
      result.replaceAllUsesWith(fromTwoLeading(asTensor(outs[k]), cast<RankedTensorType>(result.getType()), c.lead));
    }
    op.erase();
  }

 private:
  // What every attention kernel takes first: q, k and v padded to two
  // leading axes, as buffers, and the mask as a [L0, L1, G, Q, K] view.
  struct AttentionCall {
    int64_t lead;                // ..L's axes before padding
    SmallVector<Value, 3> padded;  // q, k and v with two leading axes
    SmallVector<int64_t> rows;   // [L0, L1, G, Q]
    SmallVector<Value> operands;
    SmallVector<int64_t> rowsBy(int64_t last) const {
      SmallVector<int64_t> shape(rows);
      shape.push_back(last);
      return shape;
    }
  };
  AttentionCall attentionCall(Value q, Value k, Value v, Value mask) {
    AttentionCall c;
    c.lead = cast<RankedTensorType>(k.getType()).getRank() - 2;
    for (Value t : {q, k, v}) c.padded.push_back(withTwoLeading(t, c.lead));
    auto qShape = cast<RankedTensorType>(c.padded[0].getType()).getShape();
    c.rows.assign(qShape.begin(), qShape.begin() + 4);
    const int64_t keys = cast<RankedTensorType>(k.getType()).getShape()[c.lead];
    for (Value t : c.padded) c.operands.push_back(buffer(t));
    c.operands.push_back(broadcastMask(mask, c.rowsBy(keys)));
    return c;
  }
  Value newBuffer(Location loc, ArrayRef<int64_t> shape) {
    return memref::AllocOp::create(b_, loc, MemRefType::get(shape, b_.getF32Type()), b_.getI64IntegerAttr(64));
  }
  // A buffer the kernel wrote, as the tensor its op's users read.
  Value asTensor(Value buffer) {
    auto type = cast<MemRefType>(buffer.getType());
    return bufferization::ToTensorOp::create(b_, buffer.getLoc(), RankedTensorType::get(type.getShape(), b_.getF32Type()),
                                             buffer, /*restrict=*/true, /*writable=*/true);
  }
  Value scalar(Value t) { return tensor::ExtractOp::create(b_, t.getLoc(), t, ValueRange{}); }
  void callAttention(Location loc, StringRef name, ArrayRef<Value> operands) {
    func::CallOp::create(b_, loc, declaration(name, ValueRange(operands).getTypes()), operands);
  }

  // [..L, rest] with `lead` axes in ..L (0, 1 or 2) as [L0, L1, rest].
  Value withTwoLeading(Value t, int64_t lead) {
    auto type = cast<RankedTensorType>(t.getType());
    if (lead == 2) return t;
    SmallVector<int64_t> shape(2 - lead, 1);
    shape.append(type.getShape().begin(), type.getShape().end());
    auto to = RankedTensorType::get(shape, type.getElementType());
    if (type.getRank() == 0) return t;
    SmallVector<ReassociationIndices> groups;
    // The added unit axes join the first axis.
    ReassociationIndices first;
    for (int64_t a = 0; a <= 2 - lead; ++a) first.push_back(a);
    groups.push_back(first);
    for (int64_t a = 1; a < type.getRank(); ++a) groups.push_back({a + 2 - lead});
    return tensor::ExpandShapeOp::create(b_, t.getLoc(), to, t, groups);
  }
  Value fromTwoLeading(Value t, RankedTensorType to, int64_t lead) {
    if (lead == 2) return t;
    auto type = cast<RankedTensorType>(t.getType());
    SmallVector<ReassociationIndices> groups;
    ReassociationIndices first;
    for (int64_t a = 0; a <= 2 - lead; ++a) first.push_back(a);
    groups.push_back(first);
    for (int64_t a = 3 - lead; a < type.getRank(); ++a) groups.push_back({a});
    return tensor::CollapseShapeOp::create(b_, t.getLoc(), to, t, groups);
  }

  // The i1 mask (broadcasting to `scores`, aligned at the right) as a
  // [L0, L1, G, Q, K] view of its own buffer: a broadcast axis has stride 0.
  Value broadcastMask(Value mask, ArrayRef<int64_t> scores) {
    auto type = cast<RankedTensorType>(mask.getType());
    Location loc = mask.getLoc();
    Value m = bufferization::ToBufferOp::create(b_, loc, MemRefType::get(type.getShape(), type.getElementType()), mask,
                                                /*read_only=*/true);
    int64_t rank = type.getRank(), shift = static_cast<int64_t>(scores.size()) - rank;
    SmallVector<int64_t> own(rank, 1);
    for (int64_t a = rank - 2; a >= 0; --a) own[a] = own[a + 1] * type.getShape()[a + 1];
    SmallVector<int64_t> strides(scores.size(), 0);
    for (int64_t a = 0; a < rank; ++a)
      if (a + shift >= 0 && type.getShape()[a] != 1) strides[a + shift] = own[a];
    auto view = MemRefType::get(scores, type.getElementType(),
                                StridedLayoutAttr::get(b_.getContext(), 0, strides));
    Value r = memref::ReinterpretCastOp::create(b_, loc, view, m, 0, scores, strides);
    return dynamic(r);
  }

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

  // [B.., R, C] as [B, R, C], the stack axes collapsed.
  Value stack(Value t) {
    auto type = cast<RankedTensorType>(t.getType());
    const int64_t rank = type.getRank();
    if (rank == 3) return t;
    int64_t count = 1;
    for (int64_t a = 0; a + 2 < rank; ++a) count *= type.getShape()[a];
    auto to = RankedTensorType::get({count, type.getShape()[rank - 2], type.getShape()[rank - 1]},
                                    type.getElementType());
    return tensor::CollapseShapeOp::create(b_, t.getLoc(), to, t, stackGroups(rank));
  }
  // The reassociation between [B.., R, C] of `rank` axes and [B, R, C].
  static SmallVector<ReassociationIndices> stackGroups(int64_t rank) {
    ReassociationIndices lead;
    for (int64_t a = 0; a + 2 < rank; ++a) lead.push_back(a);
    return {lead, {rank - 2}, {rank - 1}};
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
  // An f32 product's x: where it is the transpose of the last two axes of a
  // tensor (a gradient's dYᵀ, attention's Pᵀ), that tensor's buffer seen
  // through a transposed view (strides [.., 1, M]), which the kernel reads
  // as it lies; else the buffer of x itself. Forming the transpose in memory
  // cost a strided pass over [.., K, M] per product.
  Value xBuffer(Value x) {
    Value source = swappedLastTwo(x);
    if (!source) return buffer(x);
    int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
    SmallVector<AffineExpr> order;
    for (int64_t a = 0; a < rank; ++a) order.push_back(b_.getAffineDimExpr(a));
    std::swap(order[rank - 2], order[rank - 1]);
    auto perm = AffineMap::get(rank, 0, order, b_.getContext());
    return dynamic(memref::TransposeOp::create(b_, x.getLoc(), buffer(source), AffineMapAttr::get(perm)));
  }
  // t's operand where t is a linalg.transpose that swaps only its last two
  // axes (seen through the collapse of leading axes that stack() and
  // matrix() add), rebuilt so its shape matches t with those axes swapped.
  Value swappedLastTwo(Value t) {
    auto collapse = t.getDefiningOp<tensor::CollapseShapeOp>();
    Value inner = collapse ? collapse.getSrc() : t;
    auto transpose = inner.getDefiningOp<linalg::TransposeOp>();
    if (!transpose) return {};
    if (!ir::swapsLastTwo(transpose.getPermutation())) return {};
    int64_t rank = static_cast<int64_t>(transpose.getPermutation().size());
    Value source = transpose.getInput();
    if (!collapse) return source;
    // The same collapse of the source's axes: [B, K, M] or [K, M]. It is
    // that only where the swapped axes are not merged with axes of other
    // than size 1 (matrix() merges M with the leading axes).
    ArrayRef<int64_t> sizes = transpose.getInit().getType().getShape();
    for (const ReassociationIndices& group : collapse.getReassociationIndices()) {
      int64_t swapped = llvm::count_if(group, [&](int64_t a) { return a >= rank - 2; });
      if (swapped > 1) return {};
      for (int64_t a : group)
        if (swapped == 1 && a < rank - 2 && sizes[a] != 1) return {};
    }
    auto type = cast<RankedTensorType>(t.getType());
    SmallVector<int64_t> shape(type.getShape());
    if (shape.size() < 2) return {};
    std::swap(shape[shape.size() - 2], shape[shape.size() - 1]);
    return tensor::CollapseShapeOp::create(b_, t.getLoc(), RankedTensorType::get(shape, type.getElementType()), source,
                                           collapse.getReassociationIndices());
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
    if (isa<ir::PackedMatmulOp, ir::PackedGatherOp, ir::UnpackOp, ir::AttentionOp, ir::AttentionRowsOp,
            ir::AttentionGradOp>(op))
      ops.push_back(op);
  });
  for (Operation* op : ops) {
    if (auto m = dyn_cast<ir::PackedMatmulOp>(op)) calls.lower(m);
    else if (auto g = dyn_cast<ir::PackedGatherOp>(op)) calls.lower(g);
    else if (auto a = dyn_cast<ir::AttentionOp>(op)) calls.lower(a);
    else if (auto r = dyn_cast<ir::AttentionRowsOp>(op)) calls.lower(r);
    else if (auto g = dyn_cast<ir::AttentionGradOp>(op)) calls.lower(g);
    else calls.lower(cast<ir::UnpackOp>(op));
  }
}

}  // namespace linnet::cpu
