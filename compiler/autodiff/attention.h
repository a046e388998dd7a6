// The `attention` primitive on the gradient tape: written out as its
// definition (docs/language.md §11) for the forward half, and given one
// rule of its own for the reverse half, the softmax's backward in rows
// (dS = P * (dP - rowsum(dP * P))), as flash attention's backward takes it.
//
// With row statistics (Policy::Saved) the reverse half recomputes the
// probabilities from q, k and each row's maximum and sum of exponentials
// [..., G, Q, 1] (P = exp(S - max) / sum, the forward's own operations, so
// the same values) instead of reading a saved [..., G, Q, K] per head: a
// layer's stacks hold q, k, v and the statistics, none of the attention's
// squares. (A log-sum-exp alone loses a row that sees no key: its scores
// are all the masked value, -3e38, which absorbs log K.) The other tapes
// recompute the whole layer anyway and read P where the forward left it.
#pragma once

#include <set>

#include "autodiff/emitter.h"
#include "autodiff/vjp.h"

namespace linnet::autodiff {

// One attention on the tape: its operands and the values its rule reads
// (Locals of the derived function).
struct AttentionTape {
  const Expr *q = nullptr, *k = nullptr, *v = nullptr, *scale = nullptr, *mask = nullptr;
  const Expr* raw = nullptr;    // q k^T [..., G * Q, K], before the scale (written out only)
  const Expr* probs = nullptr;  // [..., G, Q, K], f32 (written out only)
  const Expr *max = nullptr, *sum = nullptr;  // the softmax's row statistics [..., G, Q, 1], f32
  bool kernel = false;  // both halves as ops of their own (attentionKernelTakes)
};

// Whether the target's attention kernels take these operands, when it has
// them (SharedOptions::targetAttentionF32): f32 q, k and v with at most
// two leading axes (..L). The caller also asks that the scale take no
// cotangent.
bool attentionKernelTakes(const Expr* q, const Expr* k, const Expr* v);

// Emits attention(q, k, v, scale, mask); returns its output [..., G, Q, E]
// and fills `record`. Written out as primitives, or with `kernel` as one
// AttentionRows (linnet.attention_rows: the output and each row's
// statistics, with no [Q, K] square stored) whose columns are sliced
// apart. The row statistics are added to `detached`: no cotangent flows
// through them (the rule below reads them).
const Expr* writeAttention(Emitter& em, const Expr* q, const Expr* k, const Expr* v, const Expr* scale,
                           const Expr* mask, bool kernel, AttentionTape& record, std::set<elab::SlotId>& detached);

// The cotangents of the operands (0 q, 1 k, 2 v, 3 scale) from `g`, the
// output's. `fromRowStats`: P recomputed from q, k and the row statistics.
// A kernel attention's (record.kernel) are one AttentionGrad
// (linnet.attention_grad) of q, k, v, the mask, the row statistics and g,
// which recomputes P over the keys each row sees.
void attentionVjp(Emitter& em, const AttentionTape& a, bool fromRowStats, const Expr* g, const Cotangents& out);

}  // namespace linnet::autodiff
