// linnet-expand-attention: each `linnet.attention` becomes the ops that
// define it (LinnetOps.td), run on the keys its mask can reach.
//
// Keys past the last one that any query sees contribute nothing: their
// scores are -3e38, so exp(score - max) is exactly 0, their probability is
// exactly 0, and adding 0 * v changes no sum. So the ops run on a prefix
// of the keys whose length is chosen at run time among a few static ones
// (64, 128, 256, ..., K): a decode step at position p costs about p keys,
// not the cache's MaxSeq. The prefix is exact (bitwise the whole-length
// result) when every query that sees a key has a score above -3e38 and the
// values past the prefix are finite, which a cache written by a model
// holds; a mask with a row that sees no key (its softmax is uniform over
// all K) takes the whole length.
//
// The branch needs the length on the host. The cuda target
// (SharedOptions::KeyPrefix::LibraryProducts) reads it back from the
// device only where the scores go to its library (a prefill's, whose sizes
// the host sets); elsewhere it runs the whole length, so a CUDA graph can
// hold the call, and its own product kernels skip the same keys on the
// device instead: the scores compute only the keys some query sees
// (keep_columns) and the values product skips keys whose probability is
// exactly 0 (skip_zero_terms), under the same condition on the values.
#include "ir/dialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"
#include "sema/primitives.h"
#include "transforms/passes.h"

namespace linnet::transforms {

namespace {

using namespace mlir;

constexpr int64_t kShortestPrefix = 64;
// needed() counts keys in f32, exactly below this.
constexpr int64_t kCountedKeys = int64_t(1) << 24;

struct Expander {
  OpBuilder& b;
  Location loc;
  ir::AttentionOp op;
  int64_t r;                    // k's rank: [..L, K, D]
  SmallVector<int64_t> lead;    // ..L
  Type t;                       // q, k and v's element type
  const SharedOptions& options;

  Expander(OpBuilder& builder, ir::AttentionOp attention, const SharedOptions& options)
      : b(builder), loc(attention.getLoc()), op(attention), options(options) {
    auto k = op.getK().getType();
    r = k.getRank();
    lead.assign(k.getShape().begin(), k.getShape().end() - 2);
    t = k.getElementType();
  }

  RankedTensorType type(ArrayRef<int64_t> tail, Type element) const {
    SmallVector<int64_t> shape(lead);
    shape.append(tail.begin(), tail.end());
    return RankedTensorType::get(shape, element);
  }
  int64_t keys() { return op.getK().getType().getShape()[r - 2]; }

  // `x`'s first `n` positions along `axis`: a static slice.
  Value prefix(Value x, int64_t axis, int64_t n) {
    auto xt = cast<RankedTensorType>(x.getType());
    if (xt.getShape()[axis] == n) return x;
    SmallVector<int64_t> items(xt.getRank(), -1), lo(xt.getRank(), 0), hi(xt.getShape());
    hi[axis] = n;
    return ir::SliceOp::create(b, loc, RankedTensorType::get(hi, xt.getElementType()), x, ValueRange{},
                               b.getDenseI64ArrayAttr(items), b.getDenseI64ArrayAttr(lo), b.getDenseI64ArrayAttr(hi));
  }
  Value castTo(Value x, Type to) {
    auto xt = cast<RankedTensorType>(x.getType());
    if (xt.getElementType() == to) return x;
    return ir::CastOp::create(b, loc, RankedTensorType::get(xt.getShape(), to), x);
  }
  Value reshape(Value x, RankedTensorType to) { return ir::ReshapeOp::create(b, loc, to, x); }
  Value binary(ir::BinaryKind kind, Value x, Value y, RankedTensorType to) {
    return ir::BinaryOp::create(b, loc, to, kind, x, y);
  }
  Value reduce(ir::ReduceKind kind, Value x, ArrayRef<int64_t> axes, bool keepdims, RankedTensorType to) {
    return ir::ReduceOp::create(b, loc, to, ir::ReduceKindAttr::get(b.getContext(), kind), x,
                                b.getDenseI64ArrayAttr(axes), keepdims ? b.getUnitAttr() : nullptr);
  }
  Value scalar(Type element, Attribute value) {
    auto ty = RankedTensorType::get({}, element);
    return ir::ConstantOp::create(b, loc, ty, DenseElementsAttr::get(ty, value));
  }

  // The definition over the first `n` keys, as std.nn.attention wrote it.
  Value over(int64_t n) {
    auto qt = op.getQ().getType();
    int64_t G = qt.getShape()[r - 2], Q = qt.getShape()[r - 1], D = qt.getShape()[r];
    int64_t E = op.getV().getType().getShape()[r - 1];
    Type f32 = b.getF32Type();
    Value k = prefix(op.getK(), r - 2, n), v = prefix(op.getV(), r - 2, n);
    auto mt = op.getMask().getType();
    Value mask = mt.getShape().back() == keys() ? prefix(op.getMask(), mt.getRank() - 1, n) : op.getMask();
    // q k^T with k read row by row (transpose_b, canonicalization's form).
    auto scoresOp = ir::MatmulOp::create(b, loc, type({G * Q, n}, t), reshape(op.getQ(), type({G * Q, D}, t)), k,
                                         Value(), b.getUnitAttr(), nullptr);
    if (n == keys() && targetKeepsDecodeProduct(scoresOp, options)) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(scoresOp);
      if (Value keep = keptKeys()) scoresOp.getKeepColumnsMutable().assign(keep);
    }
    Value scores = scoresOp;
    scores = binary(ir::BinaryKind::Mul, castTo(scores, f32), op.getScale(), type({G * Q, n}, f32));
    scores = reshape(castTo(castTo(scores, t), f32), type({G, Q, n}, f32));
    Value masked = scalar(f32, b.getF32FloatAttr(static_cast<float>(sema::kAttentionMasked)));
    scores = ir::SelectOp::create(b, loc, type({G, Q, n}, f32), mask, scores, masked);
    Value peak = reduce(ir::ReduceKind::Max, scores, {r}, true, type({G, Q, 1}, f32));
    Value e = ir::UnaryOp::create(b, loc, type({G, Q, n}, f32), ir::UnaryKind::Exp,
                                  binary(ir::BinaryKind::Sub, scores, peak, type({G, Q, n}, f32)));
    Value total = reduce(ir::ReduceKind::Sum, e, {r}, true, type({G, Q, 1}, f32));
    Value probs = binary(ir::BinaryKind::Div, e, total, type({G, Q, n}, f32));
    Value weights = reshape(castTo(probs, t), type({G * Q, n}, t));
    auto mixed = ir::MatmulOp::create(b, loc, type({G * Q, E}, t), weights, v, Value(), nullptr, nullptr);
    if (targetKeepsDecodeProduct(mixed, options)) mixed.setSkipZeroTerms(true);
    return reshape(mixed, type({G, Q, E}, t));
  }

  // The mask as [R, K] when it is the same for every ..L and head (its
  // leading axes are 1): the scores' keep_columns, so a target's product
  // computes only the keys some query sees. A key no query sees has
  // probability exactly 0 everywhere, and the values product skips it
  // (skip_zero_terms): a decode step at position p reads about p keys of
  // the cache, not MaxSeq. Null for any other mask.
  Value keptKeys() {
    auto mt = op.getMask().getType();
    int64_t mr = mt.getRank();
    if (mr < 1 || mt.getShape().back() != keys()) return Value();
    for (int64_t i = 0; i + 2 < mr; ++i)
      if (mt.getShape()[i] != 1) return Value();
    int64_t rows = mr >= 2 ? mt.getShape()[mr - 2] : 1;
    auto to = RankedTensorType::get({rows, keys()}, mt.getElementType());
    return mt == to ? op.getMask() : reshape(op.getMask(), to);
  }

  // How many keys the ops must cover (i64): one past the last key any
  // query sees, or all of them when some query sees none. Two max
  // reductions over rows, which a target's row kernels take (cuda: a warp a
  // row): each row's end (one past its last key seen, K for a row that sees
  // none), then the largest. Counted in f32: exact, since run() asks only
  // for fewer than 2^24 keys.
  Value needed() {
    auto mt = op.getMask().getType();
    int64_t mr = mt.getRank(), K = keys();
    Type f32 = b.getF32Type(), i64 = b.getI64Type();
    auto like = [&](ArrayRef<int64_t> shape, Type e) { return RankedTensorType::get(shape, e); };
    SmallVector<int64_t> rows(mt.getShape().drop_back());
    Value keyEnds =
        castTo(binary(ir::BinaryKind::Add, ir::IotaOp::create(b, loc, like({K}, i64), b.getI64IntegerAttr(0)),
                      scalar(i64, b.getI64IntegerAttr(1)), like({K}, i64)),
               f32);
    Value seen = ir::SelectOp::create(b, loc, like(mt.getShape(), f32), op.getMask(), keyEnds,
                                      scalar(f32, b.getF32FloatAttr(0)));
    Value rowEnd = reduce(ir::ReduceKind::Max, seen, {mr - 1}, false, like(rows, f32));
    Value none = binary(ir::BinaryKind::Eq, rowEnd, scalar(f32, b.getF32FloatAttr(0)), like(rows, b.getI1Type()));
    Value need = ir::SelectOp::create(b, loc, like(rows, f32), none,
                                      scalar(f32, b.getF32FloatAttr(static_cast<float>(K))), rowEnd);
    if (!rows.empty()) {
      int64_t count = 1;
      for (int64_t d : rows) count *= d;
      if (rows.size() > 1) need = reshape(need, like({count}, f32));
      need = reduce(ir::ReduceKind::Max, need, {0}, false, like({}, f32));
    }
    Value value = tensor::ExtractOp::create(b, loc, need, ValueRange{});
    return arith::FPToSIOp::create(b, loc, i64, value);
  }

  // Whether the scores over every key would be a product the target leaves
  // to its library with more rows than decode's (a prefill's).
  bool scoresGoToLibrary() {
    auto qt = op.getQ().getType();
    int64_t G = qt.getShape()[r - 2], Q = qt.getShape()[r - 1], D = qt.getShape()[r];
    if (G * Q < SharedOptions::kMinLibraryRows) return false;
    Value q = reshape(op.getQ(), type({G * Q, D}, t));
    auto probe =
        ir::MatmulOp::create(b, loc, type({G * Q, keys()}, t), q, op.getK(), Value(), b.getUnitAttr(), nullptr);
    bool library = targetKeepsLibraryProduct(probe, options);
    probe.erase();
    q.getDefiningOp()->erase();
    return library;
  }

  bool wantsPrefix() {
    using P = SharedOptions::KeyPrefix;
    auto mt = op.getMask().getType();
    if (options.attentionKeyPrefix == P::Never || mt.getShape().back() != keys() || keys() >= kCountedKeys)
      return false;
    return options.attentionKeyPrefix == P::Always || scoresGoToLibrary();
  }

  void run() {
    int64_t K = keys();
    SmallVector<int64_t> lengths;
    b.setInsertionPoint(op);
    if (wantsPrefix())
      for (int64_t n = kShortestPrefix; n < K; n *= 2) lengths.push_back(n);
    lengths.push_back(K);
    if (lengths.size() == 1) {
      op.replaceAllUsesWith(over(K));
      op.erase();
      return;
    }
    // Case j covers lengths[j] keys: j = how many shorter lengths fall short.
    Value need = needed();
    Type i64 = b.getI64Type();
    Value which = arith::ConstantIntOp::create(b, loc, i64, 0);
    for (size_t j = 0; j + 1 < lengths.size(); ++j) {
      Value shortOf = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, need,
                                            arith::ConstantIntOp::create(b, loc, i64, lengths[j]));
      which = arith::AddIOp::create(b, loc, which, arith::ExtUIOp::create(b, loc, i64, shortOf));
    }
    which = arith::IndexCastOp::create(b, loc, b.getIndexType(), which);
    SmallVector<int64_t> cases;
    for (size_t j = 0; j + 1 < lengths.size(); ++j) cases.push_back(static_cast<int64_t>(j));
    auto sw = scf::IndexSwitchOp::create(b, loc, TypeRange{op.getType()}, which, cases, cases.size());
    auto fill = [&](Region& region, int64_t n) {
      OpBuilder::InsertionGuard guard(b);
      b.createBlock(&region);
      scf::YieldOp::create(b, loc, over(n));
    };
    for (size_t j = 0; j < cases.size(); ++j) fill(sw.getCaseRegions()[j], lengths[j]);
    fill(sw.getDefaultRegion(), K);
    op.replaceAllUsesWith(sw.getResult(0));
    op.erase();
  }
};

struct ExpandAttentionPass : PassWrapper<ExpandAttentionPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ExpandAttentionPass)
  ExpandAttentionPass() = default;
  explicit ExpandAttentionPass(const SharedOptions& options) : options(options) {}
  SharedOptions options;
  StringRef getArgument() const final { return "linnet-expand-attention"; }
  StringRef getDescription() const final {
    return "Expand linnet.attention into its defining ops over the keys its mask can reach";
  }
  void getDependentDialects(DialectRegistry& registry) const override {
    registry.insert<arith::ArithDialect, scf::SCFDialect, tensor::TensorDialect>();
  }
  void runOnOperation() override {
    SmallVector<ir::AttentionOp> ops;
    getOperation().walk([&](ir::AttentionOp op) {
      if (!targetKeepsAttention(op, options)) ops.push_back(op);
    });
    OpBuilder b(&getContext());
    for (ir::AttentionOp op : ops) Expander(b, op, options).run();
  }
};

}  // namespace

std::unique_ptr<Pass> createExpandAttentionPass(const SharedOptions& options) {
  return std::make_unique<ExpandAttentionPass>(options);
}
void registerExpandAttentionPass() { PassRegistration<ExpandAttentionPass>(); }

}  // namespace linnet::transforms
