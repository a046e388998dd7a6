// The `attention` primitive on the gradient tape: written out as its
// definition (docs/language.md §11) for the forward half, and given one
// rule of its own for the reverse half, the softmax's backward in rows
// (dS = P * (dP - rowsum(dP * P))), as flash attention's backward takes it.
//
// With row statistics (Policy::Saved) the forward half also keeps each
// row's log-sum-exp [..., G, Q, 1], and the reverse half recomputes the
// probabilities from q, k and it (P = exp(S - lse)) instead of reading a
// saved [..., G, Q, K] per head: a layer's stacks hold q, k, v and the
// statistics, none of the attention's squares. The other tapes recompute
// the whole layer anyway and read P where the forward left it.
#pragma once

#include <set>

#include "autodiff/emitter.h"
#include "autodiff/vjp.h"

namespace linnet::autodiff {

// One attention written out: its operands and the values its rule reads
// (Locals of the derived function).
struct AttentionTape {
  const Expr *q = nullptr, *k = nullptr, *v = nullptr, *scale = nullptr, *mask = nullptr;
  const Expr* raw = nullptr;    // q k^T [..., G * Q, K], before the scale
  const Expr* probs = nullptr;  // [..., G, Q, K], f32
  const Expr* lse = nullptr;    // [..., G, Q, 1], f32; with row statistics only
};

// Emits attention(q, k, v, scale, mask) as primitives; returns its output
// [..., G, Q, E] and fills `record`. The maximum subtracted before `exp`
// and the log-sum-exp are added to `detached`: no cotangent flows through
// them.
const Expr* writeAttention(Emitter& em, const Expr* q, const Expr* k, const Expr* v, const Expr* scale,
                           const Expr* mask, bool rowStats, AttentionTape& record,
                           std::set<elab::SlotId>& detached);

// The cotangents of the operands (0 q, 1 k, 2 v, 3 scale) from `g`, the
// output's. `fromRowStats`: P recomputed from q, k and the log-sum-exp.
void attentionVjp(Emitter& em, const AttentionTape& a, bool fromRowStats, const Expr* g, const Cotangents& out);

}  // namespace linnet::autodiff
