// Decode's attention over a cache as split-KV (flash-decoding) kernels that
// keep the card's rounding. The shared pipeline leaves three things between
// the query and the output: the scores against every cached key (a warp
// product with keep_columns), softmax over them (a max and a sum, with the
// masked score, exp and the rounded division around them, fused into three
// generics) and the probabilities times the cache's values (a split
// product, skip_zero_terms). Lowered apart, softmax is a launch of one warp
// a query row, whose three passes over the row nothing else hides (32 warps
// on the 8B card), and it writes every MaxSeq probability for the values
// product to read back. Here:
//  1. the scores kernel: a warp per (key head, split of kKeysPerSplit
//     consecutive keys) stores the split's scores, then lane 0 folds them
//     into the split's max m and sum l = sum(exp(s - m)) for each row;
//  2. the values kernel (a thread per (key head, chunk, value element), as
//     before): each warp first merges the splits that hold a seen key,
//     M = max m, L = sum(l * exp(m - M)), then computes each probability
//     where it reads it, round(exp(s - M) / L) as the card writes it, for
//     the keys below the mask's bound only;
//  3. the chunks' sums added in order, as before.
// Two launches and no probabilities buffer where there were three launches
// and a MaxSeq-long buffer. What changes in the arithmetic: L is summed
// per split and rescaled, so it may differ from one sum over the row in its
// last bits (as a different order of the sum would); the scores and the
// probabilities are rounded to T where the card rounds them.
#pragma once

#include <functional>

#include "ir/dialect.h"
#include "llvm/ADT/DenseSet.h"
#include "transforms/pipeline.h"

namespace linnet::cuda {

// The scores kernel's splits: `keys` consecutive keys a warp, computed
// only where `read` (built in the kernel) holds, then `after` built in the
// warp once its keys' scores are stored (by lane 0, into `scores`
// [batch, rows, n]); `first` is the split's first key.
struct ScoreSplits {
  int64_t keys;
  std::function<mlir::Value(mlir::OpBuilder&, mlir::Location, mlir::Value first)> read;
  std::function<void(mlir::OpBuilder&, mlir::Location, mlir::Value mat, mlir::Value first, mlir::Value lane,
                     mlir::Value scores)>
      after;
};
// A masked scores product (keep_columns) as warp_kernels.h lowers it, with `splits`.
void lowerMaskedScores(ir::MatmulOp op, const ScoreSplits& splits);

// A split product's a computed where it is read: `prologue` built first in
// each thread (mat, col: its matrix and value element; from: its chunk's
// first key) returns the bound at or past which keys add nothing, `at`
// gives a[mat, row, key] (a's element type), and `end` builds the same
// bound in another kernel (the chunks' sum).
struct ComputedA {
  std::function<mlir::Value(mlir::OpBuilder&, mlir::Location, mlir::Value mat, mlir::Value col, mlir::Value from)>
      prologue;
  std::function<mlir::Value(mlir::OpBuilder&, mlir::Location, mlir::Value mat, int64_t row, mlir::Value key)> at;
  std::function<mlir::Value(mlir::OpBuilder&, mlir::Location)> end;
};
// A split product (warp_kernels.h) whose a is `a`.
void lowerComputedSplitProduct(ir::MatmulOp op, const ComputedA& a);

// Each softmax between two of `products` (the decode products the target
// keeps) as above; the products it lowered.
llvm::DenseSet<mlir::Operation*> lowerSplitAttention(llvm::ArrayRef<ir::MatmulOp> products,
                                                     const transforms::SharedOptions& options);

}  // namespace linnet::cuda
