// linnet-to-linalg: every `linnet` op becomes upstream linalg, tensor,
// arith, math and scf ops on the same tensors. Elementwise ops become
// `linalg.generic`s whose indexing maps do the broadcasting; contractions
// and reductions become a parallel `linalg.generic` over the result whose
// body runs an `scf.for` over the reduced axis, accumulating in f32 in a
// register: the innermost loop then reads both operands contiguously and
// LLVM vectorizes it (the adds carry `reassoc` so it may).
#include "transforms/passes.h"

#include "ir/dialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

namespace linnet::transforms {

namespace {

using namespace mlir;

bool isLowFloat(Type t) { return t.isBF16() || t.isF16(); }

class Lowering {
 public:
  explicit Lowering(OpBuilder& b) : b(b) {}

  void lower(Operation* op) {
    b.setInsertionPoint(op);
    loc = op->getLoc();
    Value r;
    if (auto o = dyn_cast<ir::UnaryOp>(op)) r = unary(o);
    else if (auto o = dyn_cast<ir::BinaryOp>(op)) r = binary(o);
    else if (auto o = dyn_cast<ir::SelectOp>(op)) r = select(o);
    else if (auto o = dyn_cast<ir::CastOp>(op)) r = castElements(o);
    else if (auto o = dyn_cast<ir::BroadcastOp>(op)) r = broadcast(o);
    else if (auto o = dyn_cast<ir::MatmulOp>(op)) r = matmul(o);
    else if (auto o = dyn_cast<ir::ReduceOp>(op)) r = reduce(o);
    else if (auto o = dyn_cast<ir::ReshapeOp>(op)) r = reshape(o);
    else if (auto o = dyn_cast<ir::PermuteOp>(op)) r = permute(o);
    else if (auto o = dyn_cast<ir::ConcatOp>(op)) r = concat(o);
    else if (auto o = dyn_cast<ir::SliceOp>(op)) r = slice(o);
    else if (auto o = dyn_cast<ir::GatherOp>(op)) r = gather(o);
    else if (auto o = dyn_cast<ir::IotaOp>(op)) r = iota(o);
    else if (auto o = dyn_cast<ir::ConstantOp>(op)) r = arith::ConstantOp::create(b, loc, o.getType(), llvm::cast<TypedAttr>(o.getValue()));
    else return;
    op->getResult(0).replaceAllUsesWith(r);
    op->erase();
  }

 private:
  OpBuilder& b;
  Location loc = UnknownLoc::get(b.getContext());

  // ---------------------------------------------------------------- helpers
  static RankedTensorType typeOf(Value v) { return llvm::cast<RankedTensorType>(v.getType()); }

  Value empty(RankedTensorType t) { return tensor::EmptyOp::create(b, loc, t.getShape(), t.getElementType()); }

  // The map from the result's loop dims to an operand broadcast into it.
  AffineMap broadcastMap(ArrayRef<int64_t> in, ArrayRef<int64_t> out) {
    SmallVector<AffineExpr> exprs;
    size_t shift = out.size() - in.size();
    for (size_t i = 0; i < in.size(); ++i) {
      if (in[i] == 1 && out[i + shift] != 1) exprs.push_back(b.getAffineConstantExpr(0));
      else exprs.push_back(b.getAffineDimExpr(static_cast<unsigned>(i + shift)));
    }
    return AffineMap::get(static_cast<unsigned>(out.size()), 0, exprs, b.getContext());
  }

  using BodyFn = std::function<Value(OpBuilder&, Location, ValueRange)>;

  // A parallel linalg.generic producing `type` from `inputs` broadcast into it.
  Value elementwise(RankedTensorType type, ValueRange inputs, BodyFn body) {
    SmallVector<AffineMap> maps;
    for (Value in : inputs) maps.push_back(broadcastMap(typeOf(in).getShape(), type.getShape()));
    maps.push_back(b.getMultiDimIdentityMap(type.getRank()));
    SmallVector<utils::IteratorType> iters(type.getRank(), utils::IteratorType::parallel);
    auto g = linalg::GenericOp::create(
        b, loc, TypeRange{type}, inputs, ValueRange{empty(type)}, maps, iters,
        [&](OpBuilder& nb, Location l, ValueRange args) {
          Value r = body(nb, l, args.drop_back());
          linalg::YieldOp::create(nb, l, r);
        });
    return g.getResult(0);
  }

  static Value toF32(OpBuilder& nb, Location l, Value v) {
    if (isLowFloat(v.getType())) return arith::ExtFOp::create(nb, l, nb.getF32Type(), v);
    return v;
  }
  static Value fromF32(OpBuilder& nb, Location l, Value v, Type t) {
    if (isLowFloat(t)) return arith::TruncFOp::create(nb, l, t, v);
    return v;
  }
  static arith::FastMathFlagsAttr reassoc(OpBuilder& nb) {
    return arith::FastMathFlagsAttr::get(nb.getContext(),
                                         arith::FastMathFlags::reassoc | arith::FastMathFlags::contract);
  }

  // ---------------------------------------------------------------- elementwise
  Value unary(ir::UnaryOp o) {
    std::string kind = o.getKind().str();
    Type et = o.getType().getElementType();
    return elementwise(o.getType(), {o.getX()}, [&](OpBuilder& nb, Location l, ValueRange a) -> Value {
      Value x = a[0];
      if (isa<FloatType>(et)) {
        Value f = toF32(nb, l, x);
        Value r;
        if (kind == "neg") r = arith::NegFOp::create(nb, l, f);
        else if (kind == "exp") r = math::ExpOp::create(nb, l, f);
        else if (kind == "log") r = math::LogOp::create(nb, l, f);
        else if (kind == "sin") r = math::SinOp::create(nb, l, f);
        else if (kind == "cos") r = math::CosOp::create(nb, l, f);
        else if (kind == "tanh") r = math::TanhOp::create(nb, l, f);
        else if (kind == "sqrt") r = math::SqrtOp::create(nb, l, f);
        else if (kind == "rsqrt") {
          Value one = arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(1.0f));
          r = arith::DivFOp::create(nb, l, one, math::SqrtOp::create(nb, l, f));
        } else if (kind == "sigmoid") {
          Value one = arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(1.0f));
          Value e = math::ExpOp::create(nb, l, arith::NegFOp::create(nb, l, f));
          r = arith::DivFOp::create(nb, l, one, arith::AddFOp::create(nb, l, one, e));
        } else if (kind == "abs") r = math::AbsFOp::create(nb, l, f);
        else if (kind == "floor") r = math::FloorOp::create(nb, l, f);
        else r = f;
        return fromF32(nb, l, r, et);
      }
      auto it = llvm::cast<IntegerType>(et);
      if (kind == "not") {
        if (it.getWidth() == 1) return arith::XOrIOp::create(nb, l, x, arith::ConstantIntOp::create(nb, l, 1, 1));
        Value zero = arith::ConstantIntOp::create(nb, l, et, 0);
        Value isZero = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq, x, zero);
        return arith::ExtUIOp::create(nb, l, et, isZero);
      }
      Value zero = arith::ConstantIntOp::create(nb, l, et, 0);
      Value neg = arith::SubIOp::create(nb, l, zero, x);
      if (kind == "neg") return neg;
      Value isNeg = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::slt, x, zero);
      return arith::SelectOp::create(nb, l, isNeg, neg, x);  // abs
    });
  }

  Value binary(ir::BinaryOp o) {
    std::string k = o.getKind().str();
    Type et = typeOf(o.getLhs()).getElementType();
    Type rt = o.getType().getElementType();
    return elementwise(o.getType(), {o.getLhs(), o.getRhs()}, [&](OpBuilder& nb, Location l, ValueRange a) -> Value {
      Value x = a[0], y = a[1];
      if (isa<FloatType>(et)) {
        Value fx = toF32(nb, l, x), fy = toF32(nb, l, y);
        std::optional<arith::CmpFPredicate> pred;
        if (k == "==") pred = arith::CmpFPredicate::OEQ;
        else if (k == "!=") pred = arith::CmpFPredicate::UNE;
        else if (k == "<") pred = arith::CmpFPredicate::OLT;
        else if (k == "<=") pred = arith::CmpFPredicate::OLE;
        else if (k == ">") pred = arith::CmpFPredicate::OGT;
        else if (k == ">=") pred = arith::CmpFPredicate::OGE;
        if (pred) return arith::CmpFOp::create(nb, l, *pred, fx, fy);
        Value r;
        if (k == "+") r = arith::AddFOp::create(nb, l, fx, fy);
        else if (k == "-") r = arith::SubFOp::create(nb, l, fx, fy);
        else if (k == "*") r = arith::MulFOp::create(nb, l, fx, fy);
        else if (k == "/") r = arith::DivFOp::create(nb, l, fx, fy);
        else if (k == "maximum") r = arith::MaximumFOp::create(nb, l, fx, fy);
        else if (k == "minimum") r = arith::MinimumFOp::create(nb, l, fx, fy);
        else if (k == "pow") r = math::PowFOp::create(nb, l, fx, fy);
        else {
          o.emitError("no float form of `") << k << "`";
          r = fx;
        }
        return fromF32(nb, l, r, rt);
      }
      auto it = llvm::cast<IntegerType>(et);
      bool boolean = it.getWidth() == 1;
      std::optional<arith::CmpIPredicate> pred;
      if (k == "==") pred = arith::CmpIPredicate::eq;
      else if (k == "!=") pred = arith::CmpIPredicate::ne;
      else if (k == "<") pred = boolean ? arith::CmpIPredicate::ult : arith::CmpIPredicate::slt;
      else if (k == "<=") pred = boolean ? arith::CmpIPredicate::ule : arith::CmpIPredicate::sle;
      else if (k == ">") pred = boolean ? arith::CmpIPredicate::ugt : arith::CmpIPredicate::sgt;
      else if (k == ">=") pred = boolean ? arith::CmpIPredicate::uge : arith::CmpIPredicate::sge;
      if (pred) return arith::CmpIOp::create(nb, l, *pred, x, y);
      if (k == "+") return arith::AddIOp::create(nb, l, x, y);
      if (k == "-") return arith::SubIOp::create(nb, l, x, y);
      if (k == "*") return arith::MulIOp::create(nb, l, x, y);
      if (k == "&" || k == "&&") return arith::AndIOp::create(nb, l, x, y);
      if (k == "|" || k == "||") return arith::OrIOp::create(nb, l, x, y);
      if (k == "^") return arith::XOrIOp::create(nb, l, x, y);
      if (k == "maximum") return arith::MaxSIOp::create(nb, l, x, y);
      if (k == "minimum") return arith::MinSIOp::create(nb, l, x, y);
      Value zero = arith::ConstantIntOp::create(nb, l, et, 0);
      Value one = arith::ConstantIntOp::create(nb, l, et, 1);
      Value minusOne = arith::ConstantIntOp::create(nb, l, et, -1);
      Value yZero = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq, y, zero);
      Value yMinusOne = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq, y, minusOne);
      if (k == "/" || k == "%") {
        // The language defines x / 0 = 0, x % 0 = 0, and MIN / -1 = MIN.
        Value bad = arith::OrIOp::create(nb, l, yZero, yMinusOne);
        Value safe = arith::SelectOp::create(nb, l, bad, one, y);
        if (k == "%") {
          Value r = arith::RemSIOp::create(nb, l, x, safe);
          return arith::SelectOp::create(nb, l, bad, zero, r);
        }
        Value q = arith::DivSIOp::create(nb, l, x, safe);
        Value negX = arith::SubIOp::create(nb, l, zero, x);  // x / -1, wrapping at MIN
        q = arith::SelectOp::create(nb, l, yMinusOne, negX, q);
        return arith::SelectOp::create(nb, l, yZero, zero, q);
      }
      if (k == "<<" || k == ">>") {
        // A shift by a negative amount or by the width or more gives 0.
        Value width = arith::ConstantIntOp::create(nb, l, et, it.getWidth());
        Value bad = arith::OrIOp::create(nb, l, arith::CmpIOp::create(nb, l, arith::CmpIPredicate::slt, y, zero),
                                         arith::CmpIOp::create(nb, l, arith::CmpIPredicate::sge, y, width));
        Value safe = arith::SelectOp::create(nb, l, bad, zero, y);
        Value r = k == "<<" ? Value(arith::ShLIOp::create(nb, l, x, safe)) : Value(arith::ShRSIOp::create(nb, l, x, safe));
        return arith::SelectOp::create(nb, l, bad, zero, r);
      }
      o.emitError("no integer form of `") << k << "`";
      return x;
    });
  }

  Value select(ir::SelectOp o) {
    return elementwise(o.getType(), {o.getCond(), o.getA(), o.getB()},
                       [&](OpBuilder& nb, Location l, ValueRange a) -> Value {
                         return arith::SelectOp::create(nb, l, a[0], a[1], a[2]);
                       });
  }

  static Value convert(OpBuilder& nb, Location l, Value x, Type to) {
    Type from = x.getType();
    if (from == to) return x;
    if (isa<FloatType>(from) && isa<FloatType>(to)) {
      Value f = toF32(nb, l, x);
      return to.isF32() ? f : Value(arith::TruncFOp::create(nb, l, to, f));
    }
    if (isa<IntegerType>(from) && isa<FloatType>(to)) {
      Value f = from.isInteger(1) ? Value(arith::UIToFPOp::create(nb, l, nb.getF32Type(), x))
                                  : Value(arith::SIToFPOp::create(nb, l, nb.getF32Type(), x));
      return fromF32(nb, l, f, to);
    }
    if (isa<FloatType>(from)) {
      Value f = toF32(nb, l, x);
      if (to.isInteger(1)) {
        Value zero = arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(0.0f));
        return arith::CmpFOp::create(nb, l, arith::CmpFPredicate::UNE, f, zero);
      }
      // Non-finite or out of the i64 range: 0, as the reference defines it.
      Value absF = math::AbsFOp::create(nb, l, f);
      Value limit = arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(9.2e18f));
      Value ok = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OLT, absF, limit);
      Value zero = arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(0.0f));
      Value safe = arith::SelectOp::create(nb, l, ok, f, zero);
      Value i = arith::FPToSIOp::create(nb, l, nb.getI64Type(), safe);
      return to.isInteger(64) ? i : Value(arith::TruncIOp::create(nb, l, to, i));
    }
    unsigned fw = from.getIntOrFloatBitWidth(), tw = to.getIntOrFloatBitWidth();
    if (tw == 1) {
      Value zero = arith::ConstantIntOp::create(nb, l, from, 0);
      return arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ne, x, zero);
    }
    if (fw == 1) return arith::ExtUIOp::create(nb, l, to, x);
    if (fw < tw) return arith::ExtSIOp::create(nb, l, to, x);
    return arith::TruncIOp::create(nb, l, to, x);
  }

  Value castElements(ir::CastOp o) {
    Type to = o.getType().getElementType();
    return elementwise(o.getType(), {o.getX()},
                       [&](OpBuilder& nb, Location l, ValueRange a) { return convert(nb, l, a[0], to); });
  }

  Value broadcast(ir::BroadcastOp o) {
    return elementwise(o.getType(), {o.getX()}, [&](OpBuilder&, Location, ValueRange a) -> Value { return a[0]; });
  }

  // ---------------------------------------------------------------- contractions
  // A parallel generic over `type` whose body computes each element from
  // the loop indices (`linalg.index`), reading other tensors with
  // tensor.extract. `order[i]` is the result axis loop i runs over.
  Value indexed(RankedTensorType type, ArrayRef<unsigned> order,
                std::function<Value(OpBuilder&, Location, ArrayRef<Value>)> body) {
    unsigned r = type.getRank();
    SmallVector<AffineExpr> outExprs(r);
    for (unsigned i = 0; i < r; ++i) outExprs[order[i]] = b.getAffineDimExpr(i);
    AffineMap outMap = AffineMap::get(r, 0, outExprs, b.getContext());
    SmallVector<utils::IteratorType> iters(r, utils::IteratorType::parallel);
    auto g = linalg::GenericOp::create(
        b, loc, TypeRange{type}, ValueRange{}, ValueRange{empty(type)}, ArrayRef<AffineMap>{outMap}, iters,
        [&](OpBuilder& nb, Location l, ValueRange) {
          SmallVector<Value> idx(r);
          for (unsigned i = 0; i < r; ++i) idx[order[i]] = linalg::IndexOp::create(nb, l, i);
          linalg::YieldOp::create(nb, l, body(nb, l, idx));
        });
    return g.getResult(0);
  }

  static SmallVector<unsigned> identityOrder(unsigned r) {
    SmallVector<unsigned> o;
    for (unsigned i = 0; i < r; ++i) o.push_back(i);
    return o;
  }

  Value cIndex(OpBuilder& nb, Location l, int64_t v) { return arith::ConstantIndexOp::create(nb, l, v); }

  Value matmul(ir::MatmulOp o) {
    if (!o.getTransposeB() && typeOf(o.getA()).getRank() >= 1 &&
        (typeOf(o.getB()).getRank() == 2 || typeOf(o.getA()).getRank() >= 2))
      return rowsMatmul(o);
    return dotMatmul(o);
  }

  // b read row by row ([.., N, K], `transpose_b`): each result element is a
  // dot product of two contiguous rows, accumulated in an f32 register. The
  // loop over b's rows (n) runs outside the rows of a (m), so a weight row
  // stays in cache while every row of a meets it.
  Value dotMatmul(ir::MatmulOp o) {
    Value a = o.getA(), w = o.getB();
    auto at = typeOf(a), wt = typeOf(w), out = o.getType();
    bool tb = o.getTransposeB();
    int64_t K = at.getShape().back();
    unsigned r = out.getRank();
    Type et = out.getElementType();
    bool isF = isa<FloatType>(et);
    SmallVector<unsigned> order = identityOrder(r);
    if (tb && r >= 2) std::swap(order[r - 1], order[r - 2]);
    auto ap = at.getShape(), wp = wt.getShape();
    return indexed(out, order, [&](OpBuilder& nb, Location l, ArrayRef<Value> idx) -> Value {
      Value lo = cIndex(nb, l, 0), hi = cIndex(nb, l, K), step = cIndex(nb, l, 1);
      Value init = isF ? Value(arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(0.0f)))
                       : Value(arith::ConstantIntOp::create(nb, l, et, 0));
      auto loop = scf::ForOp::create(nb, l, lo, hi, step, ValueRange{init},
                                     [&](OpBuilder& lb, Location ll, Value k, ValueRange acc) {
        SmallVector<Value> ai, wi;
        if (wp.size() == 2) {
          // a [..., K] with the result's leading axes; w [N, K] or [K, N].
          for (size_t d = 0; d + 1 < ap.size(); ++d) ai.push_back(idx[d]);
          ai.push_back(k);
          if (tb) wi = {idx[r - 1], k};
          else wi = {k, idx[r - 1]};
        } else {
          // Batched: a [..batchA, M, K], w [..batchB, N, K] (or [.., K, N]),
          // batch axes broadcast.
          size_t batch = r - 2;
          auto batchIndex = [&](ArrayRef<int64_t> shape, size_t own, SmallVector<Value>& into) {
            for (size_t d = 0; d < own; ++d) {
              size_t outAxis = batch - own + d;
              into.push_back(shape[d] == 1 ? cIndex(lb, ll, 0) : idx[outAxis]);
            }
          };
          if (ap.size() >= 2) {
            batchIndex(ap, ap.size() - 2, ai);
            ai.push_back(idx[r - 2]);
          }
          ai.push_back(k);
          batchIndex(wp, wp.size() - 2, wi);
          if (tb) {
            wi.push_back(idx[r - 1]);
            wi.push_back(k);
          } else {
            wi.push_back(k);
            wi.push_back(idx[r - 1]);
          }
        }
        Value x = tensor::ExtractOp::create(lb, ll, a, ai);
        Value y = tensor::ExtractOp::create(lb, ll, w, wi);
        Value next;
        if (isF) {
          Value p = arith::MulFOp::create(lb, ll, toF32(lb, ll, x), toF32(lb, ll, y), reassoc(lb));
          next = arith::AddFOp::create(lb, ll, acc[0], p, reassoc(lb));
        } else {
          next = arith::AddIOp::create(lb, ll, acc[0], arith::MulIOp::create(lb, ll, x, y));
        }
        scf::YieldOp::create(lb, ll, next);
      });
      return isF ? fromF32(nb, l, loop.getResult(0), et) : loop.getResult(0);
    });
  }

  // b read as [.., K, N] (attention's probabilities times values): for each
  // row of a, the rows of b scaled and added into the result row, so the
  // innermost loop runs along N, contiguous in b and in the result. Floats
  // accumulate in an f32 result, rounded to the result type once at the end.
  Value rowsMatmul(ir::MatmulOp o) {
    Value a = o.getA(), w = o.getB();
    auto at = typeOf(a), wt = typeOf(w), out = o.getType();
    unsigned r = out.getRank();
    Type et = out.getElementType();
    bool isF = isa<FloatType>(et);
    auto ap = at.getShape(), wp = wt.getShape();
    // Loop dims: the result's axes but the last, then k (reduction), then n.
    unsigned dims = r + 1, kDim = r - 1, nDim = r;
    auto d = [&](unsigned i) { return b.getAffineDimExpr(i); };
    SmallVector<AffineExpr> aExprs, wExprs, outExprs;
    for (unsigned i = 0; i + 1 < r; ++i) outExprs.push_back(d(i));
    outExprs.push_back(d(nDim));
    if (wp.size() == 2) {
      for (unsigned i = 0; i + 1 < ap.size(); ++i) aExprs.push_back(d(i));
      aExprs.push_back(d(kDim));
      wExprs = {d(kDim), d(nDim)};
    } else {
      unsigned batch = r - 2;
      auto batchExprs = [&](ArrayRef<int64_t> shape, size_t own, SmallVector<AffineExpr>& into) {
        for (size_t i = 0; i < own; ++i) {
          unsigned outAxis = static_cast<unsigned>(batch - own + i);
          into.push_back(shape[i] == 1 && out.getShape()[outAxis] != 1 ? b.getAffineConstantExpr(0) : d(outAxis));
        }
      };
      batchExprs(ap, ap.size() - 2, aExprs);
      aExprs.push_back(d(r - 2));
      aExprs.push_back(d(kDim));
      batchExprs(wp, wp.size() - 2, wExprs);
      wExprs.push_back(d(kDim));
      wExprs.push_back(d(nDim));
    }
    auto ctx = b.getContext();
    SmallVector<AffineMap> maps = {AffineMap::get(dims, 0, aExprs, ctx), AffineMap::get(dims, 0, wExprs, ctx),
                                   AffineMap::get(dims, 0, outExprs, ctx)};
    SmallVector<utils::IteratorType> iters(dims, utils::IteratorType::parallel);
    iters[kDim] = utils::IteratorType::reduction;
    Type accT = isF ? b.getF32Type() : et;
    auto accType = RankedTensorType::get(out.getShape(), accT);
    Value zero = isF ? Value(arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f)))
                     : Value(arith::ConstantIntOp::create(b, loc, et, 0));
    Value init = linalg::FillOp::create(b, loc, zero, empty(accType)).getResult(0);
    auto g = linalg::GenericOp::create(
        b, loc, TypeRange{accType}, ValueRange{a, w}, ValueRange{init}, maps, iters,
        [&](OpBuilder& nb, Location l, ValueRange args) {
          Value next;
          if (isF) {
            Value p = arith::MulFOp::create(nb, l, toF32(nb, l, args[0]), toF32(nb, l, args[1]));
            next = arith::AddFOp::create(nb, l, args[2], p);
          } else {
            next = arith::AddIOp::create(nb, l, args[2], arith::MulIOp::create(nb, l, args[0], args[1]));
          }
          linalg::YieldOp::create(nb, l, next);
        });
    Value acc = g.getResult(0);
    if (accT == et) return acc;
    return elementwise(out, {acc}, [&](OpBuilder& nb, Location l, ValueRange v) { return fromF32(nb, l, v[0], et); });
  }

  Value reduce(ir::ReduceOp o) {
    std::string k = o.getKind().str();
    Value x = o.getX();
    auto xt = typeOf(x);
    auto out = o.getType();
    Type xe = xt.getElementType();
    Type oe = out.getElementType();
    ArrayRef<int64_t> axes = o.getAxes();
    bool keep = o.getKeepdims();
    bool isF = isa<FloatType>(xe);
    bool argmax = k == "index_of_max";
    bool boolean = xe.isInteger(1);
    int64_t count = 1;
    for (int64_t a : axes) count *= xt.getShape()[a];
    return indexed(out, identityOrder(out.getRank()), [&](OpBuilder& nb, Location l, ArrayRef<Value> idx) -> Value {
      // x's index: result indices on kept axes, loop variables on reduced ones.
      SmallVector<Value> xi(xt.getRank());
      unsigned outAxis = 0;
      for (int64_t d = 0; d < xt.getRank(); ++d) {
        bool reduced = llvm::is_contained(axes, d);
        if (!reduced) xi[d] = idx[outAxis++];
        else if (keep) ++outAxis;
      }
      Type accT = isF ? nb.getF32Type() : xe;
      SmallVector<Value> init;
      if (argmax) {
        init.push_back(arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(-INFINITY)));
        init.push_back(cIndex(nb, l, 0));
        if (!isF) init[0] = arith::ConstantIntOp::create(nb, l, xe, 0);
      } else if (isF) {
        float v = k == "max" ? -INFINITY : k == "min" ? INFINITY : k == "prod" ? 1.0f : 0.0f;
        init.push_back(arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(v)));
      } else {
        unsigned w = xe.getIntOrFloatBitWidth();
        APInt v = APInt::getZero(w);
        if (boolean) v = APInt(1, k == "all" || k == "min" || k == "prod" ? 1 : 0);
        else if (k == "max") v = APInt::getSignedMinValue(w);
        else if (k == "min") v = APInt::getSignedMaxValue(w);
        else if (k == "prod") v = APInt(w, 1);
        init.push_back(arith::ConstantOp::create(nb, l, nb.getIntegerAttr(xe, v)));
      }
      (void)accT;
      // One scf.for per reduced axis, the last axis innermost.
      std::function<SmallVector<Value>(OpBuilder&, size_t, ValueRange, Value)> nest;
      Value flat0 = cIndex(nb, l, 0);
      nest = [&](OpBuilder& lb, size_t level, ValueRange acc, Value flat) -> SmallVector<Value> {
        if (level == axes.size()) {
          Value v = tensor::ExtractOp::create(lb, l, x, xi);
          SmallVector<Value> next;
          if (argmax) {
            Value fv = isF ? toF32(lb, l, v) : v;
            Value best = acc[0];
            Value first = arith::CmpIOp::create(lb, l, arith::CmpIPredicate::eq, flat, cIndex(lb, l, 0));
            Value better = isF ? Value(arith::CmpFOp::create(lb, l, arith::CmpFPredicate::OGT, fv, best))
                               : Value(arith::CmpIOp::create(lb, l, arith::CmpIPredicate::sgt, fv, best));
            Value take = arith::OrIOp::create(lb, l, first, better);
            if (isF) {
              Value vNan = arith::CmpFOp::create(lb, l, arith::CmpFPredicate::UNO, fv, fv);
              Value bestNum = arith::CmpFOp::create(lb, l, arith::CmpFPredicate::ORD, best, best);
              take = arith::OrIOp::create(lb, l, take, arith::AndIOp::create(lb, l, vNan, bestNum));
            }
            next.push_back(arith::SelectOp::create(lb, l, take, fv, best));
            next.push_back(arith::SelectOp::create(lb, l, take, flat, acc[1]));
            return next;
          }
          if (isF) {
            Value fv = toF32(lb, l, v);
            if (k == "max") next.push_back(arith::MaxNumFOp::create(lb, l, acc[0], fv));
            else if (k == "min") next.push_back(arith::MinNumFOp::create(lb, l, acc[0], fv));
            else if (k == "prod") next.push_back(arith::MulFOp::create(lb, l, acc[0], fv));
            else next.push_back(arith::AddFOp::create(lb, l, acc[0], fv, reassoc(lb)));
          } else if (boolean) {
            bool conj = k == "all" || k == "min" || k == "prod";
            next.push_back(conj ? Value(arith::AndIOp::create(lb, l, acc[0], v)) : Value(arith::OrIOp::create(lb, l, acc[0], v)));
          } else {
            if (k == "max") next.push_back(arith::MaxSIOp::create(lb, l, acc[0], v));
            else if (k == "min") next.push_back(arith::MinSIOp::create(lb, l, acc[0], v));
            else if (k == "prod") next.push_back(arith::MulIOp::create(lb, l, acc[0], v));
            else next.push_back(arith::AddIOp::create(lb, l, acc[0], v));
          }
          return next;
        }
        int64_t axis = axes[level];
        int64_t extent = xt.getShape()[axis];
        auto loop = scf::ForOp::create(lb, l, cIndex(lb, l, 0), cIndex(lb, l, extent), cIndex(lb, l, 1), acc,
                                       [&](OpBuilder& ib, Location il, Value iv, ValueRange inner) {
          xi[axis] = iv;
          Value f = arith::AddIOp::create(ib, il, arith::MulIOp::create(ib, il, flat, cIndex(ib, il, extent)), iv);
          scf::YieldOp::create(ib, il, nest(ib, level + 1, inner, f));
        });
        return SmallVector<Value>(loop.getResults());
      };
      SmallVector<Value> res = nest(nb, 0, init, flat0);
      if (argmax) return arith::IndexCastOp::create(nb, l, oe, res[1]);
      Value r = res[0];
      if (isF && k == "mean") {
        Value n = arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(static_cast<float>(count)));
        r = arith::DivFOp::create(nb, l, r, n);
      }
      return isF ? fromF32(nb, l, r, oe) : r;
    });
  }

  // ---------------------------------------------------------------- data movement
  Value reshape(ir::ReshapeOp o) {
    Value x = o.getX();
    auto xt = typeOf(x);
    auto out = o.getType();
    if (xt.getShape() == out.getShape()) return x;
    // Through one flat axis: collapse everything, then expand to the result.
    if (xt.getRank() == 0 || out.getRank() == 0) {
      if (xt.getRank() == 0) return tensor::ExpandShapeOp::create(b, loc, out, x, ArrayRef<ReassociationIndices>{});
      return tensor::CollapseShapeOp::create(b, loc, out, x, ArrayRef<ReassociationIndices>{});
    }
    ReassociationIndices all;
    for (int64_t i = 0; i < xt.getRank(); ++i) all.push_back(i);
    auto flatT = RankedTensorType::get({xt.getNumElements()}, xt.getElementType());
    Value flat = xt.getRank() == 1 ? x : Value(tensor::CollapseShapeOp::create(b, loc, flatT, x, ArrayRef<ReassociationIndices>{all}));
    if (out.getRank() == 1) return flat;
    ReassociationIndices allOut;
    for (int64_t i = 0; i < out.getRank(); ++i) allOut.push_back(i);
    return tensor::ExpandShapeOp::create(b, loc, out, flat, ArrayRef<ReassociationIndices>{allOut});
  }

  Value permute(ir::PermuteOp o) {
    return linalg::TransposeOp::create(b, loc, o.getX(), empty(o.getType()), o.getPerm()).getResult()[0];
  }

  Value concat(ir::ConcatOp o) {
    auto out = o.getType();
    int64_t axis = o.getAxis();
    Value acc = empty(out);
    int64_t at = 0;
    for (Value x : o.getXs()) {
      auto xt = typeOf(x);
      SmallVector<OpFoldResult> offsets(out.getRank(), b.getIndexAttr(0)), sizes, strides(out.getRank(), b.getIndexAttr(1));
      offsets[axis] = b.getIndexAttr(at);
      for (int64_t d : xt.getShape()) sizes.push_back(b.getIndexAttr(d));
      acc = tensor::InsertSliceOp::create(b, loc, x, acc, offsets, sizes, strides);
      at += xt.getShape()[axis];
    }
    return acc;
  }

  // A runtime integer (a rank-0 tensor, or an element) as an index clamped into [0, n).
  Value clampIndex(OpBuilder& nb, Location l, Value v, int64_t n) {
    Value i = arith::IndexCastOp::create(nb, l, nb.getIndexType(), v);
    Value zero = cIndex(nb, l, 0), top = cIndex(nb, l, std::max<int64_t>(n - 1, 0));
    return arith::MinSIOp::create(nb, l, arith::MaxSIOp::create(nb, l, i, zero), top);
  }
  Value scalarOf(OpBuilder& nb, Location l, Value rank0) {
    Value v = tensor::ExtractOp::create(nb, l, rank0, ValueRange{});
    if (v.getType().isInteger(1)) v = arith::ExtUIOp::create(nb, l, nb.getI64Type(), v);
    return v;
  }

  Value slice(ir::SliceOp o) {
    Value x = o.getX();
    auto xt = typeOf(x);
    SmallVector<OpFoldResult> offsets, sizes, strides;
    ArrayRef<int64_t> items = o.getItems(), lo = o.getLo(), hi = o.getHi();
    for (int64_t d = 0; d < xt.getRank(); ++d) {
      strides.push_back(b.getIndexAttr(1));
      if (items[d] < 0) {
        offsets.push_back(b.getIndexAttr(lo[d]));
        sizes.push_back(b.getIndexAttr(hi[d] - lo[d]));
      } else {
        offsets.push_back(clampIndex(b, loc, scalarOf(b, loc, o.getIndices()[items[d]]), xt.getShape()[d]));
        sizes.push_back(b.getIndexAttr(1));
      }
    }
    return tensor::ExtractSliceOp::create(b, loc, o.getType(), x, offsets, sizes, strides);
  }

  // x[i0, i1, ...]: an index that is an iota along one result axis is that
  // loop index itself; the others are read elementwise.
  Value gather(ir::GatherOp o) {
    Value x = o.getX();
    auto xt = typeOf(x);
    auto out = o.getType();
    unsigned r = out.getRank();
    SmallVector<Value> inputs;
    SmallVector<AffineMap> maps;
    SmallVector<int> source;  // per index: -1 read from inputs[k]; >= 0 the loop index of that axis
    SmallVector<int> inputOf;
    for (Value idx : o.getIndices()) {
      auto it = typeOf(idx);
      int axis = -1;
      if (auto iota = idx.getDefiningOp<ir::IotaOp>()) {
        int64_t a = iota.getAxis();
        size_t shift = r - it.getRank();
        int64_t outAxis = a + static_cast<int64_t>(shift);
        if (it.getShape()[a] == out.getShape()[outAxis]) axis = static_cast<int>(outAxis);
      }
      source.push_back(axis);
      inputOf.push_back(static_cast<int>(inputs.size()));
      if (axis < 0) {
        inputs.push_back(idx);
        maps.push_back(broadcastMap(it.getShape(), out.getShape()));
      }
    }
    maps.push_back(b.getMultiDimIdentityMap(r));
    SmallVector<utils::IteratorType> iters(r, utils::IteratorType::parallel);
    auto g = linalg::GenericOp::create(
        b, loc, TypeRange{out}, inputs, ValueRange{empty(out)}, maps, iters,
        [&](OpBuilder& nb, Location l, ValueRange args) {
          SmallVector<Value> xi;
          for (size_t k = 0; k < source.size(); ++k) {
            int64_t n = xt.getShape()[k];
            if (source[k] >= 0) {
              xi.push_back(linalg::IndexOp::create(nb, l, source[k]));
            } else {
              Value v = args[inputOf[k]];
              if (v.getType().isInteger(1)) v = arith::ExtUIOp::create(nb, l, nb.getI64Type(), v);
              xi.push_back(clampIndex(nb, l, v, n));
            }
          }
          linalg::YieldOp::create(nb, l, tensor::ExtractOp::create(nb, l, x, xi).getResult());
        });
    return g.getResult(0);
  }

  Value iota(ir::IotaOp o) {
    auto out = o.getType();
    unsigned axis = static_cast<unsigned>(o.getAxis());
    Type et = out.getElementType();
    return indexed(out, identityOrder(out.getRank()), [&](OpBuilder& nb, Location l, ArrayRef<Value> idx) -> Value {
      Value i = arith::IndexCastOp::create(nb, l, nb.getI64Type(), idx[axis]);
      return convert(nb, l, i, et);
    });
  }
};

struct LowerToLinalgPass : PassWrapper<LowerToLinalgPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(LowerToLinalgPass)
  StringRef getArgument() const final { return "linnet-to-linalg"; }
  StringRef getDescription() const final { return "Lower the linnet dialect to linalg, tensor, arith, math and scf"; }
  void getDependentDialects(DialectRegistry& registry) const override {
    registry.insert<arith::ArithDialect, linalg::LinalgDialect, math::MathDialect, scf::SCFDialect,
                    tensor::TensorDialect>();
  }
  void runOnOperation() override {
    SmallVector<Operation*> ops;
    getOperation().walk([&](Operation* op) {
      if (isa<ir::LinnetDialect>(op->getDialect())) ops.push_back(op);
    });
    OpBuilder b(&getContext());
    Lowering lowering(b);
    // Users before producers: an op still sees which linnet op made each
    // operand (a gather reads an iota operand as its loop index). Types do
    // not change, so the replaced values fit their users either way.
    for (Operation* op : llvm::reverse(ops)) lowering.lower(op);
  }
};

}  // namespace

std::unique_ptr<Pass> createLowerToLinalgPass() { return std::make_unique<LowerToLinalgPass>(); }

void registerPasses() {
  PassRegistration<LowerToLinalgPass>();
  registerHoistConstantsPass();
}

}  // namespace linnet::transforms
