#include "autodiff/attention.h"

namespace linnet::autodiff {

namespace {

using sema::BinaryKind;
using sema::ReduceKind;

// q [..., G, Q, D], k [..., K, D], v [..., K, E]: the leading axes and sizes.
struct Dims {
  Shape lead;
  int64_t G, Q, D, K, E;
  int axis;  // the key axis of [..., G, Q, K]
  Scalar dt;

  Dims(const Expr* q, const Expr* k, const Expr* v) {
    const Shape& ks = Emitter::typeOf(k).shape;
    const Shape& qs = Emitter::typeOf(q).shape;
    const int r = static_cast<int>(ks.size());
    lead.assign(ks.begin(), ks.end() - 2);
    G = qs[r - 2], Q = qs[r - 1], D = qs[r], K = ks[r - 2], E = Emitter::typeOf(v).shape[r - 1];
    axis = r;
    dt = Emitter::typeOf(q).dtype;
  }
  Shape with(Shape tail) const {
    Shape s = lead;
    s.insert(s.end(), tail.begin(), tail.end());
    return s;
  }
};

// q k^T [..., G * Q, K], in q's dtype.
const Expr* rawScores(Emitter& em, const Dims& d, const Expr* q, const Expr* k) {
  return em.matmul(em.reshape(q, d.with({d.G * d.Q, d.D})), em.swapLastTwo(k));
}

// The scores the softmax reads [..., G, Q, K], f32: scaled (rounded to
// q's dtype, as the primitive does) and masked.
const Expr* maskedScores(Emitter& em, const Dims& d, const Expr* raw, const Expr* scale, const Expr* mask) {
  const Expr* scaled = em.cast(em.binary(BinaryKind::Mul, em.cast(raw, Scalar::F32), scale), d.dt);
  const Expr* rows = em.reshape(em.cast(scaled, Scalar::F32), d.with({d.G, d.Q, d.K}));
  return em.select(mask, rows, em.constant(Scalar::F32, sema::kAttentionMasked));
}

// exp(scores - max), with a masked key's term 0 as exp(-3e38 - max) rounds
// it, but without exp reading -3e38: a vector exp takes its slow path there
// (a scalar call, and errno, per such lane: a tenth of a training step). A
// row that sees no key (its max is the masked value) keeps exp(0) = 1 for
// every key, as the primitive defines it.
const Expr* maskedExp(Emitter& em, const Expr* scores, const Expr* max, const Expr* mask) {
  const Expr* masked = em.constant(Scalar::F32, sema::kAttentionMasked);
  const Expr* counted = em.binary(BinaryKind::Or, mask, em.binary(BinaryKind::Eq, max, masked));
  const Expr* zero = em.constant(Scalar::F32, 0);
  const Expr* e = em.unary(sema::UnaryKind::Exp, em.select(counted, em.binary(BinaryKind::Sub, scores, max), zero));
  return em.select(counted, e, zero);
}

// The kernel's forward: [..., G, Q, E + 2] sliced into the output and the
// row statistics.
const Expr* kernelAttention(Emitter& em, const Dims& d, const Expr* q, const Expr* k, const Expr* v,
                            const Expr* scale, const Expr* mask, AttentionTape& record,
                            std::set<elab::SlotId>& detached) {
  const Expr* rows = em.bind(em.raw(ExprKind::AttentionRows, elab::Type::of({Scalar::F32, d.with({d.G, d.Q, d.E + 2})}),
                                    {q, k, v, scale, mask}),
                             "attention_rows");
  const Expr* out = em.bind(em.slice(rows, d.axis, 0, d.E), "attention");
  const Expr* max = em.bind(em.slice(rows, d.axis, d.E, d.E + 1), "row_max");
  const Expr* sum = em.bind(em.slice(rows, d.axis, d.E + 1, d.E + 2), "row_sum");
  detached.insert(max->slot);
  detached.insert(sum->slot);
  record = {q, k, v, scale, mask, nullptr, nullptr, max, sum, true};
  return out;
}

}  // namespace

bool attentionKernelTakes(const Expr* q, const Expr* k, const Expr* v) {
  const auto f32 = [](const Expr* x) { return Emitter::typeOf(x).dtype == Scalar::F32; };
  return f32(q) && f32(k) && f32(v) && Emitter::typeOf(k).shape.size() <= 4;
}

const Expr* writeAttention(Emitter& em, const Expr* q, const Expr* k, const Expr* v, const Expr* scale,
                           const Expr* mask, bool kernel, AttentionTape& record, std::set<elab::SlotId>& detached) {
  const Dims d(q, k, v);
  if (kernel) return kernelAttention(em, d, q, k, v, scale, mask, record, detached);
  const Expr* raw = rawScores(em, d, q, k);
  const Expr* scores = maskedScores(em, d, raw, scale, mask);
  const Expr* max = em.reduce(ReduceKind::Max, scores, d.axis, true);
  detached.insert(max->slot);
  const Expr* e = maskedExp(em, scores, max, mask);
  const Expr* sum = em.reduce(ReduceKind::Sum, e, d.axis, true);
  const Expr* probs = em.binary(BinaryKind::Div, e, sum);
  record = {q, k, v, scale, mask, raw, probs, max, sum, false};
  const Expr* mixed = em.matmul(em.reshape(em.cast(probs, d.dt), d.with({d.G * d.Q, d.K})), v);
  return em.reshape(mixed, d.with({d.G, d.Q, d.E}));
}

namespace {

// dq, dk and dv by linnet.attention_grad.
void kernelVjp(Emitter& em, const AttentionTape& a, const Expr* g, const Cotangents& out) {
  std::vector<const Expr*> operands{a.q, a.k, a.v, a.scale, a.mask, a.max, a.sum, em.cast(g, Scalar::F32)};
  elab::Type grads;
  grads.kind = elab::Type::Tuple;
  for (const Expr* x : {a.q, a.k, a.v}) grads.elems.push_back(x->type);
  const auto d = em.letTuple(em.raw(ExprKind::AttentionGrad, grads, operands), {"dq", "dk", "dv"});
  for (int k = 0; k < 3; ++k)
    if (out.needs(k)) out.give(k, d[static_cast<size_t>(k)]);
}

}  // namespace

void attentionVjp(Emitter& em, const AttentionTape& a, bool fromRowStats, const Expr* g, const Cotangents& out) {
  if (a.kernel) return kernelVjp(em, a, g, out);
  const Dims d(a.q, a.k, a.v);
  const Expr* raw = a.raw;
  const Expr* probs = a.probs;
  if (fromRowStats) {
    raw = rawScores(em, d, a.q, a.k);
    const Expr* scores = maskedScores(em, d, raw, a.scale, a.mask);
    const Expr* e = maskedExp(em, scores, a.max, a.mask);
    probs = em.binary(BinaryKind::Div, e, a.sum);
  }
  const Expr* dO = em.reshape(em.cast(g, d.dt), d.with({d.G * d.Q, d.E}));
  if (out.needs(2))
    out.give(2, em.matmul(em.swapLastTwo(em.reshape(em.cast(probs, d.dt), d.with({d.G * d.Q, d.K}))), dO));
  if (!out.needs(0) && !out.needs(1) && !out.needs(3)) return;
  // The softmax's backward by rows; a masked score receives nothing.
  const Expr* dP = em.cast(em.reshape(em.matmul(dO, em.swapLastTwo(a.v)), d.with({d.G, d.Q, d.K})), Scalar::F32);
  const Expr* rowDot = em.reduce(ReduceKind::Sum, em.binary(BinaryKind::Mul, dP, probs), d.axis, true);
  const Expr* dS = em.binary(BinaryKind::Mul, probs, em.binary(BinaryKind::Sub, dP, rowDot));
  dS = em.select(a.mask, dS, em.constant(Scalar::F32, 0));
  // Back through the rounding to q's dtype and the scale.
  const Expr* dScaled = em.reshape(em.cast(em.cast(dS, d.dt), Scalar::F32), d.with({d.G * d.Q, d.K}));
  if (out.needs(3)) {
    const Expr* dScale = em.binary(BinaryKind::Mul, dScaled, em.cast(raw, Scalar::F32));
    out.give(3, em.sumTo(dScale, Emitter::typeOf(a.scale).shape));
  }
  const Expr* dRaw = em.cast(em.binary(BinaryKind::Mul, dScaled, a.scale), d.dt);
  if (out.needs(0)) out.give(0, em.reshape(em.matmul(dRaw, a.k), Emitter::typeOf(a.q).shape));
  if (out.needs(1)) out.give(1, em.matmul(em.swapLastTwo(dRaw), em.reshape(a.q, d.with({d.G * d.Q, d.D}))));
}

}  // namespace linnet::autodiff
