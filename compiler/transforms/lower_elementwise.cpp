// linnet-to-linalg, elementwise ops: unary, binary, select, cast and
// broadcast become parallel `linalg.generic`s whose indexing maps do the
// broadcasting; constant becomes arith.constant and iota a generic over
// its loop index. Floats of bf16/f16 compute in f32 and round once. Each
// pattern picks its scalar body by `kind` in one dispatch function; a kind
// with no body for the element type is a failed match, so an error.
#include "ir/dialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Transforms/DialectConversion.h"
#include "transforms/lowering.h"

namespace linnet::transforms::lowering {

namespace {

using namespace mlir;

// Scalar bodies. Float ones take and return f32 (the pattern widens and rounds).
using UnaryFn = Value (*)(OpBuilder&, Location, Value);
using BinaryFn = Value (*)(OpBuilder&, Location, Value, Value);

template <class Op>
Value unaryOf(OpBuilder& b, Location l, Value x) {
  return Op::create(b, l, x);
}
template <class Op>
Value binaryOf(OpBuilder& b, Location l, Value x, Value y) {
  return Op::create(b, l, x, y);
}
template <arith::CmpFPredicate P>
Value cmpF(OpBuilder& b, Location l, Value x, Value y) {
  return arith::CmpFOp::create(b, l, P, x, y);
}
template <arith::CmpIPredicate P>
Value cmpI(OpBuilder& b, Location l, Value x, Value y) {
  return arith::CmpIOp::create(b, l, P, x, y);
}

Value oneF32(OpBuilder& b, Location l) { return arith::ConstantOp::create(b, l, b.getF32FloatAttr(1.0f)); }

Value rsqrtF(OpBuilder& b, Location l, Value x) {
  Value one = oneF32(b, l);
  return arith::DivFOp::create(b, l, one, math::SqrtOp::create(b, l, x));
}

Value sigmoidF(OpBuilder& b, Location l, Value x) {
  Value one = oneF32(b, l);
  Value e = math::ExpOp::create(b, l, arith::NegFOp::create(b, l, x));
  return arith::DivFOp::create(b, l, one, arith::AddFOp::create(b, l, one, e));
}

Value notI(OpBuilder& b, Location l, Value x) {
  Type et = x.getType();
  if (et.isInteger(1)) return arith::XOrIOp::create(b, l, x, arith::ConstantIntOp::create(b, l, 1, 1));
  Value isZero = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, x, arith::ConstantIntOp::create(b, l, et, 0));
  return arith::ExtUIOp::create(b, l, et, isZero);
}

Value negI(OpBuilder& b, Location l, Value x) {
  return arith::SubIOp::create(b, l, arith::ConstantIntOp::create(b, l, x.getType(), 0), x);
}

Value absI(OpBuilder& b, Location l, Value x) {
  Value zero = arith::ConstantIntOp::create(b, l, x.getType(), 0);
  Value neg = arith::SubIOp::create(b, l, zero, x);
  Value isNeg = arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, x, zero);
  return arith::SelectOp::create(b, l, isNeg, neg, x);
}

// The language defines x / 0 = 0, x % 0 = 0, and MIN / -1 = MIN: no UB reaches LLVM.
Value divOrRemI(OpBuilder& b, Location l, Value x, Value y, bool rem) {
  Type et = x.getType();
  Value zero = arith::ConstantIntOp::create(b, l, et, 0);
  Value one = arith::ConstantIntOp::create(b, l, et, 1);
  Value minusOne = arith::ConstantIntOp::create(b, l, et, -1);
  Value yZero = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, y, zero);
  Value yMinusOne = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, y, minusOne);
  Value bad = arith::OrIOp::create(b, l, yZero, yMinusOne);
  Value safe = arith::SelectOp::create(b, l, bad, one, y);
  if (rem) return arith::SelectOp::create(b, l, bad, zero, arith::RemSIOp::create(b, l, x, safe));
  Value q = arith::DivSIOp::create(b, l, x, safe);
  Value negX = arith::SubIOp::create(b, l, zero, x);  // x / -1, wrapping at MIN
  q = arith::SelectOp::create(b, l, yMinusOne, negX, q);
  return arith::SelectOp::create(b, l, yZero, zero, q);
}
Value divI(OpBuilder& b, Location l, Value x, Value y) { return divOrRemI(b, l, x, y, false); }
Value remI(OpBuilder& b, Location l, Value x, Value y) { return divOrRemI(b, l, x, y, true); }

// A shift by a negative amount or by the width or more gives 0. `>>` is
// logical: it shifts the unsigned bits (docs/language.md §7), so -1 >> 1 is MAX.
Value shiftI(OpBuilder& b, Location l, Value x, Value y, bool left) {
  Type et = x.getType();
  Value zero = arith::ConstantIntOp::create(b, l, et, 0);
  Value width = arith::ConstantIntOp::create(b, l, et, et.getIntOrFloatBitWidth());
  Value bad = arith::OrIOp::create(b, l, arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, y, zero),
                                   arith::CmpIOp::create(b, l, arith::CmpIPredicate::sge, y, width));
  Value safe = arith::SelectOp::create(b, l, bad, zero, y);
  Value r = left ? Value(arith::ShLIOp::create(b, l, x, safe)) : Value(arith::ShRUIOp::create(b, l, x, safe));
  return arith::SelectOp::create(b, l, bad, zero, r);
}
Value shlI(OpBuilder& b, Location l, Value x, Value y) { return shiftI(b, l, x, y, true); }
Value shrI(OpBuilder& b, Location l, Value x, Value y) { return shiftI(b, l, x, y, false); }

// The body of unary `kind` on elements of type `et`; null when it has none.
UnaryFn unaryFn(ir::UnaryKind kind, Type et) {
  using K = ir::UnaryKind;
  bool isF = isa<FloatType>(et);
  switch (kind) {
    case K::Neg: return isF ? unaryOf<arith::NegFOp> : negI;
    case K::Not: return isF ? nullptr : notI;
    case K::Abs: return isF ? unaryOf<math::AbsFOp> : absI;
    case K::Exp: return isF ? unaryOf<math::ExpOp> : nullptr;
    case K::Log: return isF ? unaryOf<math::LogOp> : nullptr;
    case K::Sin: return isF ? unaryOf<math::SinOp> : nullptr;
    case K::Cos: return isF ? unaryOf<math::CosOp> : nullptr;
    case K::Tanh: return isF ? unaryOf<math::TanhOp> : nullptr;
    case K::Sqrt: return isF ? unaryOf<math::SqrtOp> : nullptr;
    case K::Rsqrt: return isF ? rsqrtF : nullptr;
    case K::Sigmoid: return isF ? sigmoidF : nullptr;
    case K::Floor: return isF ? unaryOf<math::FloorOp> : nullptr;
    case K::Erf: return isF ? unaryOf<math::ErfOp> : nullptr;
  }
  return nullptr;
}

// The body of binary `kind` on operands of element type `et`; null when it
// has none. Comparisons of i1 are unsigned (true > false).
BinaryFn binaryFn(ir::BinaryKind kind, Type et) {
  using K = ir::BinaryKind;
  using P = arith::CmpIPredicate;
  if (isa<FloatType>(et)) {
    switch (kind) {
      case K::Eq: return cmpF<arith::CmpFPredicate::OEQ>;
      case K::Ne: return cmpF<arith::CmpFPredicate::UNE>;
      case K::Lt: return cmpF<arith::CmpFPredicate::OLT>;
      case K::Le: return cmpF<arith::CmpFPredicate::OLE>;
      case K::Gt: return cmpF<arith::CmpFPredicate::OGT>;
      case K::Ge: return cmpF<arith::CmpFPredicate::OGE>;
      case K::Add: return binaryOf<arith::AddFOp>;
      case K::Sub: return binaryOf<arith::SubFOp>;
      case K::Mul: return binaryOf<arith::MulFOp>;
      case K::Div: return binaryOf<arith::DivFOp>;
      case K::Maximum: return binaryOf<arith::MaximumFOp>;
      case K::Minimum: return binaryOf<arith::MinimumFOp>;
      case K::Pow: return binaryOf<math::PowFOp>;
      case K::Or: case K::And: case K::BitOr: case K::BitXor: case K::BitAnd:
      case K::Shl: case K::Shr: case K::Rem: return nullptr;
    }
    return nullptr;
  }
  bool boolean = et.isInteger(1);
  switch (kind) {
    case K::Eq: return cmpI<P::eq>;
    case K::Ne: return cmpI<P::ne>;
    case K::Lt: return boolean ? BinaryFn(cmpI<P::ult>) : BinaryFn(cmpI<P::slt>);
    case K::Le: return boolean ? BinaryFn(cmpI<P::ule>) : BinaryFn(cmpI<P::sle>);
    case K::Gt: return boolean ? BinaryFn(cmpI<P::ugt>) : BinaryFn(cmpI<P::sgt>);
    case K::Ge: return boolean ? BinaryFn(cmpI<P::uge>) : BinaryFn(cmpI<P::sge>);
    case K::Add: return binaryOf<arith::AddIOp>;
    case K::Sub: return binaryOf<arith::SubIOp>;
    case K::Mul: return binaryOf<arith::MulIOp>;
    case K::BitAnd: case K::And: return binaryOf<arith::AndIOp>;
    case K::BitOr: case K::Or: return binaryOf<arith::OrIOp>;
    case K::BitXor: return binaryOf<arith::XOrIOp>;
    case K::Maximum: return binaryOf<arith::MaxSIOp>;
    case K::Minimum: return binaryOf<arith::MinSIOp>;
    case K::Div: return divI;
    case K::Rem: return remI;
    case K::Shl: return shlI;
    case K::Shr: return shrI;
    case K::Pow: return nullptr;
  }
  return nullptr;
}

LogicalResult noKind(ConversionPatternRewriter& rw, Operation* op, StringRef kind, Type et) {  // kind: as printed
  return rw.notifyMatchFailure(op, [&](Diagnostic& d) { d << "no lowering of kind `" << kind << "` for " << et; });
}

struct LowerUnary : OpConversionPattern<ir::UnaryOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ir::UnaryOp op, OpAdaptor a, ConversionPatternRewriter& rw) const override {
    Type et = op.getType().getElementType();
    UnaryFn fn = unaryFn(op.getKind(), et);
    if (!fn) return noKind(rw, op, ir::stringifyEnum(op.getKind()), et);
    bool isF = isa<FloatType>(et);
    rw.replaceOp(op, elementwise(rw, op.getLoc(), op.getType(), {a.getX()},
                                 [&](OpBuilder& b, Location l, ValueRange v) -> Value {
                                   if (!isF) return fn(b, l, v[0]);
                                   return fromF32(b, l, fn(b, l, toF32(b, l, v[0])), et);
                                 }));
    return success();
  }
};

struct LowerBinary : OpConversionPattern<ir::BinaryOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ir::BinaryOp op, OpAdaptor a, ConversionPatternRewriter& rw) const override {
    Type et = typeOf(a.getLhs()).getElementType();
    Type rt = op.getType().getElementType();
    BinaryFn fn = binaryFn(op.getKind(), et);
    if (!fn) return noKind(rw, op, ir::stringifyEnum(op.getKind()), et);
    bool isF = isa<FloatType>(et);
    rw.replaceOp(op, elementwise(rw, op.getLoc(), op.getType(), {a.getLhs(), a.getRhs()},
                                 [&](OpBuilder& b, Location l, ValueRange v) -> Value {
                                   if (!isF) return fn(b, l, v[0], v[1]);
                                   Value x = toF32(b, l, v[0]), y = toF32(b, l, v[1]);
                                   // Comparisons give i1, which fromF32 leaves alone.
                                   return fromF32(b, l, fn(b, l, x, y), rt);
                                 }));
    return success();
  }
};

struct LowerSelect : OpConversionPattern<ir::SelectOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ir::SelectOp op, OpAdaptor a, ConversionPatternRewriter& rw) const override {
    rw.replaceOp(op, elementwise(rw, op.getLoc(), op.getType(), {a.getCond(), a.getA(), a.getB()},
                                 [&](OpBuilder& b, Location l, ValueRange v) -> Value {
                                   return arith::SelectOp::create(b, l, v[0], v[1], v[2]);
                                 }));
    return success();
  }
};

// Integer `x` (i32 or i64) rounded to `p` significant bits, ties to even,
// in integers, as an f32: that value is exact in f32 and in bf16 (p = 8) or
// f16 (p = 11), so whatever lowers the truncf after it (arith-expand's bf16
// expansion, LLVM) cannot round again. sitofp to f32 then
// truncf rounds twice: 2^24 + 2^16 + 1 becomes 2^24 + 2^16 in f32, a tie
// that goes to 2^24, not to the nearest bf16, 2^24 + 2^17 (the reference's
// intToFloat rounds the same way as this). f16 overflows in the truncf:
// 65520 rounds to 65536 here, then to inf.
Value roundToBits(OpBuilder& b, Location l, Value x, unsigned p) {
  Type et = x.getType();
  unsigned w = et.getIntOrFloatBitWidth();
  auto c = [&](int64_t v) -> Value { return arith::ConstantIntOp::create(b, l, et, v); };
  Value one = c(1);
  Value a = math::AbsIOp::create(b, l, x);  // |MIN| wraps to MIN, 2^(w-1) as unsigned
  Value bitsPastP = arith::SubIOp::create(b, l, c(w - p), math::CountLeadingZerosOp::create(b, l, a));
  Value s = arith::MaxSIOp::create(b, l, bitsPastP, c(0));  // how many low bits go
  Value unit = arith::ShLIOp::create(b, l, one, s);
  Value low = arith::SubIOp::create(b, l, unit, one);
  Value halfMinusOne = arith::SubIOp::create(b, l, arith::ShRUIOp::create(b, l, unit, one), one);
  Value keptOdd = arith::AndIOp::create(b, l, arith::ShRUIOp::create(b, l, a, s), one);
  // a + half - 1 + (kept part odd), low bits cleared: ties go to even. No
  // unsigned overflow: a <= 2^(w-1) and half <= 2^(w-p-1).
  Value biased = arith::AddIOp::create(b, l, arith::AddIOp::create(b, l, a, halfMinusOne), keptOdd);
  Value r = arith::AndIOp::create(b, l, biased, arith::XOrIOp::create(b, l, low, c(-1)));
  Value exact = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, s, c(0));
  r = arith::SelectOp::create(b, l, exact, a, r);
  // r <= 2^(w-1) can be MIN as a signed integer: convert unsigned, then negate.
  Value f = arith::UIToFPOp::create(b, l, b.getF32Type(), r);
  Value neg = arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, x, c(0));
  return arith::SelectOp::create(b, l, neg, arith::NegFOp::create(b, l, f), f);
}

// One element converted to `to`: floats round to nearest even; a float that
// is not finite or out of the i64 range becomes 0, as the reference defines it.
Value convert(OpBuilder& b, Location l, Value x, Type to) {
  Type from = x.getType();
  if (from == to) return x;
  if (isa<FloatType>(from) && isa<FloatType>(to)) {
    Value f = toF32(b, l, x);
    return to.isF32() ? f : Value(arith::TruncFOp::create(b, l, to, f));
  }
  if (isa<IntegerType>(from) && isa<FloatType>(to)) {
    if (from.isInteger(1)) return fromF32(b, l, arith::UIToFPOp::create(b, l, b.getF32Type(), x), to);
    // sitofp to f32 rounds once; to bf16 or f16 the integer must round itself.
    if (to.isF32()) return arith::SIToFPOp::create(b, l, to, x);
    return fromF32(b, l, roundToBits(b, l, x, to.isBF16() ? 8 : 11), to);
  }
  if (isa<FloatType>(from)) {
    Value f = toF32(b, l, x);
    if (to.isInteger(1)) {
      Value zero = arith::ConstantOp::create(b, l, b.getF32FloatAttr(0.0f));
      return arith::CmpFOp::create(b, l, arith::CmpFPredicate::UNE, f, zero);
    }
    Value absF = math::AbsFOp::create(b, l, f);
    Value limit = arith::ConstantOp::create(b, l, b.getF32FloatAttr(9.2e18f));
    Value ok = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OLT, absF, limit);
    Value zero = arith::ConstantOp::create(b, l, b.getF32FloatAttr(0.0f));
    Value safe = arith::SelectOp::create(b, l, ok, f, zero);
    Value i = arith::FPToSIOp::create(b, l, b.getI64Type(), safe);
    return to.isInteger(64) ? i : Value(arith::TruncIOp::create(b, l, to, i));
  }
  unsigned fw = from.getIntOrFloatBitWidth(), tw = to.getIntOrFloatBitWidth();
  if (tw == 1) {
    Value zero = arith::ConstantIntOp::create(b, l, from, 0);
    return arith::CmpIOp::create(b, l, arith::CmpIPredicate::ne, x, zero);
  }
  if (fw == 1) return arith::ExtUIOp::create(b, l, to, x);
  if (fw < tw) return arith::ExtSIOp::create(b, l, to, x);
  return arith::TruncIOp::create(b, l, to, x);
}

struct LowerCast : OpConversionPattern<ir::CastOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ir::CastOp op, OpAdaptor a, ConversionPatternRewriter& rw) const override {
    Type to = op.getType().getElementType();
    rw.replaceOp(op, elementwise(rw, op.getLoc(), op.getType(), {a.getX()},
                                 [&](OpBuilder& b, Location l, ValueRange v) { return convert(b, l, v[0], to); }));
    return success();
  }
};

struct LowerBroadcast : OpConversionPattern<ir::BroadcastOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ir::BroadcastOp op, OpAdaptor a, ConversionPatternRewriter& rw) const override {
    rw.replaceOp(op, elementwise(rw, op.getLoc(), op.getType(), {a.getX()},
                                 [](OpBuilder&, Location, ValueRange v) -> Value { return v[0]; }));
    return success();
  }
};

struct LowerConstant : OpConversionPattern<ir::ConstantOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ir::ConstantOp op, OpAdaptor, ConversionPatternRewriter& rw) const override {
    auto value = llvm::dyn_cast<TypedAttr>(op.getValue());
    if (!value) return rw.notifyMatchFailure(op, "the value is not a typed attribute");
    rw.replaceOpWithNewOp<arith::ConstantOp>(op, op.getType(), value);
    return success();
  }
};

struct LowerIota : OpConversionPattern<ir::IotaOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(ir::IotaOp op, OpAdaptor, ConversionPatternRewriter& rw) const override {
    auto out = op.getType();
    auto axis = static_cast<unsigned>(op.getAxis());
    Type et = out.getElementType();
    rw.replaceOp(op, indexed(rw, op.getLoc(), out, identityOrder(out.getRank()),
                             [&](OpBuilder& b, Location l, ArrayRef<Value> idx) -> Value {
                               Value i = arith::IndexCastOp::create(b, l, b.getI64Type(), idx[axis]);
                               return convert(b, l, i, et);
                             }));
    return success();
  }
};

}  // namespace

void populateElementwisePatterns(RewritePatternSet& patterns) {
  patterns.add<LowerUnary, LowerBinary, LowerSelect, LowerCast, LowerBroadcast, LowerConstant, LowerIota>(
      patterns.getContext());
}

}  // namespace linnet::transforms::lowering
