// The output head's log-probabilities on the gradient tape, by chunks of
// rows: `std.nn.loss::split_token_log_probs` on one shard (each position's
// log softmax(x weight^T)[p, targets[p]], which `loss_packed` and
// `log_probs_packed` read) is written out as a loop over chunks of
// positions, and taken back by one rule of its own, which recomputes each
// chunk's logits and gives x and the weight their cotangents from
// g (onehot(target) - softmax) a chunk at a time. Neither half forms a
// [P, Vocab] value: the largest is one chunk's [C, Vocab], C at most 128
// rows and at most 2^23 / Vocab (32 MB of f32), as fused linear
// cross-entropy kernels do it.
#pragma once

#include "autodiff/emitter.h"
#include "autodiff/vjp.h"
#include "elaborate/program.h"

namespace linnet::autodiff {

struct TokenLogProbsTape {
  const Expr *x = nullptr, *weight = nullptr, *targets = nullptr;  // [P, H], [V, H], [P]
  // Where the weight takes no cotangent (LoRA, or a frozen head): x's
  // cotangent for a g of ones, (onehot(target) - softmax) weight [P, H] in
  // x's dtype, formed in the forward's chunks while their logits are at
  // hand; x's cotangent for any g is g times it, row by row, so the
  // reverse half computes no logits. Null otherwise.
  const Expr* unitDx = nullptr;
};

// Whether a call of `callee` is taken this way: the standard library's
// split_token_log_probs at Shards = 1.
bool isTokenLogProbs(const elab::FnInstance& callee);

// The rows of a chunk for P positions over a vocabulary of V.
int64_t tokenChunkRows(int64_t P, int64_t V);

// Emits the log-probabilities [P] (f32) by chunks, and the unit dx where
// the weight is not `weightActive`; fills `record`.
const Expr* writeTokenLogProbs(Emitter& em, const Expr* x, const Expr* weight, const Expr* targets,
                               bool weightActive, TokenLogProbsTape& record);

// The cotangents of x (0) and the weight (1) from `g` [P], the
// log-probabilities'.
void tokenLogProbsVjp(Emitter& em, const TokenLogProbsTape& a, const Expr* g, const Cotangents& out);

}  // namespace linnet::autodiff
