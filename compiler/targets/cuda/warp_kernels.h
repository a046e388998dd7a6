// Kernels of the cuda target's own where a thread per result element is the
// wrong shape: a warp of 32 threads per result, each lane summing a strided
// share in f32, the warp's 32 sums combined by `gpu.subgroup_reduce` (a
// butterfly of `shfl.sync.bfly` on the GPU) and written once by lane 0.
//
// Written at the tensor stage as `scf.parallel (.., lane)` loops on the
// operands' buffers (bufferization.to_buffer, read only) with the lane
// innermost, so that mapToGpu's row-major numbering gives each warp one
// result; the result is the loop's buffer as a tensor again.
#pragma once

#include "mlir/IR/BuiltinOps.h"
#include "transforms/pipeline.h"

namespace linnet::cuda {

inline constexpr int64_t kWarpSize = 32;

// The products the shared pipeline left to the target under `options`,
// before bufferization:
// - a decode product (SharedOptions::targetDecodeProducts: at most 8 rows
//   of x times a weight [N, K] read row by row) as a warp per output column
//   n: lane l reads 16 bytes of the weight row at k = 8l, 8l + 256, .. (bf16;
//   4 f32), the matching values of every row of x, keeps one f32 vector sum
//   per row, and lane 0 rounds each row's warp total to T once; products
//   of the same x (q, k, v) share one launch over all their columns;
//   batched,
//   [..L, M, K] x [..L, N, K] (attention's scores against a cache), a warp
//   per (matrix, n);
// - a product with b read as [.., K, N], K at least 64 (attention's
//   probabilities times the cache's values) as K split in chunks of 128: a
//   thread per (matrix, chunk, n) summing its chunk in f32, then (more than
//   one chunk) a thread per output adding the chunks in order; rounded once;
// - first, decode's softmax between a masked scores product and such a
//   split product, with both, as split-KV kernels (split_attention.h).
void lowerWarpKernels(mlir::ModuleOp module, const transforms::SharedOptions& options);

// Erases `v`'s producers that nothing reads any more, through reshapes, up
// to and including the first generic.
void eraseUnread(mlir::Value v);

// Each row reduction the shared pipeline left to the target
// (SharedOptions::targetRowReductions: a float sum, mean, max or min over
// the last axis, at least 64 long) as a warp per row, lane l folding
// k = l, l + 32, .. in f32, with the elementwise work around it in the same
// kernel (row_reductions.cpp): x, when a plain elementwise generic, computed
// where each lane reads it; and, when the result's only use is a plain
// elementwise generic over x's shape reading the row's value broadcast (a
// norm's scale, softmax's exp or divide), every lane writes its share of
// that row. Otherwise lane 0 stores the result. After fuseElementwise, so
// that each chain around a reduction is one generic.
void lowerRowReductions(mlir::ModuleOp module, const transforms::SharedOptions& options);

// Each gpu.subgroup_reduce in a kernel as a butterfly of shuffles (what
// convert-gpu-to-nvvm then lowers). On the gpu.module, before NVVM.
void lowerWarpReductionsToShuffles(mlir::ModuleOp module);

// Without warps (the CPU emulation of the cuda target, which runs each
// thread to completion in turn): each gpu.subgroup_reduce in `launch` as the
// 32 lanes' values recomputed by the calling thread (the reduced value's
// slice, read only, with the lane's thread id) and added as the butterfly
// adds them, so every lane gets the GPU's bits. Before the launch becomes a loop.
void emulateWarpReductions(mlir::Operation* launch);

}  // namespace linnet::cuda
