#include "autodiff/token_log_probs.h"

#include <algorithm>
#include <utility>

namespace linnet::autodiff {

namespace {

using sema::BinaryKind;
using sema::ReduceKind;
using sema::UnaryKind;

// P positions in n chunks of C rows, and a tail of fewer rows after them.
struct Split {
  int64_t P, H, V, C, n, tail;
  Scalar dtype;  // x's and the weight's

  Split(const Expr* x, const Expr* weight) {
    P = Emitter::typeOf(x).shape[0], H = Emitter::typeOf(x).shape[1], V = Emitter::typeOf(weight).shape[0];
    C = tokenChunkRows(P, V);
    n = P / C;
    tail = P - n * C;
    dtype = Emitter::typeOf(x).dtype;
  }
  // The chunks' rows of `v` [P, ...] as [n, C, ...].
  const Expr* chunks(Emitter& em, const Expr* v) const {
    Shape shape = Emitter::typeOf(v).shape;
    shape[0] = C;
    shape.insert(shape.begin(), n);
    return em.reshape(tail ? em.slice(v, 0, 0, n * C) : v, shape);
  }
  const Expr* tailRows(Emitter& em, const Expr* v) const { return em.slice(v, 0, n * C, P); }
};

// One chunk's logits [C, V] and log-normalizers [C, 1] (f32), and where
// each row's target is [C, V].
struct Rows {
  const Expr *logits, *norm, *hit;
};

Rows rowsOf(Emitter& em, const Expr* xc, const Expr* weight, const Expr* tc) {
  const int64_t C = Emitter::typeOf(xc).shape[0], V = Emitter::typeOf(weight).shape[0];
  const Expr* logits = em.cast(em.matmul(xc, em.swapLastTwo(weight)), Scalar::F32);
  const Expr* peak = em.reduce(ReduceKind::Max, logits, 1, true);
  const Expr* total = em.reduce(ReduceKind::Sum, em.unary(UnaryKind::Exp, em.binary(BinaryKind::Sub, logits, peak)),
                                1, true);
  const Expr* norm = em.binary(BinaryKind::Add, em.unary(UnaryKind::Log, total), peak);
  // A target outside [0, V) hits nothing: its logit counts as 0, as the
  // library function's select has it.
  const Expr* columns = em.iota(Emitter::typeOf(tc).dtype, {C, V}, 1);
  return {logits, norm, em.binary(BinaryKind::Eq, columns, em.reshape(tc, {C, 1}))};
}

const Expr* logProbsOf(Emitter& em, const Rows& r) {
  const Expr* own = em.reduce(ReduceKind::Sum, em.select(r.hit, r.logits, em.constant(Scalar::F32, 0)), 1, false);
  return em.binary(BinaryKind::Sub, own, em.reshape(r.norm, {Emitter::typeOf(own).shape[0]}));
}

// The logits' cotangent g (onehot(target) - softmax), in the product's
// dtype; a null g is ones.
const Expr* logitsCotangent(Emitter& em, const Rows& r, const Expr* gc, Scalar dtype) {
  const Expr* probs = em.unary(UnaryKind::Exp, em.binary(BinaryKind::Sub, r.logits, r.norm));
  const Expr* d = em.binary(BinaryKind::Sub, em.cast(r.hit, Scalar::F32), probs);
  if (gc) d = em.binary(BinaryKind::Mul, d, em.reshape(gc, {Emitter::typeOf(gc).shape[0], 1}));
  return em.cast(d, dtype);
}

// A chunk's log-probabilities [C], and its unit dx [C, H] where `unit`.
std::pair<const Expr*, const Expr*> forwardRows(Emitter& em, const Split& s, const Expr* xc, const Expr* weight,
                                                const Expr* tc, bool unit) {
  const Rows r = rowsOf(em, xc, weight, tc);
  return {logProbsOf(em, r), unit ? em.matmul(logitsCotangent(em, r, nullptr, s.dtype), weight) : nullptr};
}

}  // namespace

bool isTokenLogProbs(const elab::FnInstance& callee) {
  if (!callee.module || callee.module->name != "std.nn.loss" || callee.decl->name.name != "split_token_log_probs")
    return false;
  auto shards = callee.env.dims.find("Shards");
  return shards != callee.env.dims.end() && shards->second == 1;
}

int64_t tokenChunkRows(int64_t P, int64_t V) {
  const int64_t cap = std::clamp<int64_t>((int64_t{1} << 23) / std::max<int64_t>(V, 1), 1, 128);
  return std::min(P, cap);
}

const Expr* writeTokenLogProbs(Emitter& em, const Expr* x, const Expr* weight, const Expr* targets,
                               bool weightActive, TokenLogProbsTape& record) {
  const Split s(x, weight);
  const bool unit = !weightActive;
  const Expr* xs = s.chunks(em, x);
  const Expr* ts = s.chunks(em, targets);
  std::vector<elab::SlotId> vars = {em.let(em.zeros(Scalar::F32, {s.n, s.C}), "token_log_probs")};
  if (unit) vars.push_back(em.let(em.zeros(s.dtype, {s.n, s.C, s.H}), "head_unit_dx"));
  em.countedLoop(s.n, vars, [&](const Expr* i) {
    auto [chunk, dx] = forwardRows(em, s, em.sliceAt(xs, i), weight, em.sliceAt(ts, i), unit);
    em.assign(vars[0], em.writeAt(em.local(vars[0]), em.reshape(chunk, {1, s.C}), i));
    if (unit) em.assign(vars[1], em.writeAt(em.local(vars[1]), em.reshape(dx, {1, s.C, s.H}), i));
  });
  std::vector<const Expr*> parts = {em.reshape(em.local(vars[0]), {s.n * s.C})}, dxParts;
  if (unit) dxParts.push_back(em.reshape(em.local(vars[1]), {s.n * s.C, s.H}));
  if (s.tail) {
    auto [chunk, dx] = forwardRows(em, s, s.tailRows(em, x), weight, s.tailRows(em, targets), unit);
    parts.push_back(chunk);
    if (unit) dxParts.push_back(dx);
  }
  record = {x, weight, targets, unit ? em.concat(dxParts, 0) : nullptr};
  return em.concat(parts, 0);
}

void tokenLogProbsVjp(Emitter& em, const TokenLogProbsTape& a, const Expr* g, const Cotangents& out) {
  const bool needX = out.needs(0), needW = out.needs(1);
  if (!needX && !needW) return;
  const Split s(a.x, a.weight);
  if (a.unitDx && !needW) {  // scaled in f32, rounded once to x's dtype
    const Expr* scaled = em.binary(BinaryKind::Mul, em.reshape(em.cast(g, Scalar::F32), {s.P, 1}),
                                   em.cast(a.unitDx, Scalar::F32));
    out.give(0, em.cast(scaled, s.dtype));
    return;
  }
  const Expr* gf = em.cast(g, Scalar::F32);
  // One chunk's (or the tail's) rows' cotangent, and its term of the
  // weight's (f32); each null where not needed.
  auto chunk = [&](const Expr* xc, const Expr* tc, const Expr* gc) -> std::pair<const Expr*, const Expr*> {
    const Expr* d = logitsCotangent(em, rowsOf(em, xc, a.weight, tc), gc, s.dtype);
    return {needX ? em.matmul(d, a.weight) : nullptr,
            needW ? em.cast(em.matmul(em.swapLastTwo(d), xc), Scalar::F32) : nullptr};
  };
  const Expr* xs = s.chunks(em, a.x);
  const Expr* ts = s.chunks(em, a.targets);
  const Expr* gs = s.chunks(em, gf);
  std::vector<elab::SlotId> vars;
  elab::SlotId dX = -1, dW = -1;
  if (needX) vars.push_back(dX = em.let(em.zeros(s.dtype, {s.n, s.C, s.H}), "d_head_rows"));
  if (needW) vars.push_back(dW = em.let(em.zeros(Scalar::F32, {s.V, s.H}), "d_head_weight"));
  em.countedLoop(s.n, vars, [&](const Expr* i) {
    auto [dx, dw] = chunk(em.sliceAt(xs, i), em.sliceAt(ts, i), em.sliceAt(gs, i));
    if (needX) em.assign(dX, em.writeAt(em.local(dX), em.reshape(dx, {1, s.C, s.H}), i));
    if (needW) em.assign(dW, em.binary(BinaryKind::Add, em.local(dW), dw));
  });
  std::vector<const Expr*> dxParts;
  const Expr* dWeight = needW ? em.local(dW) : nullptr;
  if (needX) dxParts.push_back(em.reshape(em.local(dX), {s.n * s.C, s.H}));
  if (s.tail) {
    auto [dx, dw] = chunk(s.tailRows(em, a.x), s.tailRows(em, a.targets), s.tailRows(em, gf));
    if (needX) dxParts.push_back(dx);
    if (needW) dWeight = em.binary(BinaryKind::Add, dWeight, dw);
  }
  if (needX) out.give(0, em.concat(dxParts, 0));
  if (needW) out.give(1, dWeight);
}

}  // namespace linnet::autodiff
