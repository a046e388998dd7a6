// A low-rank gradient (docs/train.md, "LoRA"): for a matrix param W
// [out, in] that a model uses as W + B A (A [r, in], B [out, r]; LoRA's
// s folded into B), the gradient with respect to A and B is
// dA = B^T dW and dB = dW A^T. dW is the sum of what the param's reads
// received, mostly products (a linear layer's dY^T X); each product is
// reassociated, (B^T dY^T) X and dY^T (X A^T), so that the [out, in]
// matrix is never formed, and r-wide products of the layer's rows take
// the place of a full weight gradient: what makes a LoRA step cheaper
// than a full one.
#pragma once

#include "autodiff/emitter.h"

namespace linnet::autodiff {

struct LowRankGrads {
  const Expr* dA = nullptr;  // [r, in]
  const Expr* dB = nullptr;  // [out, r]
};

// dW's projections onto A [r, in] and B [out, r], emitted into `em`.
LowRankGrads projectLowRank(Emitter& em, const Expr* dW, const Expr* a, const Expr* b);

}  // namespace linnet::autodiff
