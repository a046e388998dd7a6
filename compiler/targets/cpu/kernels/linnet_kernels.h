/* The CPU kernel library for weight products: matrix products, embedding
 * lookups and unpacking whose weight operand W stays in its checkpoint's
 * storage format (common/storage_formats.def); and a fused f32 attention
 * (attention_f32, its contract beside its declaration), with a training
 * step's forward and reverse of it (attention_rows_f32, attention_grad_f32,
 * in linnet_attention_train.c). linnet_kernels.c is compiled
 * with model.so (clang -O3 -march=native -fPIC [-fopenmp]) and called from
 * the generated code through MLIR's C interface.
 *
 * ABI
 *  - Every function is `_mlir_ciface_linnet_kernel_<name>`: the generated
 *    code declares `linnet_kernel_<name>` with `llvm.emit_c_interface`, so a
 *    memref argument arrives as a pointer to its descriptor.
 *  - Element (i, j) of a linnet_memref2 of T is at
 *    `(T*)aligned + offset + i*strides[0] + j*strides[1]` (offset and strides
 *    in elements); any strides work, inner stride 1 is the fast path.
 *  - W is [N, RowBytes] of i8 holding each row in `format` (a
 *    linnet_storage_format number): K / BlockElements blocks of BlockBytes
 *    bytes, laid out as ggml lays them, rows unaligned. `k` is K, a multiple
 *    of the format's BlockElements; w->sizes[1] is not read (RowBytes is
 *    computed from format and k). matmul_f32 takes W as f32 [N, K].
 *  - Dequantized values are bitwise those of linnet::gguf::dequantize
 *    (runtime/gguf/types.cpp): every product and sum rounded on its own.
 *  - Products accumulate in f32; only the order of the sum and the use of
 *    fused multiply-add differ from a plain sum of products. Work is split
 *    over rows of W only, so results do not depend on the thread count.
 *  - Outputs are written, never read as inputs; M = 0, N = 0 or R = 0 does
 *    nothing; K = 0 writes zeros. An unknown format does nothing.
 */
#ifndef LINNET_KERNELS_H
#define LINNET_KERNELS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__has_include)
#if __has_include("../../../../common/storage_formats.def")
#define LINNET_STORAGE_FORMATS_DEF "../../../../common/storage_formats.def"
#endif
#endif
#ifndef LINNET_STORAGE_FORMATS_DEF
#define LINNET_STORAGE_FORMATS_DEF "common/storage_formats.def"
#endif

/* LINNET_STORAGE_F32 = 0, LINNET_STORAGE_F16, ... in the .def's order. */
typedef enum linnet_storage_format {
#define STORAGE(Id, Name, BlockElements, BlockBytes) LINNET_STORAGE_##Id,
#include LINNET_STORAGE_FORMATS_DEF
  LINNET_STORAGE_COUNT
} linnet_storage_format;

/* Elements and bytes per block, indexed by linnet_storage_format. */
static const int64_t linnet_storage_block_elements[] = {
#define STORAGE(Id, Name, BlockElements, BlockBytes) BlockElements,
#include LINNET_STORAGE_FORMATS_DEF
};
static const int64_t linnet_storage_block_bytes[] = {
#define STORAGE(Id, Name, BlockElements, BlockBytes) BlockBytes,
#include LINNET_STORAGE_FORMATS_DEF
};

typedef struct {
  void* allocated;
  void* aligned;
  int64_t offset;
  int64_t sizes[2];
  int64_t strides[2];
} linnet_memref2;

typedef struct {
  void* allocated;
  void* aligned;
  int64_t offset;
  int64_t sizes[1];
  int64_t strides[1];
} linnet_memref1;

/* out[m, n] = sum_k x[m, k] * W[n, k]: x f32 [M, K], out f32 [M, N],
 * w i8 [N, RowBytes] in `format`. */
void _mlir_ciface_linnet_kernel_matmul_packed(linnet_memref2* x, linnet_memref2* w, linnet_memref2* out,
                                              int64_t format, int64_t k);
/* The `fast` numerics of the same product (linnet_fast_kernels.c, which
 * documents its error bound): x quantized to 8 bits per block of 32,
 * integer dot products per weight block. */
void _mlir_ciface_linnet_kernel_matmul_packed_fast(linnet_memref2* x, linnet_memref2* w, linnet_memref2* out,
                                                   int64_t format, int64_t k);
/* The same with w f32 [N, K]. */
void _mlir_ciface_linnet_kernel_matmul_f32(linnet_memref2* x, linnet_memref2* w, linnet_memref2* out);
/* The same with w f32 [K, N] (out = x . w): packed as it lies, no transpose
 * formed; the same sums in the same order as matmul_f32 on wᵀ. */
void _mlir_ciface_linnet_kernel_matmul_f32_kn(linnet_memref2* x, linnet_memref2* w, linnet_memref2* out);
typedef struct {
  void* allocated;
  void* aligned;
  int64_t offset;
  int64_t sizes[3];
  int64_t strides[3];
} linnet_memref3;

/* out[b, m, n] = sum_k x[b, m, k] * w[b, n, k], all f32: matmul_f32 on each
 * of B matrices (x [B, M, K], w [B, N, K], out [B, M, N]; any strides). */
void _mlir_ciface_linnet_kernel_batched_matmul_f32(linnet_memref3* x, linnet_memref3* w, linnet_memref3* out);
/* The same with w [B, K, N]. */
void _mlir_ciface_linnet_kernel_batched_matmul_f32_kn(linnet_memref3* x, linnet_memref3* w, linnet_memref3* out);
/* out[r, :] = row clamp(ids[r], 0, N-1) of W dequantized: out f32 [R, K],
 * ids i64 [R], N = w->sizes[0] (N = 0 does nothing). */
void _mlir_ciface_linnet_kernel_gather_rows(linnet_memref2* w, linnet_memref1* ids, linnet_memref2* out,
                                            int64_t format, int64_t k);
/* out = W dequantized, f32 [N, K]. */
void _mlir_ciface_linnet_kernel_unpack(linnet_memref2* w, linnet_memref2* out, int64_t format, int64_t k);

typedef struct {
  void* allocated;
  void* aligned;
  int64_t offset;
  int64_t sizes[4];
  int64_t strides[4];
} linnet_memref4;

typedef struct {
  void* allocated;
  void* aligned;
  int64_t offset;
  int64_t sizes[5];
  int64_t strides[5];
} linnet_memref5;

/* Scaled dot-product attention of grouped query heads, all f32 (the
 * language's `attention` for D = f32; G query heads share a key/value head):
 *   q f32 [L0, L1, G, Q, D], k f32 [L0, L1, K, D], v f32 [L0, L1, K, E],
 *   mask u8 [L0, L1, G, Q, K] (0 masked, nonzero visible; any stride may be
 *   0, a broadcast mask), out f32 [L0, L1, G, Q, E].
 * Sizes are read from q (L0, L1, G, Q, D), k (K) and v (E). Per query row:
 *   s_j = dot(q, k_j) * scale, or -3e38 where the mask is 0;
 *   p_j = expf(s_j - max s); out = sum_j (p_j / sum p) * v_j
 * with libm's expf, every sum in f32 (any order, FMA allowed). Masked keys
 * are skipped (their p is exactly 0 when the row sees a key and scores
 * above -3e38 on one); a row that sees no key gets the mean of all K
 * values. A row costs its visible keys, not K. K = 0 writes zeros; L0, L1,
 * G or Q = 0 does nothing. Work is split over query rows only. Any strides
 * (inner stride 1 for q, k, v, out and 0 or 1 for the mask is the fast
 * path). If scratch cannot be allocated, nothing is written. */
void _mlir_ciface_linnet_kernel_attention_f32(linnet_memref5* q, linnet_memref4* k, linnet_memref4* v,
                                              linnet_memref5* mask, linnet_memref5* out, float scale);
/* That attention in a training step's forward (linnet_attention_train.c):
 * out as attention_f32 defines it, and each row's statistics max and sum
 * [L0, L1, G, Q, 1] (the maximum of its masked scores, -3e38 for a row
 * that sees no key, and the sum of its exp(s - max) over the keys it
 * counts), with an exp within 2 ulp instead of libm's and out = (sum_j
 * p_j v_j) / sum: the reverse below reads the statistics. K = 0 writes
 * zeros (max -3e38). Same strides, costs, scratch rule and K < 2^31 as the
 * reverse. */
void _mlir_ciface_linnet_kernel_attention_rows_f32(linnet_memref5* q, linnet_memref4* k, linnet_memref4* v,
                                                   linnet_memref5* mask, linnet_memref5* out, linnet_memref5* max,
                                                   linnet_memref5* sum, float scale);
/* The reverse of that attention in a training step (linnet_attention_train.c):
 * with the forward's row statistics max and sum [L0, L1, G, Q, 1] (the
 * maximum of the row's masked scores and the sum of its exp(s - max)) and
 * dO f32 [L0, L1, G, Q, E], the output's cotangent, writes
 *   P = exp(s - max) / sum (0 where masked; a row that sees no key: 1/sum
 *   for every key), dP = dO vᵀ, dS = P (dP - rowsum(dP P)) scale, 0 where
 *   masked, and dq = dS k [L0, L1, G, Q, D], dk = dSᵀ q [L0, L1, K, D],
 *   dv = Pᵀ dO [L0, L1, K, E]
 * for s_j = dot(q, k_j) * scale, exp within 2 ulp, sums in f32 in an order
 * that depends on the shape only (not the thread count). A row costs its
 * visible keys; no [Q, K] square is formed. K, G or Q = 0 writes zeros.
 * Any strides (the mask's may be 0); K < 2^31. Scratch it cannot allocate ends the
 * process (abort, after a line on stderr): a partial gradient is wrong. */
void _mlir_ciface_linnet_kernel_attention_grad_f32(linnet_memref5* q, linnet_memref4* k, linnet_memref4* v,
                                                   linnet_memref5* mask, linnet_memref5* max, linnet_memref5* sum,
                                                   linnet_memref5* dout, linnet_memref5* dq, linnet_memref4* dk,
                                                   linnet_memref4* dv, float scale);

/* RowBytes of a row of k elements in `format` (0 for an unknown format). */
static inline int64_t linnet_storage_row_bytes(int64_t format, int64_t k) {
  if (format < 0 || format >= LINNET_STORAGE_COUNT) return 0;
  return k / linnet_storage_block_elements[format] * linnet_storage_block_bytes[format];
}

#ifdef __cplusplus
}
#endif

#endif /* LINNET_KERNELS_H */
