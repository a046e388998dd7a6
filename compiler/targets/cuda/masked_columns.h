// Decode's attention mask as a bound on a row kernel's columns
// (row_reductions.cpp). Softmax's generics compute the mask where they read
// it: `select(key <= pos, score, kAttentionMasked)`. A row of MaxSeq scores
// then has its columns from pos + 1 on masked, and a warp that read all of
// them read some 20 times the keys a step at position 400 of 8,192 sees.
// With the bound, the max and the sum stop at it (a masked score adds
// nothing to either, given one seen score above kAttentionMasked, which the
// CPU's key prefix assumes too), and the probabilities past it are computed
// from the masked score without reading the scores.
#pragma once

#include <functional>
#include <optional>

#include "ir/dialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace linnet::cuda {

// A select of `g`'s body yielding kAttentionMasked where `col <= p` (or
// `col < p`) does not hold: col the last loop's index (through integer
// casts), p computed in the body.
struct MaskedSelect {
  mlir::arith::SelectOp select;
  mlir::Value p;
  bool inclusive;  // col <= p
};
std::optional<MaskedSelect> maskedSelect(mlir::linalg::GenericOp g);

// True when `g`'s value at a masked column adds nothing to a fold of `kind`
// over a row with a seen column: the masked score itself for a max, and
// exp(masked - m) (exactly 0) for a sum.
bool neutralWhenMasked(mlir::linalg::GenericOp g, const MaskedSelect& m, ir::ReduceKind kind);

// One past the last column the mask leaves (index): p + 1 (inclusive) or p,
// at most k; k when that is none (a row that sees nothing: the whole row,
// as without the bound). p computed at b's insertion point from `g`'s 0-d
// inputs, each read through `scalar` (its value there); null when p reads
// anything else.
mlir::Value unmaskedEnd(mlir::OpBuilder& b, mlir::Location l, mlir::linalg::GenericOp g, const MaskedSelect& m,
                        int64_t k, const std::function<mlir::Value(mlir::OpBuilder&, mlir::Value)>& scalar);

}  // namespace linnet::cuda
