/* The CPU weight-product kernels and a fused attention (linnet_kernels.h has
 * the ABI; the attention kernel is described at its section below).
 *
 * Two paths for a product out = x . W^T:
 *  - decode (M <= LINNET_KERNELS_DECODE_MAX_M): per row of W, a fused loop
 *    dequantizes 16 values at a time in registers and feeds them to up to
 *    DECODE_ROWS rows of x (formats without a fused loop go through an L1
 *    buffer a CHUNK at a time); memory-bound, parallel over rows of W.
 *  - prefill: per panel of NR rows of W, each K-slice (at most KC) is
 *    dequantized once into a K-major [KC][NR] scratch on the stack, then an
 *    MR x NR register-blocked micro-kernel runs over every row of x;
 *    parallel over panels. Stack use: about 200 KiB per thread.
 * Either way one output element's sum depends only on (M, K), never on the
 * thread that computes it. AVX-512 intrinsics where __AVX512F__ is defined,
 * else AVX2 (linnet_kernels_avx2_*.h) where the machine has it, else plain
 * C. The path threshold and the tile sizes were chosen with
 * bench/kernels.
 */

/* Dequantization must round d*q and then +m on their own, as the C++ does. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "linnet_kernels.h"
#include "linnet_kernels_common.h"
#ifdef _OPENMP
#include <omp.h>
#endif

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Products below this many weight elements (N*K) run on the calling thread:
 * forking costs more than they take. */
#define PARALLEL_MIN_WORK 65536
/* Decode path: K is dequantized CHUNK elements at a time (a multiple of
 * every block size) and reused for up to DECODE_ROWS rows of x. */
#define CHUNK 256
#define DECODE_ROWS 4
#ifndef LINNET_KERNELS_DECODE_MAX_M
#define LINNET_KERNELS_DECODE_MAX_M 15
#endif
/* Prefill path: panels of NR rows of W, up to KC columns of K at a time
 * (the [KC][NR] f32 scratch, 128 KiB, stays in L2; fewer K-slices mean
 * fewer passes over out, whose rows may all fall in one cache set), MR rows
 * of x per micro-tile. */
#define NR 32
#ifndef LINNET_KERNELS_KC
#define LINNET_KERNELS_KC 1024
#endif
#define KC LINNET_KERNELS_KC
#ifdef LINNET_KERNELS_AVX2
#define MR 6 /* 6 x 2 accumulators of AVX2's 16 registers */
#else
#define MR 8
#endif

#define QK_K 256

/* ---- scalar helpers (the shared ones: linnet_kernels_common.h) ---------- */

static int format_known(int64_t format) { return format >= 0 && format < LINNET_STORAGE_COUNT; }


/* ---- portable dequantization: one block, operation for operation as
 * runtime/gguf/types.cpp ------------------------------------------------- */

MAYBE_UNUSED static void deq_q8_0_c(const uint8_t* x, float* y) {
  const float d = f16_at(x);
  for (int j = 0; j < 32; ++j) y[j] = (float)(int8_t)x[2 + j] * d;
}

MAYBE_UNUSED static void deq_q4_0_c(const uint8_t* x, float* y) {
  const float d = f16_at(x);
  for (int j = 0; j < 16; ++j) {
    y[j] = (float)((x[2 + j] & 0x0F) - 8) * d;
    y[j + 16] = (float)((x[2 + j] >> 4) - 8) * d;
  }
}

MAYBE_UNUSED static void deq_q4_1_c(const uint8_t* x, float* y) {
  const float d = f16_at(x), m = f16_at(x + 2);
  for (int j = 0; j < 16; ++j) {
    y[j] = (float)(x[4 + j] & 0x0F) * d + m;
    y[j + 16] = (float)(x[4 + j] >> 4) * d + m;
  }
}

/* Q5_0 and Q5_1: the 5-bit values of q5_value. */
MAYBE_UNUSED static void deq_q5_0_c(const uint8_t* x, float* y) {
  const float d = f16_at(x);
  uint32_t qh;
  memcpy(&qh, x + 2, 4);
  for (int j = 0; j < 32; ++j) y[j] = (float)(q5_value(qh, x + 6, j) - 16) * d;
}

MAYBE_UNUSED static void deq_q5_1_c(const uint8_t* x, float* y) {
  const float d = f16_at(x), m = f16_at(x + 2);
  uint32_t qh;
  memcpy(&qh, x + 4, 4);
  for (int j = 0; j < 32; ++j) y[j] = (float)q5_value(qh, x + 8, j) * d + m;
}

/* d * scale and min * m for the 8 sub-blocks of a Q4_K/Q5_K block. */
static inline void k4_scales(const uint8_t* x, float* ds, float* ms) {
  const float d = f16_at(x), min = f16_at(x + 2);
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    scale_min_k4(j, x + 4, &sc, &m);
    ds[j] = d * (float)sc;
    ms[j] = min * (float)m;
  }
}

MAYBE_UNUSED static void deq_q4_k_c(const uint8_t* x, float* y) {
  float ds[8], ms[8];
  k4_scales(x, ds, ms);
  const uint8_t* q = x + 16;
  for (int j = 0; j < 4; ++j, q += 32, y += 64) {
    for (int l = 0; l < 32; ++l) y[l] = ds[2 * j] * (float)(q[l] & 0xF) - ms[2 * j];
    for (int l = 0; l < 32; ++l) y[l + 32] = ds[2 * j + 1] * (float)(q[l] >> 4) - ms[2 * j + 1];
  }
}

static void deq_q5_k_c(const uint8_t* x, float* y) {
  float ds[8], ms[8];
  k4_scales(x, ds, ms);
  const uint8_t* qh = x + 16;
  const uint8_t* ql = x + 48;
  for (int j = 0; j < 4; ++j, ql += 32, y += 64) {
    const unsigned u1 = 1u << (2 * j), u2 = 2u << (2 * j);
    for (int l = 0; l < 32; ++l)
      y[l] = ds[2 * j] * (float)((ql[l] & 0xF) + ((qh[l] & u1) ? 16 : 0)) - ms[2 * j];
    for (int l = 0; l < 32; ++l)
      y[l + 32] = ds[2 * j + 1] * (float)((ql[l] >> 4) + ((qh[l] & u2) ? 16 : 0)) - ms[2 * j + 1];
  }
}

MAYBE_UNUSED static void deq_q6_k_c(const uint8_t* x, float* y) {
  const uint8_t* ql = x;
  const uint8_t* qh = x + 128;
  const int8_t* sc = (const int8_t*)(x + 192);
  const float d = f16_at(x + 208);
  for (int n = 0; n < QK_K; n += 128, y += 128, ql += 64, qh += 32, sc += 8) {
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int q1 = (int8_t)((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
      const int q2 = (int8_t)((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int q3 = (int8_t)((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int q4 = (int8_t)((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      y[l] = d * (float)sc[is] * (float)q1;
      y[l + 32] = d * (float)sc[is + 2] * (float)q2;
      y[l + 64] = d * (float)sc[is + 4] * (float)q3;
      y[l + 96] = d * (float)sc[is + 6] * (float)q4;
    }
  }
}

/* ---- AVX-512 dequantization of the hot formats (bitwise the same: int ->
 * f32 conversions are exact, and every mul and add/sub is its own op) ---- */

#ifdef __AVX512F__

/* An f16 scale broadcast to 16 lanes. The hardware conversion quiets a
 * signalling NaN that f16_to_f32 keeps, but a scale only enters products,
 * which quiet it the same way. */
static ALWAYS_INLINE __m512 f16_bcast(const uint8_t* p) {
  return _mm512_cvtph_ps(_mm256_set1_epi16((short)load_u16(p)));
}

/* 4-bit formats: a sub-block's 16 possible values, computed once with the
 * same operations as each value (so bitwise the same), then looked up per
 * value by one permute instead of a convert, a multiply and an add. */
static ALWAYS_INLINE __m512 nibble_values(void) {
  return _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}
static ALWAYS_INLINE __m512 lookup(__m512 table, __m512i nibbles) { return _mm512_permutexvar_ps(nibbles, table); }

/* k4_scales with vector ops: the 12 packed bytes unpacked as four 32-bit
 * words (4 scales or 4 mins each), then d * scale and min * m in one
 * multiply; dsms[0..7] = d * scale, dsms[8..15] = min * m. */
static ALWAYS_INLINE void k4_scales_v(const uint8_t* x, float* dsms) {
  uint32_t u[3], w[4];
  memcpy(u, x + 4, 12);
  w[0] = u[0] & 0x3f3f3f3fu;                                              /* scales 0-3 */
  w[1] = (u[2] & 0x0f0f0f0fu) | (((u[0] >> 6) & 0x03030303u) << 4);      /* scales 4-7 */
  w[2] = u[1] & 0x3f3f3f3fu;                                              /* mins 0-3 */
  w[3] = ((u[2] >> 4) & 0x0f0f0f0fu) | (((u[1] >> 6) & 0x03030303u) << 4); /* mins 4-7 */
  const __m512 sm = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)w)));
  const __m512 dm = _mm512_cvtph_ps(_mm256_set1_epi32((int)(load_u16(x) | ((uint32_t)load_u16(x + 2) << 16))));
  /* dm holds d, min alternately; spread them to 8 lanes each */
  const __m512 spread = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1), dm);
  _mm512_storeu_ps(dsms, _mm512_mul_ps(spread, sm));
}

static ALWAYS_INLINE __m512 bytes_i8_ps(const uint8_t* p) {
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i*)p)));
}

static ALWAYS_INLINE void deq_q8_0_v(const uint8_t* x, float* y) {
  const __m512 d = f16_bcast(x);
  for (int h = 0; h < 2; ++h) _mm512_storeu_ps(y + 16 * h, _mm512_mul_ps(bytes_i8_ps(x + 2 + 16 * h), d));
}

static ALWAYS_INLINE void deq_q4_0_v(const uint8_t* x, float* y) {
  const __m512 d = f16_bcast(x);
  const __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)(x + 2)));
  const __m512i eight = _mm512_set1_epi32(8);
  __m512i lo = _mm512_sub_epi32(_mm512_and_si512(b, _mm512_set1_epi32(0xF)), eight);
  __m512i hi = _mm512_sub_epi32(_mm512_srli_epi32(b, 4), eight);
  _mm512_storeu_ps(y, _mm512_mul_ps(_mm512_cvtepi32_ps(lo), d));
  _mm512_storeu_ps(y + 16, _mm512_mul_ps(_mm512_cvtepi32_ps(hi), d));
}

static ALWAYS_INLINE void deq_q4_1_v(const uint8_t* x, float* y) {
  const __m512 d = f16_bcast(x), m = f16_bcast(x + 2);
  const __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)(x + 4)));
  __m512 lo = _mm512_cvtepi32_ps(_mm512_and_si512(b, _mm512_set1_epi32(0xF)));
  __m512 hi = _mm512_cvtepi32_ps(_mm512_srli_epi32(b, 4));
  _mm512_storeu_ps(y, _mm512_add_ps(_mm512_mul_ps(lo, d), m));
  _mm512_storeu_ps(y + 16, _mm512_add_ps(_mm512_mul_ps(hi, d), m));
}

/* A Q5_0/Q5_1 block's 32 5-bit values q (0..31) as two vectors of 16 int32
 * lanes: the nibbles from qs, bit j of qh (as a mask) adding 16 to value j. */
static ALWAYS_INLINE void q5_values(const uint8_t* qh, const uint8_t* qs, __m512i* lo, __m512i* hi) {
  uint32_t h;
  memcpy(&h, qh, 4);
  const __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)qs)), sixteen = _mm512_set1_epi32(16);
  const __m512i l = _mm512_and_si512(b, _mm512_set1_epi32(0xF)), u = _mm512_srli_epi32(b, 4);
  *lo = _mm512_mask_or_epi32(l, (__mmask16)(h & 0xFFFF), l, sixteen);
  *hi = _mm512_mask_or_epi32(u, (__mmask16)(h >> 16), u, sixteen);
}

static ALWAYS_INLINE void deq_q5_0_v(const uint8_t* x, float* y) {
  const __m512 d = f16_bcast(x);
  const __m512i sixteen = _mm512_set1_epi32(16);
  __m512i lo, hi;
  q5_values(x + 2, x + 6, &lo, &hi);
  _mm512_storeu_ps(y, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(lo, sixteen)), d));
  _mm512_storeu_ps(y + 16, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(hi, sixteen)), d));
}

static ALWAYS_INLINE void deq_q5_1_v(const uint8_t* x, float* y) {
  const __m512 d = f16_bcast(x), m = f16_bcast(x + 2);
  __m512i lo, hi;
  q5_values(x + 4, x + 8, &lo, &hi);
  _mm512_storeu_ps(y, _mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(lo), d), m));
  _mm512_storeu_ps(y + 16, _mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(hi), d), m));
}

static ALWAYS_INLINE void deq_q4_k_v(const uint8_t* x, float* y) {
  float ds[8], ms[8];
  k4_scales(x, ds, ms);
  const uint8_t* q = x + 16;
  const __m512i low4 = _mm512_set1_epi32(0xF);
  for (int j = 0; j < 4; ++j, q += 32, y += 64) {
    const __m512 d1 = _mm512_set1_ps(ds[2 * j]), m1 = _mm512_set1_ps(ms[2 * j]);
    const __m512 d2 = _mm512_set1_ps(ds[2 * j + 1]), m2 = _mm512_set1_ps(ms[2 * j + 1]);
    for (int h = 0; h < 2; ++h) {
      const __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)(q + 16 * h)));
      __m512 lo = _mm512_cvtepi32_ps(_mm512_and_si512(b, low4));
      __m512 hi = _mm512_cvtepi32_ps(_mm512_srli_epi32(b, 4));
      _mm512_storeu_ps(y + 16 * h, _mm512_sub_ps(_mm512_mul_ps(d1, lo), m1));
      _mm512_storeu_ps(y + 32 + 16 * h, _mm512_sub_ps(_mm512_mul_ps(d2, hi), m2));
    }
  }
}

static ALWAYS_INLINE void deq_q6_k_v(const uint8_t* x, float* y) {
  const uint8_t* ql = x;
  const uint8_t* qh = x + 128;
  const int8_t* sc = (const int8_t*)(x + 192);
  const float d = f16_at(x + 208);
  const __m512i low4 = _mm512_set1_epi32(0xF), three = _mm512_set1_epi32(3), bias = _mm512_set1_epi32(32);
  for (int n = 0; n < QK_K; n += 128, y += 128, ql += 64, qh += 32, sc += 8) {
    for (int c = 0; c < 2; ++c) { /* values l = 16c .. 16c+15 share their scales */
      const __m512i a = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)(ql + 16 * c)));
      const __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)(ql + 32 + 16 * c)));
      const __m512i h = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)(qh + 16 * c)));
      __m512i q1 = _mm512_or_si512(_mm512_and_si512(a, low4), _mm512_slli_epi32(_mm512_and_si512(h, three), 4));
      __m512i q2 = _mm512_or_si512(_mm512_and_si512(b, low4),
                                   _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(h, 2), three), 4));
      __m512i q3 = _mm512_or_si512(_mm512_srli_epi32(a, 4),
                                   _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(h, 4), three), 4));
      __m512i q4 = _mm512_or_si512(_mm512_srli_epi32(b, 4), _mm512_slli_epi32(_mm512_srli_epi32(h, 6), 4));
      const __m512i qs[4] = {q1, q2, q3, q4};
      for (int t = 0; t < 4; ++t) {
        const __m512 s = _mm512_set1_ps(d * (float)sc[c + 2 * t]);
        const __m512 qf = _mm512_cvtepi32_ps(_mm512_sub_epi32(qs[t], bias));
        _mm512_storeu_ps(y + 32 * t + 16 * c, _mm512_mul_ps(s, qf));
      }
    }
  }
}

/* 16 binary16 values: the hardware conversion is exact, but it quiets
 * signalling NaNs, which half.cpp keeps; NaN lanes are rebuilt from bits. */
static ALWAYS_INLINE void deq_f16x16_v(const uint8_t* x, float* y) {
  const __m256i h = _mm256_loadu_si256((const __m256i*)x);
  __m512 f = _mm512_cvtph_ps(h);
  const __m512i w = _mm512_cvtepu16_epi32(h);
  const __mmask16 nan =
      _mm512_cmpgt_epu32_mask(_mm512_and_si512(w, _mm512_set1_epi32(0x7fff)), _mm512_set1_epi32(0x7c00));
  if (nan) {
    __m512i bits = _mm512_or_si512(_mm512_slli_epi32(_mm512_and_si512(w, _mm512_set1_epi32(0x8000)), 16),
                                   _mm512_or_si512(_mm512_set1_epi32(0x7f800000),
                                                   _mm512_slli_epi32(_mm512_and_si512(w, _mm512_set1_epi32(0x3ff)), 13)));
    f = _mm512_mask_mov_ps(f, nan, _mm512_castsi512_ps(bits));
  }
  _mm512_storeu_ps(y, f);
}

static ALWAYS_INLINE void deq_bf16x16_v(const uint8_t* x, float* y) {
  const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i*)x));
  _mm512_storeu_ps(y, _mm512_castsi512_ps(_mm512_slli_epi32(w, 16)));
}

#endif /* __AVX512F__ */

#ifdef LINNET_KERNELS_AVX2
#include "linnet_kernels_avx2_dequantize.h"
#endif

/* Dequantizes `count` elements (whole blocks) starting at block `src` into
 * dst (no alignment needed for either). */
static void dequantize(int64_t format, const uint8_t* src, int64_t count, float* dst) {
  const int64_t be = linnet_storage_block_elements[format], bb = linnet_storage_block_bytes[format];
  const int64_t nb = count / be;
  int64_t i = 0;
  switch (format) {
    case LINNET_STORAGE_F32:
      memcpy(dst, src, (size_t)count * 4);
      return;
    case LINNET_STORAGE_F16:
#ifdef __AVX512F__
      for (; i + 16 <= count; i += 16) deq_f16x16_v(src + 2 * i, dst + i);
#elif defined(LINNET_KERNELS_AVX2)
      for (; i + 8 <= count; i += 8) deq_f16x8_v(src + 2 * i, dst + i);
#endif
      for (; i < count; ++i) dst[i] = f16_at(src + 2 * i);
      return;
    case LINNET_STORAGE_BF16:
#ifdef __AVX512F__
      for (; i + 16 <= count; i += 16) deq_bf16x16_v(src + 2 * i, dst + i);
#elif defined(LINNET_KERNELS_AVX2)
      for (; i + 8 <= count; i += 8) deq_bf16x8_v(src + 2 * i, dst + i);
#endif
      for (; i < count; ++i) dst[i] = bf16_to_f32(load_u16(src + 2 * i));
      return;
#if defined(__AVX512F__) || defined(LINNET_KERNELS_AVX2)
#define DEQ_BLOCKS(fn) for (; i < nb; ++i) fn##_v(src + i * bb, dst + i * be)
#else
#define DEQ_BLOCKS(fn) for (; i < nb; ++i) fn##_c(src + i * bb, dst + i * be)
#endif
    case LINNET_STORAGE_Q8_0: DEQ_BLOCKS(deq_q8_0); return;
    case LINNET_STORAGE_Q4_0: DEQ_BLOCKS(deq_q4_0); return;
    case LINNET_STORAGE_Q4_1: DEQ_BLOCKS(deq_q4_1); return;
    case LINNET_STORAGE_Q5_0: DEQ_BLOCKS(deq_q5_0); return;
    case LINNET_STORAGE_Q5_1: DEQ_BLOCKS(deq_q5_1); return;
    case LINNET_STORAGE_Q4_K: DEQ_BLOCKS(deq_q4_k); return;
    case LINNET_STORAGE_Q6_K: DEQ_BLOCKS(deq_q6_k); return;
#undef DEQ_BLOCKS
    case LINNET_STORAGE_Q5_K:
      for (; i < nb; ++i) deq_q5_k_c(src + i * bb, dst + i * be);
      return;
    default:
      return;
  }
}

/* ---- the product ------------------------------------------------------- */

/* out = x . W^T on contiguous rows (inner strides 1); row strides are free. */
typedef struct {
  int64_t format, m, n, k;
  const float* x;
  int64_t ldx; /* floats */
  const uint8_t* w;
  int64_t ldw; /* bytes */
  float* out;
  int64_t ldo; /* floats */
  int w_kn;    /* f32 W given as [K, N] (row k at w + k * ldw): its rows are packed as they lie */
} product;

/* ---- decode path: a dequantized chunk of one W row against mr rows of x */

#ifdef __AVX512F__

/* 4 independent sums per row of x (hides FMA latency). Each kernel keeps
 * its own, indexed by constants only, so that they stay in registers. */
typedef __m512 dot_acc[DECODE_ROWS][4];

static ALWAYS_INLINE void acc_zero(dot_acc acc) {
  for (int r = 0; r < DECODE_ROWS; ++r)
    for (int u = 0; u < 4; ++u) acc[r][u] = _mm512_setzero_ps();
}

static ALWAYS_INLINE void acc_finish(dot_acc acc, int mr, float* const* out) {
  for (int r = 0; r < mr; ++r) {
    const __m512 s = _mm512_add_ps(_mm512_add_ps(acc[r][0], acc[r][1]), _mm512_add_ps(acc[r][2], acc[r][3]));
    *out[r] = _mm512_reduce_add_ps(s);
  }
}


static ALWAYS_INLINE void dot_chunk(dot_acc acc, const float* w, const float* const* x, int64_t len, int mr) {
  int64_t j = 0;
  for (; j + 64 <= len; j += 64) {
    prefetch_ahead(w + j, 256);
    for (int u = 0; u < 4; ++u) {
      const __m512 wv = _mm512_loadu_ps(w + j + 16 * u);
      for (int r = 0; r < mr; ++r)
        acc[r][u] = _mm512_fmadd_ps(wv, _mm512_loadu_ps(x[r] + j + 16 * u), acc[r][u]);
    }
  }
  for (; j + 16 <= len; j += 16) {
    const __m512 wv = _mm512_loadu_ps(w + j);
    for (int r = 0; r < mr; ++r) acc[r][0] = _mm512_fmadd_ps(wv, _mm512_loadu_ps(x[r] + j), acc[r][0]);
  }
  if (j < len) {
    const __mmask16 mask = (__mmask16)((1u << (len - j)) - 1);
    const __m512 wv = _mm512_maskz_loadu_ps(mask, w + j);
    for (int r = 0; r < mr; ++r)
      acc[r][1] = _mm512_fmadd_ps(wv, _mm512_maskz_loadu_ps(mask, x[r] + j), acc[r][1]);
  }
}

/* The fused kernels: each dequantizes a row of W in registers, 16 values at
 * a time, and feeds every vector to the mr rows of x (accumulator u). */
#define FEED(wv, koff, u)                                                               \
  do {                                                                                  \
    const __m512 w_ = (wv);                                                             \
    for (int r = 0; r < mr; ++r)                                                        \
      acc[r][u] = _mm512_fmadd_ps(w_, _mm512_loadu_ps(x[r] + (koff)), acc[r][u]);      \
  } while (0)

/* One block of a 32-value format into accumulators u, u + 1 (u constant). */
static ALWAYS_INLINE void block_q8_0(dot_acc acc, const uint8_t* w, int64_t k0, const float* const* x, int mr,
                                     int u) {
  const __m512 d = f16_bcast(w);
  FEED(_mm512_mul_ps(bytes_i8_ps(w + 2), d), k0, u);
  FEED(_mm512_mul_ps(bytes_i8_ps(w + 18), d), k0 + 16, u + 1);
}

static ALWAYS_INLINE void block_q4_0(dot_acc acc, const uint8_t* w, int64_t k0, const float* const* x, int mr,
                                     int u) {
  const __m512 t = _mm512_mul_ps(_mm512_sub_ps(nibble_values(), _mm512_set1_ps(8)), f16_bcast(w)); /* (q-8)*d */
  const __m512i q = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)(w + 2)));
  FEED(lookup(t, q), k0, u); /* vpermps reads the low 4 bits of each index */
  FEED(lookup(t, _mm512_srli_epi32(q, 4)), k0 + 16, u + 1);
}

static ALWAYS_INLINE void block_q4_1(dot_acc acc, const uint8_t* w, int64_t k0, const float* const* x, int mr,
                                     int u) {
  const __m512 t = _mm512_add_ps(_mm512_mul_ps(nibble_values(), f16_bcast(w)), f16_bcast(w + 2)); /* q*d + m */
  const __m512i q = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)(w + 4)));
  FEED(lookup(t, q), k0, u);
  FEED(lookup(t, _mm512_srli_epi32(q, 4)), k0 + 16, u + 1);
}

/* 5-bit formats: the 32 possible values in two tables (q < 16, q >= 16),
 * computed with the same operations as each value, looked up by a
 * two-table permute on q's low 5 bits. */
static ALWAYS_INLINE __m512 lookup32(__m512 lo, __m512 hi, __m512i q) { return _mm512_permutex2var_ps(lo, q, hi); }

static ALWAYS_INLINE void block_q5_0(dot_acc acc, const uint8_t* w, int64_t k0, const float* const* x, int mr,
                                     int u) {
  const __m512 d = f16_bcast(w);
  const __m512 tlo = _mm512_mul_ps(_mm512_sub_ps(nibble_values(), _mm512_set1_ps(16)), d); /* (q-16)*d, q < 16 */
  const __m512 thi = _mm512_mul_ps(nibble_values(), d);                                    /* q >= 16 */
  __m512i lo, hi;
  q5_values(w + 2, w + 6, &lo, &hi);
  FEED(lookup32(tlo, thi, lo), k0, u);
  FEED(lookup32(tlo, thi, hi), k0 + 16, u + 1);
}

static ALWAYS_INLINE void block_q5_1(dot_acc acc, const uint8_t* w, int64_t k0, const float* const* x, int mr,
                                     int u) {
  const __m512 d = f16_bcast(w), m = f16_bcast(w + 2);
  const __m512 tlo = _mm512_add_ps(_mm512_mul_ps(nibble_values(), d), m); /* q*d + m, q < 16 */
  const __m512 thi = _mm512_add_ps(_mm512_mul_ps(_mm512_add_ps(nibble_values(), _mm512_set1_ps(16)), d), m);
  __m512i lo, hi;
  q5_values(w + 4, w + 8, &lo, &hi);
  FEED(lookup32(tlo, thi, lo), k0, u);
  FEED(lookup32(tlo, thi, hi), k0 + 16, u + 1);
}

/* Blocks in pairs, so that each has its own accumulators: value 16u + i of
 * each 64 goes to sum u, as dot_chunk sends it, so that for K a multiple of
 * 64 a row's sum is bitwise dot_chunk's over the dequantized row (the unit
 * test checks it). */
#define FUSED_32(name, bytes)                                                                                \
  static ALWAYS_INLINE void fused_##name(const uint8_t* w, int64_t nb, const float* const* x, int mr,       \
                                         float* const* out) {                                              \
    dot_acc acc;                                                                                           \
    acc_zero(acc);                                                                                         \
    int64_t b = 0;                                                                                         \
    for (; b + 2 <= nb; b += 2) {                                                                          \
      prefetch_ahead(w + b * (bytes), 64);                                                                 \
      block_##name(acc, w + b * (bytes), 32 * b, x, mr, 0);                                                \
      block_##name(acc, w + (b + 1) * (bytes), 32 * b + 32, x, mr, 2);                                     \
    }                                                                                                      \
    if (b < nb) block_##name(acc, w + b * (bytes), 32 * b, x, mr, 0);                                       \
    acc_finish(acc, mr, out);                                                                              \
  }
FUSED_32(q8_0, 34)
FUSED_32(q4_0, 18)
FUSED_32(q4_1, 20)
FUSED_32(q5_0, 22)
FUSED_32(q5_1, 24)
#undef FUSED_32

static ALWAYS_INLINE void fused_q4_k(const uint8_t* w, int64_t nb, const float* const* x, int mr,
                                     float* const* out) {
  dot_acc acc;
  acc_zero(acc);
  for (int64_t b = 0; b < nb; ++b, w += 144) {
    prefetch_ahead(w, 144);
    _Alignas(64) float dsms[16];
    k4_scales_v(w, dsms);
    const uint8_t* q = w + 16;
    for (int j = 0; j < 4; ++j, q += 32) {
      /* d1 * q - m1 for every q, as the reference computes it */
      const __m512 t1 = _mm512_sub_ps(_mm512_mul_ps(_mm512_set1_ps(dsms[2 * j]), nibble_values()),
                                      _mm512_set1_ps(dsms[8 + 2 * j]));
      const __m512 t2 = _mm512_sub_ps(_mm512_mul_ps(_mm512_set1_ps(dsms[2 * j + 1]), nibble_values()),
                                      _mm512_set1_ps(dsms[8 + 2 * j + 1]));
      const int64_t k0 = 256 * b + 64 * j;
      for (int h = 0; h < 2; ++h) {
        const __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)(q + 16 * h)));
        FEED(lookup(t1, v), k0 + 16 * h, h);
        FEED(lookup(t2, _mm512_srli_epi32(v, 4)), k0 + 32 + 16 * h, 2 + h);
      }
    }
  }
  acc_finish(acc, mr, out);
}

static ALWAYS_INLINE void fused_q6_k(const uint8_t* w, int64_t nb, const float* const* x, int mr,
                                     float* const* out) {
  dot_acc acc;
  acc_zero(acc);
  const __m512i low4 = _mm512_set1_epi32(0xF), three = _mm512_set1_epi32(3), bias = _mm512_set1_epi32(32);
  for (int64_t b = 0; b < nb; ++b, w += 210) {
    prefetch_ahead(w, 210);
    const uint8_t* ql = w;
    const uint8_t* qh = w + 128;
    _Alignas(64) float scales[16]; /* d * scale, for each 16 values */
    _mm512_store_ps(scales, _mm512_mul_ps(f16_bcast(w + 208), bytes_i8_ps(w + 192)));
    const float* sc = scales;
    for (int n = 0; n < 2; ++n, ql += 64, qh += 32, sc += 8)
      for (int c = 0; c < 2; ++c) {
        const __m512i a = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)(ql + 16 * c)));
        const __m512i bb = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)(ql + 32 + 16 * c)));
        const __m512i h = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)(qh + 16 * c)));
        const __m512i q[4] = {
            _mm512_or_si512(_mm512_and_si512(a, low4), _mm512_slli_epi32(_mm512_and_si512(h, three), 4)),
            _mm512_or_si512(_mm512_and_si512(bb, low4),
                            _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(h, 2), three), 4)),
            _mm512_or_si512(_mm512_srli_epi32(a, 4),
                            _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(h, 4), three), 4)),
            _mm512_or_si512(_mm512_srli_epi32(bb, 4), _mm512_slli_epi32(_mm512_srli_epi32(h, 6), 4))};
        for (int t = 0; t < 4; ++t) {
          const __m512 s = _mm512_set1_ps(sc[c + 2 * t]);
          const __m512 qf = _mm512_cvtepi32_ps(_mm512_sub_epi32(q[t], bias));
          FEED(_mm512_mul_ps(s, qf), 256 * b + 128 * n + 32 * t + 16 * c, t);
        }
      }
  }
  acc_finish(acc, mr, out);
}

#elif defined(LINNET_KERNELS_AVX2)
#include "linnet_kernels_avx2_products.h"
#endif

#if defined(__AVX512F__) || defined(LINNET_KERNELS_AVX2)

/* The rows the fused kernels do not cover, on either vector path's
 * dot_acc, dot_chunk and acc_finish: f32 weights, and formats without a
 * fused kernel a chunk at a time through an L1 buffer. */
static ALWAYS_INLINE void f32_row(const float* w, int64_t k, const float* const* x, int mr, float* const* out) {
  dot_acc acc;
  acc_zero(acc);
  dot_chunk(acc, w, x, k, mr);
  acc_finish(acc, mr, out);
}

/* Formats without a fused kernel: a chunk at a time through an L1 buffer. */
static ALWAYS_INLINE void buffered_row(int64_t format, const uint8_t* wrow, int64_t k, const float* const* x, int mr,
                                       float* const* out) {
  dot_acc acc;
  acc_zero(acc);
  _Alignas(64) float buf[CHUNK];
  const int64_t be = linnet_storage_block_elements[format], bb = linnet_storage_block_bytes[format];
  for (int64_t k0 = 0; k0 < k; k0 += CHUNK) {
    const int64_t len = min64(CHUNK, k - k0);
    dequantize(format, wrow + k0 / be * bb, len, buf);
    const float* xk[DECODE_ROWS];
    for (int r = 0; r < mr; ++r) xk[r] = x[r] + k0;
    dot_chunk(acc, buf, xk, len, mr);
  }
  acc_finish(acc, mr, out);
}

/* Rows [n0, n1) of W against every row of x, DECODE_ROWS rows of x at a
 * time, with one loop per format and row count so that each inner loop is
 * compiled for its own constants. */
#define DECODE_LOOP(call)                                                         \
  for (int64_t n = n0; n < n1; ++n) {                                             \
    const uint8_t* wrow = p->w + n * p->ldw;                                      \
    for (int64_t m0 = 0; m0 < p->m; m0 += DECODE_ROWS) {                          \
      const int mr = (int)min64(DECODE_ROWS, p->m - m0);                          \
      const float* x[DECODE_ROWS];                                                \
      float* o[DECODE_ROWS];                                                      \
      for (int r = 0; r < mr; ++r) {                                              \
        x[r] = p->x + (m0 + r) * p->ldx;                                          \
        o[r] = p->out + (m0 + r) * p->ldo + n;                                    \
      }                                                                           \
      switch (mr) {                                                               \
        case 1: call(1); break;                                                   \
        case 2: call(2); break;                                                   \
        case 3: call(3); break;                                                   \
        default: call(4); break;                                                  \
      }                                                                           \
    }                                                                             \
  }

#define CALL_F32(r) f32_row((const float*)wrow, p->k, x, r, o) /* loadu: no alignment needed */
#define CALL_Q8_0(r) fused_q8_0(wrow, nb, x, r, o)
#define CALL_Q4_0(r) fused_q4_0(wrow, nb, x, r, o)
#define CALL_Q4_1(r) fused_q4_1(wrow, nb, x, r, o)
#define CALL_Q5_0(r) fused_q5_0(wrow, nb, x, r, o)
#define CALL_Q5_1(r) fused_q5_1(wrow, nb, x, r, o)
#define CALL_Q4_K(r) fused_q4_k(wrow, nb, x, r, o)
#define CALL_Q6_K(r) fused_q6_k(wrow, nb, x, r, o)
#define CALL_BUFFERED(r) buffered_row(p->format, wrow, p->k, x, r, o)

static void decode_rows(const product* p, int64_t n0, int64_t n1) {
  const int64_t nb = p->k / linnet_storage_block_elements[p->format];
  switch (p->format) {
    case LINNET_STORAGE_F32: DECODE_LOOP(CALL_F32); break;
    case LINNET_STORAGE_Q8_0: DECODE_LOOP(CALL_Q8_0); break;
    case LINNET_STORAGE_Q4_0: DECODE_LOOP(CALL_Q4_0); break;
    case LINNET_STORAGE_Q4_1: DECODE_LOOP(CALL_Q4_1); break;
    case LINNET_STORAGE_Q5_0: DECODE_LOOP(CALL_Q5_0); break;
    case LINNET_STORAGE_Q5_1: DECODE_LOOP(CALL_Q5_1); break;
    case LINNET_STORAGE_Q4_K: DECODE_LOOP(CALL_Q4_K); break;
    case LINNET_STORAGE_Q6_K: DECODE_LOOP(CALL_Q6_K); break;
    default: DECODE_LOOP(CALL_BUFFERED); break;
  }
}

#else /* portable */

#define LANES 16

static ALWAYS_INLINE void decode_row(int64_t format, const uint8_t* wrow, int64_t k, const float* const* x,
                                     float* const* out, int mr) {
  float acc[DECODE_ROWS][LANES] = {{0}};
  float buf[CHUNK];
  const int64_t be = linnet_storage_block_elements[format], bb = linnet_storage_block_bytes[format];
  for (int64_t k0 = 0; k0 < k; k0 += CHUNK) {
    const int64_t len = min64(CHUNK, k - k0);
    dequantize(format, wrow + k0 / be * bb, len, buf);
    for (int r = 0; r < mr; ++r) {
      const float* xr = x[r] + k0;
      int64_t j = 0;
      for (; j + LANES <= len; j += LANES)
        for (int l = 0; l < LANES; ++l) acc[r][l] += buf[j + l] * xr[j + l];
      for (int l = 0; j < len; ++j, ++l) acc[r][l] += buf[j] * xr[j];
    }
  }
  for (int r = 0; r < mr; ++r) {
    float s = 0;
    for (int l = 0; l < LANES; ++l) s += acc[r][l];
    *out[r] = s;
  }
}

static void decode_rows(const product* p, int64_t n0, int64_t n1) {
  for (int64_t n = n0; n < n1; ++n)
    for (int64_t m0 = 0; m0 < p->m; m0 += DECODE_ROWS) {
      const int mr = (int)min64(DECODE_ROWS, p->m - m0);
      const float* x[DECODE_ROWS];
      float* o[DECODE_ROWS];
      for (int r = 0; r < mr; ++r) {
        x[r] = p->x + (m0 + r) * p->ldx;
        o[r] = p->out + (m0 + r) * p->ldo + n;
      }
      decode_row(p->format, p->w + n * p->ldw, p->k, x, o, mr);
    }
}

#endif

/* Rows of W in groups of DECODE_GROUP, split statically over the threads. */
#define DECODE_GROUP 16

static void matmul_decode(const product* p) {
  const int64_t groups = (p->n + DECODE_GROUP - 1) / DECODE_GROUP;
#pragma omp parallel for schedule(static) if (p->n * p->k >= PARALLEL_MIN_WORK)
  for (int64_t g = 0; g < groups; ++g) decode_rows(p, g * DECODE_GROUP, min64(p->n, (g + 1) * DECODE_GROUP));
}

/* ---- prefill path ------------------------------------------------------ */

#ifdef __AVX512F__

/* pack[c * NR + 0..15] = column c of the 16 x 16 tile rows[0..15][k0 + c]. */
static ALWAYS_INLINE void transpose16(const float* const* rows, int64_t k0, float* pack) {
  __m512 t[16], u[16];
  for (int i = 0; i < 8; ++i) {
    const __m512 a = _mm512_loadu_ps(rows[2 * i] + k0), b = _mm512_loadu_ps(rows[2 * i + 1] + k0);
    t[2 * i] = _mm512_unpacklo_ps(a, b);
    t[2 * i + 1] = _mm512_unpackhi_ps(a, b);
  }
  /* u[4i + c], 128-bit lane L: rows 4i..4i+3 of column 4L + c. */
  for (int i = 0; i < 4; ++i) {
    const __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 2]);
    const __m512d c = _mm512_castps_pd(t[4 * i + 1]), d = _mm512_castps_pd(t[4 * i + 3]);
    u[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
    u[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
    u[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(c, d));
    u[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(c, d));
  }
  for (int c = 0; c < 4; ++c) {
    const __m512 v0 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x88), v1 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xDD);
    const __m512 w0 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x88);
    const __m512 w1 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xDD);
    _mm512_store_ps(pack + (0 + c) * NR, _mm512_shuffle_f32x4(v0, w0, 0x88));
    _mm512_store_ps(pack + (8 + c) * NR, _mm512_shuffle_f32x4(v0, w0, 0xDD));
    _mm512_store_ps(pack + (4 + c) * NR, _mm512_shuffle_f32x4(v1, w1, 0x88));
    _mm512_store_ps(pack + (12 + c) * NR, _mm512_shuffle_f32x4(v1, w1, 0xDD));
  }
}

#endif

/* Dequantizes columns [k0, k0+kl) of rows n0 .. n0+nr-1 into pack[kk][j]
 * (K-major, NR wide; columns j >= nr are zero), 16 rows at a time. */
static void pack_panel(const product* p, int64_t n0, int nr, int64_t k0, int64_t kl, float* pack) {
  if (p->w_kn) {
#ifdef __AVX512F__
    /* Two vectors a row, inline: a memcpy call per 128 bytes was a sixth
     * of a gradient's product time. */
    const __mmask16 m0 = nr >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << nr) - 1);
    const __mmask16 m1 = nr >= 32 ? (__mmask16)0xFFFF : nr <= 16 ? (__mmask16)0 : (__mmask16)((1u << (nr - 16)) - 1);
    for (int64_t kk = 0; kk < kl; ++kk) {
      const float* row = (const float*)(p->w + (k0 + kk) * p->ldw) + n0;
      _mm512_store_ps(pack + kk * NR, _mm512_maskz_loadu_ps(m0, row));
      _mm512_store_ps(pack + kk * NR + 16, _mm512_maskz_loadu_ps(m1, row + 16));
    }
#else
    for (int64_t kk = 0; kk < kl; ++kk) {
      const float* row = (const float*)(p->w + (k0 + kk) * p->ldw) + n0;
#ifdef LINNET_KERNELS_AVX2
      if (nr == NR) {
        for (int j = 0; j < NR; j += 8) _mm256_store_ps(pack + kk * NR + j, _mm256_loadu_ps(row + j));
        continue;
      }
#endif
      memcpy(pack + kk * NR, row, (size_t)nr * sizeof(float));
      memset(pack + kk * NR + nr, 0, (size_t)(NR - nr) * sizeof(float));
    }
#endif
    return;
  }
  const int64_t be = linnet_storage_block_elements[p->format], bb = linnet_storage_block_bytes[p->format];
  _Alignas(64) float rows[16][KC];
  for (int g = 0; g < NR; g += 16) {
    const int here = nr - g < 0 ? 0 : nr - g > 16 ? 16 : nr - g;
    if (here == 0) {
      for (int64_t kk = 0; kk < kl; ++kk) memset(pack + kk * NR + g, 0, 16 * sizeof(float));
      continue;
    }
    /* f32 rows (at whole floats) are read where they lie; other formats
     * dequantized first. */
    const float* from[16];
    for (int j = 0; j < 16; ++j) {
      from[j] = rows[j];
      if (j >= here) {
        memset(rows[j], 0, (size_t)kl * sizeof(float));
        continue;
      }
      const uint8_t* src = p->w + (n0 + g + j) * p->ldw + k0 / be * bb;
      if (p->format == LINNET_STORAGE_F32 && ((uintptr_t)src & 3) == 0) from[j] = (const float*)src;
      else dequantize(p->format, src, kl, rows[j]); /* f32 rows at an odd byte offset are copied */
    }
    int64_t kk = 0;
#ifdef __AVX512F__
    for (; kk + 16 <= kl; kk += 16) transpose16(from, kk, pack + kk * NR + g);
#endif
    for (; kk < kl; ++kk)
      for (int j = 0; j < 16; ++j) pack[kk * NR + g + j] = from[j][kk];
  }
}

#ifdef __AVX512F__

/* out[i][0..nr) (+)= sum_kk x[i][kk] * pack[kk][0..nr) for i < mr, with
 * x[i][kk] at x[i * xi + kk * xk]; `first` stores, later K-slices add to
 * what the first stored. */
static ALWAYS_INLINE void micro_tile(const float* pack, int64_t kl, const float* x, int64_t xi, int64_t xk,
                                     float* out, int64_t ldo, int mr, int nr, int first) {
  __m512 c[MR][2];
  for (int i = 0; i < MR; ++i) c[i][0] = c[i][1] = _mm512_setzero_ps();
  for (int64_t kk = 0; kk < kl; ++kk) {
    const __m512 b0 = _mm512_load_ps(pack + kk * NR), b1 = _mm512_load_ps(pack + kk * NR + 16);
    for (int i = 0; i < mr; ++i) {
      const __m512 a = _mm512_set1_ps(x[i * xi + kk * xk]);
      c[i][0] = _mm512_fmadd_ps(a, b0, c[i][0]);
      c[i][1] = _mm512_fmadd_ps(a, b1, c[i][1]);
    }
  }
  const __mmask16 m0 = nr >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << nr) - 1);
  const __mmask16 m1 = nr >= 32 ? (__mmask16)0xFFFF : nr <= 16 ? (__mmask16)0 : (__mmask16)((1u << (nr - 16)) - 1);
  for (int i = 0; i < mr; ++i) {
    float* o = out + i * ldo;
    if (!first) {
      c[i][0] = _mm512_add_ps(c[i][0], _mm512_maskz_loadu_ps(m0, o));
      c[i][1] = _mm512_add_ps(c[i][1], _mm512_maskz_loadu_ps(m1, o + 16));
    }
    _mm512_mask_storeu_ps(o, m0, c[i][0]);
    _mm512_mask_storeu_ps(o + 16, m1, c[i][1]);
  }
}

#elif !defined(LINNET_KERNELS_AVX2) /* portable; AVX2's is in linnet_kernels_avx2_products.h */

static ALWAYS_INLINE void micro_tile(const float* pack, int64_t kl, const float* x, int64_t xi, int64_t xk,
                                     float* out, int64_t ldo, int mr, int nr, int first) {
  float c[MR][NR] = {{0}};
  for (int64_t kk = 0; kk < kl; ++kk)
    for (int i = 0; i < mr; ++i) {
      const float a = x[i * xi + kk * xk];
      for (int j = 0; j < NR; ++j) c[i][j] += a * pack[kk * NR + j];
    }
  for (int i = 0; i < mr; ++i)
    for (int j = 0; j < nr; ++j) out[i * ldo + j] = first ? c[i][j] : out[i * ldo + j] + c[i][j];
}

#endif

/* A full-height tile is the hot case; give it its own constant row count,
 * and each of x's layouts (rows, or x_km's packed tiles) its constant stride. */
static void micro_tile_full(const float* pack, int64_t kl, const float* x, int64_t ldx, float* out, int64_t ldo,
                            int nr, int first) {
  micro_tile(pack, kl, x, ldx, 1, out, ldo, MR, nr, first);
}
static void micro_tile_part(const float* pack, int64_t kl, const float* x, int64_t ldx, float* out, int64_t ldo,
                            int mr, int nr, int first) {
  micro_tile(pack, kl, x, ldx, 1, out, ldo, mr, nr, first);
}
/* x_km's tiles packed as [kk][MR]: MR floats a step, contiguous. */
static void micro_tile_full_packed(const float* pack, int64_t kl, const float* x, float* out, int64_t ldo, int nr,
                                   int first) {
  micro_tile(pack, kl, x, 1, MR, out, ldo, MR, nr, first);
}
static void micro_tile_part_packed(const float* pack, int64_t kl, const float* x, float* out, int64_t ldo, int mr,
                                   int nr, int first) {
  micro_tile(pack, kl, x, 1, MR, out, ldo, mr, nr, first);
}

/* K in equal slices of at most KC, each a multiple of 256 (so of every
 * block) but the last: fewer passes over out than fixed KC-slices. */
static int64_t slice_length(int64_t k) {
  const int64_t slices = (k + KC - 1) / KC;
  return min64(KC, ((k + slices - 1) / slices + 255) / 256 * 256);
}

/* out[:, n0 .. n0+NR) (+)= x times W's panel at n0 over the K-slice [k0,
 * k0+kl), x[i][kk] at x + i * ldx + kk (the slice's first column): the
 * first slice stores, later ones add, in order. */
static void panel_slice(const product* p, const float* x, int64_t ldx, int64_t n0, int64_t k0, int64_t kl,
                        float* pack) {
  const int nr = (int)min64(NR, p->n - n0);
  pack_panel(p, n0, nr, k0, kl, pack);
  for (int64_t m0 = 0; m0 < p->m; m0 += MR) {
    float* out = p->out + m0 * p->ldo + n0;
    const int mr = (int)min64(MR, p->m - m0);
    if (mr == MR)
      micro_tile_full(pack, kl, x + m0 * ldx, ldx, out, p->ldo, nr, k0 == 0);
    else
      micro_tile_part(pack, kl, x + m0 * ldx, ldx, out, p->ldo, mr, nr, k0 == 0);
  }
}

static void prefill_panel(const product* p, int64_t n0) {
  _Alignas(64) float pack[KC * NR];
  const int64_t kc = slice_length(p->k);
  for (int64_t k0 = 0; k0 < p->k; k0 += kc) panel_slice(p, p->x + k0, p->ldx, n0, k0, min64(kc, p->k - k0), pack);
}

/* Panel by panel, x is read once a panel: from the caches while it fits,
 * from memory past them (a training head's dx = g E, x [C, Vocab] of 25
 * MB, read 18 times over: 137 GFLOP/s where the layers' products run at
 * 250; a 3 MB x runs as fast panel by panel as any other way, measured
 * with bench/kernels `train`). Past that size (and while a thread's share
 * of out stays in L2)
 * each thread takes a fixed run of panels and goes slice by slice, every
 * panel against a copy of x's slice with rows kl + 16 floats apart: x's
 * own rows may be a power-of-two multiple apart (Vocab = 49152 floats is 3
 * x 2^16 bytes), so that all of them share a few cache sets. Each out
 * element gets its slices in the same order either way: the same bits. */
#define PREFILL_X_CACHED_BYTES (8 << 20)
#define PREFILL_OUT_IN_L2_BYTES (1 << 20)

static void matmul_prefill_by_slices(const product* p) {
  const int64_t panels = (p->n + NR - 1) / NR, kc = slice_length(p->k), ldc = kc + 16;
#pragma omp parallel
  {
    int threads = 1, t = 0;
#ifdef _OPENMP
    threads = omp_get_num_threads();
    t = omp_get_thread_num();
#endif
    _Alignas(64) float pack[KC * NR];
    float* copy = (float*)malloc((size_t)(p->m * ldc) * sizeof(float)); /* NULL: x read where it lies */
    const int64_t first = panels * t / threads, last = panels * (t + 1) / threads;
    for (int64_t k0 = 0; k0 < p->k; k0 += kc) {
      const int64_t kl = min64(kc, p->k - k0);
      if (copy && first < last)
        for (int64_t i = 0; i < p->m; ++i) memcpy(copy + i * ldc, p->x + i * p->ldx + k0, (size_t)kl * sizeof(float));
      for (int64_t panel = first; panel < last; ++panel)
        panel_slice(p, copy ? copy : p->x + k0, copy ? ldc : p->ldx, panel * NR, k0, kl, pack);
    }
    free(copy);
  }
}

/* x_km's K-slice [k0, k0 + kl) of row tiles [first, last) as
 * xpack[tile][kk][MR], rows past M zero: each of x's rows read once, in
 * order. Read from x in the product, a tile would take one cache line per
 * kk at a stride of M floats (for M a power of two, lines that share two
 * of L1's sets), and each line twice. */
static void pack_x_tiles(const product* p, int64_t first, int64_t last, int64_t k0, int64_t kl, float* xpack) {
  const int64_t full = min64(last, p->m / MR);
  for (int64_t kk = 0; kk < kl; ++kk) {
    const float* row = p->x + (k0 + kk) * p->ldx;
    for (int64_t tile = first; tile < full; ++tile)
      memcpy(xpack + (tile * kl + kk) * MR, row + tile * MR, MR * sizeof(float));
    for (int64_t tile = full > first ? full : first; tile < last; ++tile)
      for (int i = 0; i < MR; ++i) xpack[(tile * kl + kk) * MR + i] = tile * MR + i < p->m ? row[tile * MR + i] : 0.0f;
  }
}

/* x given as [K, M] (x[i][kk] at x + kk * ldx + i: a transposed view), read
 * as it lies (x_km): each thread takes a fixed share of x's row tiles and, per
 * K-slice, packs them, then runs every panel against them (the same rows
 * every slice, so out's K-slice sums stay in one thread, in order; a
 * thread's packed tiles are its own, so no thread waits on another). */
static void matmul_prefill_km(const product* p, float* xpack) {
  const int64_t panels = (p->n + NR - 1) / NR, tiles = (p->m + MR - 1) / MR, kc = slice_length(p->k);
#pragma omp parallel if (p->m * p->n * p->k >= PARALLEL_MIN_WORK)
  {
    int threads = 1, t = 0;
#ifdef _OPENMP
    threads = omp_get_num_threads();
    t = omp_get_thread_num();
#endif
    const int64_t first = tiles * t / threads, last = tiles * (t + 1) / threads;
    _Alignas(64) float pack[KC * NR];
    for (int64_t k0 = 0; k0 < p->k; k0 += kc) {
      const int64_t kl = min64(kc, p->k - k0);
      pack_x_tiles(p, first, last, k0, kl, xpack);
      for (int64_t panel = 0; panel < panels; ++panel) {
        const int64_t n0 = panel * NR;
        const int nr = (int)min64(NR, p->n - n0);
        pack_panel(p, n0, nr, k0, kl, pack);
        for (int64_t tile = first; tile < last; ++tile) {
          const int64_t m0 = tile * MR;
          const int mr = (int)min64(MR, p->m - m0);
          float* out = p->out + m0 * p->ldo + n0;
          if (mr == MR)
            micro_tile_full_packed(pack, kl, xpack + tile * kl * MR, out, p->ldo, nr, k0 == 0);
          else
            micro_tile_part_packed(pack, kl, xpack + tile * kl * MR, out, p->ldo, mr, nr, k0 == 0);
        }
      }
    }
  }
}

/* x_km with few row tiles (a LoRA factor's dA = (dY B)^T X: M = r): the
 * row-tile split would leave threads idle, so the panels are split
 * instead, and each micro-tile reads x where it lies (MR rows of x are
 * MR consecutive floats a step). The same K-slices in the same order as
 * matmul_prefill_km: the same bits. */
static void matmul_km_by_panels(const product* p) {
  const int64_t panels = (p->n + NR - 1) / NR, kc = slice_length(p->k);
#pragma omp parallel for schedule(static) if (p->m * p->n * p->k >= PARALLEL_MIN_WORK)
  for (int64_t panel = 0; panel < panels; ++panel) {
    _Alignas(64) float pack[KC * NR];
    const int64_t n0 = panel * NR;
    const int nr = (int)min64(NR, p->n - n0);
    for (int64_t k0 = 0; k0 < p->k; k0 += kc) {
      const int64_t kl = min64(kc, p->k - k0);
      pack_panel(p, n0, nr, k0, kl, pack);
      for (int64_t m0 = 0; m0 < p->m; m0 += MR)
        micro_tile(pack, kl, p->x + k0 * p->ldx + m0, 1, p->ldx, p->out + m0 * p->ldo + n0, p->ldo,
                   (int)min64(MR, p->m - m0), nr, k0 == 0);
    }
  }
}

#ifdef __AVX512F__

#define NARROW_ROWS 1024

/* Rows [i0, i0 + rows) of out (rows <= NARROW_ROWS) for N <= NN: x's rows
 * read in order, each a run of `rows` floats, against the NN weights of
 * its k; the sums in sum[j][i] (64 KB at most, in L1 and L2). Per K-slice
 * a sum from 0 in order of k, then added to what earlier slices stored,
 * as the packed paths do it: the same bits. */
static ALWAYS_INLINE void narrow_rows(const product* p, int64_t i0, int64_t rows, const int NN) {
  /* Rows of sum 16 floats longer than a power of two: 4 KB apart, all
   * would share one L1 set. */
  _Alignas(64) float sum[16][NARROW_ROWS + 16];
  const int64_t kc = slice_length(p->k), vectors = (rows + 15) / 16;
  const __mmask16 tail = rows % 16 == 0 ? (__mmask16)0xFFFF : (__mmask16)((1u << (rows % 16)) - 1);
#define NARROW_WEIGHT(k, j) \
  _mm512_set1_ps((j) >= p->n ? 0.0f \
                 : p->w_kn  ? ((const float*)(p->w + (k) * p->ldw))[j] \
                            : ((const float*)(p->w + (j) * p->ldw))[k])
  for (int64_t k0 = 0; k0 < p->k; k0 += kc) {
    const int64_t k1 = min64(p->k, k0 + kc);
    for (int j = 0; j < NN; ++j) memset(sum[j], 0, (size_t)vectors * 16 * sizeof(float));
    int64_t k = k0;
    if (NN == 8) /* two rows of x a pass over sum: half the loads and stores of sum */
      for (; k + 2 <= k1; k += 2) {
        const float* xa = p->x + k * p->ldx + i0;
        const float* xb = xa + p->ldx;
        __m512 wa[8], wb[8];
        for (int j = 0; j < 8; ++j) wa[j] = NARROW_WEIGHT(k, j), wb[j] = NARROW_WEIGHT(k + 1, j);
        for (int64_t v = 0; v < vectors; ++v) {
          const __mmask16 m = v + 1 < vectors ? (__mmask16)0xFFFF : tail;
          const __m512 va = _mm512_maskz_loadu_ps(m, xa + v * 16), vb = _mm512_maskz_loadu_ps(m, xb + v * 16);
          for (int j = 0; j < 8; ++j) {
            const __m512 t = _mm512_fmadd_ps(va, wa[j], _mm512_load_ps(sum[j] + v * 16));
            _mm512_store_ps(sum[j] + v * 16, _mm512_fmadd_ps(vb, wb[j], t));
          }
        }
      }
    for (; k < k1; ++k) {
      const float* xk = p->x + k * p->ldx + i0;
      __m512 w[16];
      for (int j = 0; j < NN; ++j) w[j] = NARROW_WEIGHT(k, j);
      for (int64_t v = 0; v < vectors; ++v) {
        const __m512 xv = _mm512_maskz_loadu_ps(v + 1 < vectors ? (__mmask16)0xFFFF : tail, xk + v * 16);
        for (int j = 0; j < NN; ++j)
          _mm512_store_ps(sum[j] + v * 16, _mm512_fmadd_ps(xv, w[j], _mm512_load_ps(sum[j] + v * 16)));
      }
    }
#undef NARROW_WEIGHT
    for (int64_t i = 0; i < rows; ++i) {
      float* o = p->out + (i0 + i) * p->ldo;
      for (int j = 0; j < p->n; ++j) o[j] = k0 == 0 ? sum[j][i] : sum[j][i] + o[j];
    }
  }
}

/* x_km with N <= 16 (a LoRA factor's dB = dY^T (X A^T), N = r): packing x
 * for so few columns cost many times the product (28 GFLOP/s for M =
 * 1536, N = 8, K = 512); here each thread reads its rows of x once, in
 * place and in order. */
static void matmul_km_narrow(const product* p) {
  const int64_t chunks = (p->m + NARROW_ROWS - 1) / NARROW_ROWS;
  int64_t pieces = chunks;
#ifdef _OPENMP
  if (pieces < omp_get_max_threads()) pieces = omp_get_max_threads();
#endif
  /* Row pieces of whole vectors, at most NARROW_ROWS each. */
  const int64_t per = min64(NARROW_ROWS, ((p->m + pieces - 1) / pieces + 15) / 16 * 16);
  const int64_t count = (p->m + per - 1) / per;
#pragma omp parallel for schedule(static) if (p->m * p->n * p->k >= PARALLEL_MIN_WORK)
  for (int64_t c = 0; c < count; ++c) {
    const int64_t rows = min64(per, p->m - c * per);
    if (p->n <= 8)
      narrow_rows(p, c * per, rows, 8);
    else
      narrow_rows(p, c * per, rows, 16);
  }
}

#endif

/* x given as [K, M] (x_km): where there are row tiles for every thread,
 * each packs its own; few rows go panel by panel; at most 16 columns
 * (AVX-512) go by rows of out, x unpacked. */
static void matmul_km(const product* p, float* xpack) {
  int threads = 1;
#ifdef _OPENMP
  threads = omp_get_max_threads();
#endif
#ifdef __AVX512F__
  if (p->n <= 16 && ((uintptr_t)p->w & 3) == 0 && (p->ldw & 3) == 0) { /* W read as floats */
    matmul_km_narrow(p);
    return;
  }
#endif
  if ((p->m + MR - 1) / MR < 4 * threads)
    matmul_km_by_panels(p);
  else
    matmul_prefill_km(p, xpack);
}

static void matmul_prefill(const product* p) {
  const product q = *p;
  const int64_t panels = (q.n + NR - 1) / NR;
  int threads = 1;
#ifdef _OPENMP
  threads = omp_get_max_threads();
#endif
  const int big = q.m * q.n * q.k >= PARALLEL_MIN_WORK;
  if (big && q.m * q.k * 4 > PREFILL_X_CACHED_BYTES && q.m * q.n * 4 / threads <= PREFILL_OUT_IN_L2_BYTES) {
    matmul_prefill_by_slices(p);
    return;
  }
#pragma omp parallel for schedule(static) if (big)
  for (int64_t t = 0; t < panels; ++t) prefill_panel(&q, t * NR);
}

static void matmul(const product* p) {
  if (p->m <= 0 || p->n <= 0 || !format_known(p->format)) return;
  if (p->k == 0) {
    for (int64_t i = 0; i < p->m; ++i)
      for (int64_t j = 0; j < p->n; ++j) p->out[i * p->ldo + j] = 0.0f;
    return;
  }
  if (p->m <= LINNET_KERNELS_DECODE_MAX_M && !p->w_kn)
    matmul_decode(p);
  else
    matmul_prefill(p);
}

/* ---- descriptors: fast path on inner stride 1, else contiguous copies -- */

static void* xmalloc(size_t bytes) { return malloc(bytes ? bytes : 1); }

/* The matmul on descriptors: W row i at w_base + i*w_row bytes, byte j of
 * it at + j*w_col. An f32 x whose rows have stride 1 (a transposed view:
 * a gradient's dW = dYᵀ X, attention's Pᵀ dO) is read as it lies (x_km);
 * other views with an inner stride other than 1 are copied to contiguous
 * scratch (the slow path; if that allocation fails, nothing is written). */
static void matmul_descriptors(linnet_memref2* x, const uint8_t* w_base, int64_t w_row, int64_t w_col,
                               linnet_memref2* out, int64_t format, int64_t k, int w_kn) {
  if (!format_known(format)) return;
  const int64_t m = out->sizes[0], n = out->sizes[1];
  if (m <= 0 || n <= 0) return;
  /* W's rows: N of K elements, or (w_kn, f32) K of N. */
  const int64_t rows = w_kn ? k : n, rb = w_kn ? n * 4 : linnet_storage_row_bytes(format, k);
  product p = {format, m, n, k, NULL, 0, NULL, 0, NULL, 0, w_kn};
  float* xpack = NULL; /* x_km: the packed row tiles of one K-slice */
  float* xcopy = NULL;
  uint8_t* wcopy = NULL;
  float* ocopy = NULL;

  const float* xb = (const float*)x->aligned + x->offset;
  if (x->strides[1] == 1 || k <= 1) {
    p.x = xb;
    p.ldx = x->strides[0];
  } else if (x->strides[0] == 1 && format == LINNET_STORAGE_F32 &&
             (xpack = (float*)xmalloc((size_t)(((m + MR - 1) / MR * MR) * slice_length(k)) * sizeof(float)))) {
    p.x = xb;
    p.ldx = x->strides[1];
  } else {
    xcopy = (float*)xmalloc((size_t)(m * k) * sizeof(float));
    for (int64_t i = 0; xcopy && i < m; ++i)
      for (int64_t j = 0; j < k; ++j) xcopy[i * k + j] = xb[i * x->strides[0] + j * x->strides[1]];
    p.x = xcopy;
    p.ldx = k;
  }
  if (w_col == 1 || rb <= 1) {
    p.w = w_base;
    p.ldw = w_row;
  } else {
    wcopy = (uint8_t*)xmalloc((size_t)(rows * rb));
    for (int64_t i = 0; wcopy && i < rows; ++i)
      for (int64_t j = 0; j < rb; ++j) wcopy[i * rb + j] = w_base[i * w_row + j * w_col];
    p.w = wcopy;
    p.ldw = rb;
  }
  float* ob = (float*)out->aligned + out->offset;
  if (out->strides[1] == 1 || n <= 1) {
    p.out = ob;
    p.ldo = out->strides[0];
  } else {
    ocopy = (float*)xmalloc((size_t)(m * n) * sizeof(float));
    p.out = ocopy;
    p.ldo = n;
  }
  if ((p.x == NULL) | (p.w == NULL) | (p.out == NULL)) goto done;
  if (xpack)
    matmul_km(&p, xpack);
  else
    matmul(&p);
  if (ocopy)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) ob[i * out->strides[0] + j * out->strides[1]] = ocopy[i * n + j];
done:
  free(xpack);
  free(xcopy);
  free(wcopy);
  free(ocopy);
}

void KERNEL(_mlir_ciface_linnet_kernel_matmul_packed)(linnet_memref2* x, linnet_memref2* w, linnet_memref2* out,
                                                      int64_t format, int64_t k) {
  const uint8_t* wb = (const uint8_t*)w->aligned + w->offset;
  matmul_descriptors(x, wb, w->strides[0], w->strides[1], out, format, k, 0);
}

/* An f32 W of rows [N, K], or (w_kn) [K, N]: a strided one has its rows
 * gathered into a contiguous copy first. */
static void matmul_f32_rows(linnet_memref2* x, linnet_memref2* w, linnet_memref2* out, int w_kn) {
  const float* wb = (const float*)w->aligned + w->offset;
  const int64_t k = x->sizes[1], rows = w->sizes[0], cols = w->sizes[1];
  if (w->strides[1] == 1 || cols <= 1) {
    matmul_descriptors(x, (const uint8_t*)wb, w->strides[0] * 4, 1, out, LINNET_STORAGE_F32, k, w_kn);
    return;
  }
  float* copy = (float*)xmalloc((size_t)(rows * cols) * sizeof(float));
  if (copy == NULL) return;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) copy[i * cols + j] = wb[i * w->strides[0] + j * w->strides[1]];
  matmul_descriptors(x, (const uint8_t*)copy, cols * 4, 1, out, LINNET_STORAGE_F32, k, w_kn);
  free(copy);
}

void KERNEL(_mlir_ciface_linnet_kernel_matmul_f32)(linnet_memref2* x, linnet_memref2* w, linnet_memref2* out) {
  matmul_f32_rows(x, w, out, 0);
}

/* W f32 [K, N] as it lies: a gradient's dX = dY W and dW = dYᵀ X read
 * their b this way, which would otherwise be transposed in memory first. */
void KERNEL(_mlir_ciface_linnet_kernel_matmul_f32_kn)(linnet_memref2* x, linnet_memref2* w, linnet_memref2* out) {
  matmul_f32_rows(x, w, out, 1);
}

/* Matrix b of a stack [B, R, C] as a linnet_memref2 view. */
static linnet_memref2 stack_item(const linnet_memref3* t, int64_t b) {
  linnet_memref2 m = {t->allocated, t->aligned, t->offset + b * t->strides[0],
                      {t->sizes[1], t->sizes[2]}, {t->strides[1], t->strides[2]}};
  return m;
}

static void batched_matmul_f32(linnet_memref3* x, linnet_memref3* w, linnet_memref3* out, int w_kn) {
  for (int64_t b = 0; b < out->sizes[0]; ++b) {
    linnet_memref2 xb = stack_item(x, b), wb = stack_item(w, b), ob = stack_item(out, b);
    matmul_f32_rows(&xb, &wb, &ob, w_kn);
  }
}

void KERNEL(_mlir_ciface_linnet_kernel_batched_matmul_f32)(linnet_memref3* x, linnet_memref3* w, linnet_memref3* out) {
  batched_matmul_f32(x, w, out, 0);
}

void KERNEL(_mlir_ciface_linnet_kernel_batched_matmul_f32_kn)(linnet_memref3* x, linnet_memref3* w,
                                                              linnet_memref3* out) {
  batched_matmul_f32(x, w, out, 1);
}

/* ---- unpack and gather: whole rows dequantized ------------------------- */

/* Dequantizes a row of k elements into out[j * stride]. */
static void dequantize_row(int64_t format, const uint8_t* src, int64_t w_col, int64_t k, float* out,
                           int64_t stride) {
  const int64_t be = linnet_storage_block_elements[format], bb = linnet_storage_block_bytes[format];
  _Alignas(64) float buf[CHUNK];
  uint8_t bytes[CHUNK * 4]; /* a chunk's bytes when W's inner stride is not 1 */
  for (int64_t k0 = 0; k0 < k; k0 += CHUNK) {
    const int64_t len = min64(CHUNK, k - k0), nbytes = len / be * bb;
    const uint8_t* s = src + k0 / be * bb * w_col;
    if (w_col != 1) {
      for (int64_t b = 0; b < nbytes; ++b) bytes[b] = s[b * w_col];
      s = bytes;
    }
    if (stride == 1) {
      dequantize(format, s, len, out + k0);
    } else {
      dequantize(format, s, len, buf);
      for (int64_t j = 0; j < len; ++j) out[(k0 + j) * stride] = buf[j];
    }
  }
}

void KERNEL(_mlir_ciface_linnet_kernel_unpack)(linnet_memref2* w, linnet_memref2* out, int64_t format, int64_t k) {
  if (!format_known(format)) return;
  const int64_t n = out->sizes[0];
  const uint8_t* wb = (const uint8_t*)w->aligned + w->offset;
  float* ob = (float*)out->aligned + out->offset;
  const int64_t w_row = w->strides[0], w_col = w->strides[1], o_row = out->strides[0], o_col = out->strides[1];
#pragma omp parallel for schedule(static) if (n * k >= PARALLEL_MIN_WORK)
  for (int64_t i = 0; i < n; ++i) dequantize_row(format, wb + i * w_row, w_col, k, ob + i * o_row, o_col);
}

void KERNEL(_mlir_ciface_linnet_kernel_gather_rows)(linnet_memref2* w, linnet_memref1* ids, linnet_memref2* out,
                                                    int64_t format, int64_t k) {
  if (!format_known(format)) return;
  const int64_t n = w->sizes[0], r = out->sizes[0];
  if (n <= 0 || r <= 0) return;
  const uint8_t* wb = (const uint8_t*)w->aligned + w->offset;
  const int64_t* ib = (const int64_t*)ids->aligned + ids->offset;
  float* ob = (float*)out->aligned + out->offset;
  const int64_t w_row = w->strides[0], w_col = w->strides[1], o_row = out->strides[0], o_col = out->strides[1];
  const int64_t id_stride = ids->strides[0];
#pragma omp parallel for schedule(static) if (r * k >= PARALLEL_MIN_WORK)
  for (int64_t i = 0; i < r; ++i) {
    int64_t id = ib[i * id_stride];
    id = id < 0 ? 0 : id >= n ? n - 1 : id;
    dequantize_row(format, wb + id * w_row, w_col, k, ob + i * o_row, o_col);
  }
}

/* ---- attention --------------------------------------------------------- */

/* Fused scaled dot-product attention of grouped query heads (f32), the
 * language's definition (expand_attention.cpp) computed per query row over
 * its visible keys only:
 *  - the mask row is scanned first for its visible range [lo, hi) and
 *    count; a row that sees no key gets the mean of all K values (each of
 *    its K scores is -3e38, so each p is 1 and each weight 1/K);
 *  - else masked keys are skipped: their p = expf(-3e38 - max) is 0;
 *  - s_j = dot(q, k_j) * scale, max, p_j = expf(s_j - max) (libm's, so
 *    every exp is bitwise the reference backend's), Z = sum p_j in key
 *    order, w_j = p_j / Z, out = sum_j w_j v_j.
 * AVX-512 path (inner strides 1, the mask's 0 or 1): rows (g, i) of one
 * (l0, l1) in the order (i, g), in blocks of up to ATTN_ROWS rows that
 * share each k and v row, over the union of their visible ranges. Scores:
 * with 8 or more rows per (l0, l1) (prefill), the block's rows in the 16
 * lanes (q transposed once, each k value broadcast; the weights stored
 * [key][16 rows]); with fewer (decode), per row 16 keys' dot products at a
 * time (vectors over d, reduced by one transposing tree, the same for
 * every key; the weights stored per row). The expfs in an out-of-line loop
 * (each call clobbers every vector register), then PV register tiles of up
 * to ATTN_PV_ROWS rows x 64 values. Other views go through a plain C path,
 * one row at a time. The method depends on the shape only, and a row's
 * arithmetic is the same whichever block or thread computes it (keys
 * outside its range enter as +0), so results do not depend on the thread
 * count. Scratch: ATTN_ROWS x K + 16 D floats per thread (stack up to
 * 64 KiB, else one allocation per thread per call). K < 2^31. */

#include <math.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "linnet_kernels_mask.h"

#define ATTN_ROWS 16
#define ATTN_PV_ROWS 6

/* Per-thread scratch up to this many floats lives on the stack. */
#define ATTN_STACK_FLOATS 16384

typedef struct {
  const float* q;
  const float* k;
  const float* v;
  const uint8_t* mask;
  float* out;
  int64_t l0, l1, g, nq, nk, d, e;
  int64_t qs[5], ks[4], vs[4], ms[5], os[5];
  float scale;
} attn_args;

MAYBE_UNUSED static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

static ALWAYS_INLINE const float* attn_q(const attn_args* a, int64_t l0, int64_t l1, int64_t g, int64_t i) {
  return a->q + l0 * a->qs[0] + l1 * a->qs[1] + g * a->qs[2] + i * a->qs[3];
}
static ALWAYS_INLINE float* attn_out(const attn_args* a, int64_t l0, int64_t l1, int64_t g, int64_t i) {
  return a->out + l0 * a->os[0] + l1 * a->os[1] + g * a->os[2] + i * a->os[3];
}
static ALWAYS_INLINE const uint8_t* attn_mask(const attn_args* a, int64_t l0, int64_t l1, int64_t g, int64_t i) {
  return a->mask + l0 * a->ms[0] + l1 * a->ms[1] + g * a->ms[2] + i * a->ms[3];
}

/* Unit inner strides for q, k, v and out (the mask's may be anything): what
 * the vector paths need. */
MAYBE_UNUSED static int attn_unit_strides(const attn_args* a) {
  return (a->qs[4] == 1 || a->d <= 1) && (a->ks[3] == 1 || a->d <= 1) && (a->vs[3] == 1 || a->e <= 1) &&
         (a->os[4] == 1 || a->e <= 1);
}

/* One query row, any strides; buf holds K + E floats. */
static void attn_row_generic(const attn_args* a, int64_t l0, int64_t l1, int64_t g, int64_t i, float* buf) {
  const int64_t nk = a->nk, d = a->d, e = a->e;
  const float* q = attn_q(a, l0, l1, g, i);
  const float* k = a->k + l0 * a->ks[0] + l1 * a->ks[1];
  const float* v = a->v + l0 * a->vs[0] + l1 * a->vs[1];
  const uint8_t* m = attn_mask(a, l0, l1, g, i);
  const int64_t qd = a->qs[4], kj = a->ks[2], kd = a->ks[3], vj = a->vs[2], ve = a->vs[3], mj = a->ms[4];
  float* o = attn_out(a, l0, l1, g, i);
  float* acc = buf + nk;
  for (int64_t c = 0; c < e; ++c) acc[c] = 0.0f;
  const key_range r = scan_mask(m, mj, nk);
  if (r.count == 0) {
    const float w = 1.0f / (float)nk;
    for (int64_t j = 0; j < nk; ++j)
      for (int64_t c = 0; c < e; ++c) acc[c] += w * v[j * vj + c * ve];
  } else {
    const int dense = r.count == r.hi - r.lo;
    float mx = ATTN_MASKED;
    for (int64_t j = r.lo; j < r.hi; ++j) {
      if (!dense && !m[j * mj]) continue;
      float s = 0.0f;
      for (int64_t c = 0; c < d; ++c) s += q[c * qd] * k[j * kj + c * kd];
      s *= a->scale;
      buf[j] = s;
      mx = s > mx ? s : mx;
    }
    for (int64_t j = r.lo; j < r.hi; ++j) buf[j] = dense || m[j * mj] ? expf(buf[j] - mx) : 0.0f;
    float z = 0.0f;
    for (int64_t j = r.lo; j < r.hi; ++j) z += buf[j];
    for (int64_t j = r.lo; j < r.hi; ++j) {
      if (!dense && !m[j * mj]) continue;
      const float w = buf[j] / z;
      for (int64_t c = 0; c < e; ++c) acc[c] += w * v[j * vj + c * ve];
    }
  }
  for (int64_t c = 0; c < e; ++c) o[c * a->os[4]] = acc[c];
}

#ifdef LINNET_KERNELS_AVX2
#include "linnet_kernels_avx2_attention.h"
#endif

#ifdef __AVX512F__

static ALWAYS_INLINE __mmask16 tail_mask(int64_t n) {
  return n >= 16 ? (__mmask16)0xFFFF : n <= 0 ? (__mmask16)0 : (__mmask16)((1u << n) - 1);
}

/* The 16 horizontal sums of acc[0..15], lane c = sum of acc[c]: the same
 * tree for every c ((x0 + x2) + (x1 + x3) in each 128-bit lane, then
 * (L0 + L1) + (L2 + L3)). */
static ALWAYS_INLINE __m512 reduce16(const __m512* acc) {
  __m512 t[8], u[4];
  for (int p = 0; p < 8; ++p)
    t[p] = _mm512_add_ps(_mm512_unpacklo_ps(acc[2 * p], acc[2 * p + 1]),
                         _mm512_unpackhi_ps(acc[2 * p], acc[2 * p + 1]));
  for (int p = 0; p < 4; ++p) {
    const __m512d x = _mm512_castps_pd(t[2 * p]), y = _mm512_castps_pd(t[2 * p + 1]);
    u[p] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(x, y)), _mm512_castpd_ps(_mm512_unpackhi_pd(x, y)));
  }
  const __m512 v0 = _mm512_add_ps(_mm512_shuffle_f32x4(u[0], u[1], 0x88), _mm512_shuffle_f32x4(u[0], u[1], 0xDD));
  const __m512 v1 = _mm512_add_ps(_mm512_shuffle_f32x4(u[2], u[3], 0x88), _mm512_shuffle_f32x4(u[2], u[3], 0xDD));
  return _mm512_add_ps(_mm512_shuffle_f32x4(v0, v1, 0x88), _mm512_shuffle_f32x4(v0, v1, 0xDD));
}

/* s[0..16) = scale * dot(q, krow[c]) for c < 16, D = d; krow entries may
 * repeat (a short tile repeats its last key). */
static ALWAYS_INLINE __m512 dots16(const float* q, const float* const* krow, int64_t d, float scale) {
  __m512 acc[16];
  for (int c = 0; c < 16; ++c) acc[c] = _mm512_setzero_ps();
  int64_t d0 = 0;
  for (; d0 + 16 <= d; d0 += 16) {
    const __m512 qv = _mm512_loadu_ps(q + d0);
    for (int c = 0; c < 16; ++c) acc[c] = _mm512_fmadd_ps(qv, _mm512_loadu_ps(krow[c] + d0), acc[c]);
  }
  if (d0 < d) {
    const __mmask16 mt = tail_mask(d - d0);
    const __m512 qv = _mm512_maskz_loadu_ps(mt, q + d0);
    for (int c = 0; c < 16; ++c) acc[c] = _mm512_fmadd_ps(qv, _mm512_maskz_loadu_ps(mt, krow[c] + d0), acc[c]);
  }
  return _mm512_mul_ps(reduce16(acc), _mm512_set1_ps(scale));
}

/* out rows o[0..nr) = sum_{j in [j0, j1)} w[r][(j - base) * ws] * v_j over
 * E values, 64 at a time; nr a constant after inlining. */
static ALWAYS_INLINE void pv_tile(const float* v, int64_t vj, int64_t e, int64_t j0, int64_t j1, const float* const* w,
                                  int64_t base, int64_t ws, float* const* o, const int nr) {
  for (int64_t e0 = 0; e0 < e; e0 += 64) {
    const __mmask16 m0 = tail_mask(e - e0), m1 = tail_mask(e - e0 - 16), m2 = tail_mask(e - e0 - 32),
                    m3 = tail_mask(e - e0 - 48);
    __m512 acc[ATTN_PV_ROWS][4];
    for (int r = 0; r < nr; ++r) acc[r][0] = acc[r][1] = acc[r][2] = acc[r][3] = _mm512_setzero_ps();
    if (e - e0 >= 64) {
      for (int64_t j = j0; j < j1; ++j) {
        const float* vr = v + j * vj + e0;
        const __m512 v0 = _mm512_loadu_ps(vr), v1 = _mm512_loadu_ps(vr + 16), v2 = _mm512_loadu_ps(vr + 32),
                     v3 = _mm512_loadu_ps(vr + 48);
        for (int r = 0; r < nr; ++r) {
          const __m512 b = _mm512_set1_ps(w[r][(j - base) * ws]);
          acc[r][0] = _mm512_fmadd_ps(b, v0, acc[r][0]);
          acc[r][1] = _mm512_fmadd_ps(b, v1, acc[r][1]);
          acc[r][2] = _mm512_fmadd_ps(b, v2, acc[r][2]);
          acc[r][3] = _mm512_fmadd_ps(b, v3, acc[r][3]);
        }
      }
    } else {
      for (int64_t j = j0; j < j1; ++j) {
        const float* vr = v + j * vj + e0;
        const __m512 v0 = _mm512_maskz_loadu_ps(m0, vr), v1 = _mm512_maskz_loadu_ps(m1, vr + 16),
                     v2 = _mm512_maskz_loadu_ps(m2, vr + 32), v3 = _mm512_maskz_loadu_ps(m3, vr + 48);
        for (int r = 0; r < nr; ++r) {
          const __m512 b = _mm512_set1_ps(w[r][(j - base) * ws]);
          acc[r][0] = _mm512_fmadd_ps(b, v0, acc[r][0]);
          acc[r][1] = _mm512_fmadd_ps(b, v1, acc[r][1]);
          acc[r][2] = _mm512_fmadd_ps(b, v2, acc[r][2]);
          acc[r][3] = _mm512_fmadd_ps(b, v3, acc[r][3]);
        }
      }
    }
    for (int r = 0; r < nr; ++r) {
      _mm512_mask_storeu_ps(o[r] + e0, m0, acc[r][0]);
      _mm512_mask_storeu_ps(o[r] + e0 + 16, m1, acc[r][1]);
      _mm512_mask_storeu_ps(o[r] + e0 + 32, m2, acc[r][2]);
      _mm512_mask_storeu_ps(o[r] + e0 + 48, m3, acc[r][3]);
    }
  }
}

static void pv_rows(const float* v, int64_t vj, int64_t e, int64_t j0, int64_t j1, const float* const* w,
                    int64_t base, int64_t ws, float* const* o, int nr) {
  switch (nr) {
    case 1: pv_tile(v, vj, e, j0, j1, w, base, ws, o, 1); break;
    case 2: pv_tile(v, vj, e, j0, j1, w, base, ws, o, 2); break;
    case 3: pv_tile(v, vj, e, j0, j1, w, base, ws, o, 3); break;
    case 4: pv_tile(v, vj, e, j0, j1, w, base, ws, o, 4); break;
    case 5: pv_tile(v, vj, e, j0, j1, w, base, ws, o, 5); break;
    default: pv_tile(v, vj, e, j0, j1, w, base, ws, o, ATTN_PV_ROWS); break;
  }
}

/* The row sees no key: out = sum_j (1/K) v_j over all K keys. */
static void attn_uniform_avx(const float* v, int64_t vj, int64_t nk, int64_t e, float* o) {
  const float w = 1.0f / (float)nk;
  for (int64_t e0 = 0; e0 < e; e0 += 16) {
    const __mmask16 mt = tail_mask(e - e0);
    const __m512 b = _mm512_set1_ps(w);
    __m512 acc = _mm512_setzero_ps();
    for (int64_t j = 0; j < nk; ++j) acc = _mm512_fmadd_ps(b, _mm512_maskz_loadu_ps(mt, v + j * vj + e0), acc);
    _mm512_mask_storeu_ps(o + e0, mt, acc);
  }
}

/* s[j * stride] = expf(s[j * stride] - mx) for j < n (m == NULL) or where
 * m[j] != 0, else 0. Kept out of line: around each libm call every vector
 * register is lost, so the callers' vector constants must not be live here,
 * and nothing is carried from one call to the next. */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static void exp_run(float* s, int64_t n, int64_t stride, float mx, const uint8_t* m) {
  if (m == NULL) {
    for (int64_t j = 0; j < n; ++j) s[j * stride] = expf(s[j * stride] - mx);
  } else {
    for (int64_t j = 0; j < n; ++j) s[j * stride] = m[j] ? expf(s[j * stride] - mx) : 0.0f;
  }
}

/* Bit r set where row r (in `rows`) sees key j. */
static ALWAYS_INLINE __mmask16 hole_bits(const uint8_t* const* m, int rows, int64_t j) {
  __mmask16 bits = (__mmask16)(0xFFFF & ~rows);
  for (int r = 0; r < 16; ++r)
    if ((rows >> r & 1) && m[r][j]) bits |= (__mmask16)(1u << r);
  return bits;
}

/* Blocks of 8 or more rows: rows in the lanes. qt[d * 16 + r] = q[r][d]; the
 * weights go to p[(j - lo) * 16 + r] for j in [lo, hi), 0 where row r does
 * not see key j. Row r's score s_j = (sum over d in order, FMA) * scale;
 * max, its expfs, and Z = sum over j in order of p_j; w = p / Z. */
static void attn_softmax_lanes(const attn_args* a, const float* const* q, const uint8_t* const* m, const key_range* kr,
                               int n, int64_t lo, int64_t hi, const float* k, int64_t kj, float* p, float* qt) {
  const int64_t d = a->d;
  for (int64_t c = 0; c < d; ++c)
    for (int r = 0; r < 16; ++r) qt[c * 16 + r] = r < n ? q[r][c] : 0.0f;
  const __m512 scale = _mm512_set1_ps(a->scale);
  for (int64_t j0 = lo; j0 < hi; j0 += 8) {
    const float* kr8[8];
    for (int c = 0; c < 8; ++c) kr8[c] = k + min64(j0 + c, hi - 1) * kj;
    __m512 acc[8];
    for (int c = 0; c < 8; ++c) acc[c] = _mm512_setzero_ps();
    for (int64_t x = 0; x < d; ++x) {
      const __m512 qv = _mm512_load_ps(qt + x * 16);
      for (int c = 0; c < 8; ++c) acc[c] = _mm512_fmadd_ps(qv, _mm512_set1_ps(kr8[c][x]), acc[c]);
    }
    const int nc = (int)min64(8, hi - j0);
    for (int c = 0; c < nc; ++c) _mm512_store_ps(p + (j0 + c - lo) * 16, _mm512_mul_ps(acc[c], scale));
  }
  /* Which lanes see key j: lo_r <= j < hi_r (and the mask byte for rows
   * with holes). */
  int32_t rlo[16], rhi[16];
  int holes = 0;
  for (int r = 0; r < 16; ++r) {
    rlo[r] = r < n ? (int32_t)kr[r].lo : INT32_MAX;
    rhi[r] = r < n ? (int32_t)kr[r].hi : 0;
    if (r < n && kr[r].count != kr[r].hi - kr[r].lo) holes |= 1 << r;
  }
  const __m512i vlo = _mm512_loadu_si512(rlo), vhi = _mm512_loadu_si512(rhi);
#define SEES(j)                                                                                               \
  (_mm512_cmple_epi32_mask(vlo, _mm512_set1_epi32((int32_t)(j))) &                                          \
   _mm512_cmpgt_epi32_mask(vhi, _mm512_set1_epi32((int32_t)(j))) & (holes ? hole_bits(m, holes, j) : 0xFFFF))
  __m512 vm = _mm512_set1_ps(ATTN_MASKED);
  for (int64_t j = lo; j < hi; ++j) vm = _mm512_mask_max_ps(vm, SEES(j), vm, _mm512_load_ps(p + (j - lo) * 16));
  _Alignas(64) float mx[16];
  _mm512_store_ps(mx, vm);
  for (int r = 0; r < n; ++r) {
    float* s = p + r - lo * 16;
    const float mr = mx[r];
    exp_run(s + kr[r].lo * 16, kr[r].hi - kr[r].lo, 16, mr, holes >> r & 1 ? m[r] + kr[r].lo : NULL);
  }
  __m512 vz = _mm512_setzero_ps();
  for (int64_t j = lo; j < hi; ++j) {
    const __m512 e = _mm512_maskz_mov_ps(SEES(j), _mm512_load_ps(p + (j - lo) * 16));
    _mm512_store_ps(p + (j - lo) * 16, e);
    vz = _mm512_add_ps(vz, e);
  }
#undef SEES
  vz = _mm512_mask_mov_ps(_mm512_set1_ps(1.0f), (__mmask16)((1u << n) - 1), vz);
  for (int64_t j = lo; j < hi; ++j) _mm512_store_ps(p + (j - lo) * 16, _mm512_div_ps(_mm512_load_ps(p + (j - lo) * 16), vz));
}

/* Rows q/m/o/kr[0..n) of one (l0, l1), all seeing a key, over the union
 * [lo, hi) of their key ranges. */
static void attn_rows_avx(const attn_args* a, const float* k, const float* v, int64_t kj, int64_t vj,
                          const float* const* q, const uint8_t* const* m, float* const* o, const key_range* kr, int n,
                          int lanes, float* scratch) {
  int64_t lo = a->nk, hi = 0;
  for (int r = 0; r < n; ++r) {
    lo = min64(lo, kr[r].lo);
    hi = max64(hi, kr[r].hi);
  }
  float* w[ATTN_ROWS];
  int64_t ws = 1;
  if (lanes) {
    ws = 16;
    for (int r = 0; r < n; ++r) w[r] = scratch + r;
    attn_softmax_lanes(a, q, m, kr, n, lo, hi, k, kj, scratch, scratch + 16 * ((a->nk + 15) / 16 * 16));
  } else {
    const int64_t ld = (hi - lo + 15) / 16 * 16;
    for (int r = 0; r < n; ++r) w[r] = scratch + r * ld;
    /* Scores over the block's keys [lo, hi), 16 keys at a time. */
    for (int64_t j0 = lo; j0 < hi; j0 += 16) {
      const float* krow[16];
      for (int c = 0; c < 16; ++c) krow[c] = k + min64(j0 + c, hi - 1) * kj;
      for (int r = 0; r < n; ++r) {
        if (j0 >= kr[r].hi || j0 + 16 <= kr[r].lo) continue;
        _mm512_storeu_ps(w[r] + (j0 - lo), dots16(q[r], krow, a->d, a->scale));
      }
    }

    /* Softmax of each row over its visible keys; 0 elsewhere in [lo, hi). */
    for (int r = 0; r < n; ++r) {
      float* s = w[r] - lo; /* s[j] for j in [lo, hi) */
      const int64_t rlo = kr[r].lo, rhi = kr[r].hi;
      const int dense = kr[r].count == rhi - rlo;
      float mx = ATTN_MASKED;
      if (dense) {
        int64_t j = rlo;
        __m512 vm = _mm512_set1_ps(ATTN_MASKED);
        for (; j + 16 <= rhi; j += 16) vm = _mm512_max_ps(vm, _mm512_loadu_ps(s + j));
        mx = _mm512_reduce_max_ps(vm);
        for (; j < rhi; ++j) mx = s[j] > mx ? s[j] : mx;
        exp_run(s + rlo, rhi - rlo, 1, mx, NULL);
      } else {
        for (int64_t j = rlo; j < rhi; ++j)
          if (m[r][j]) mx = s[j] > mx ? s[j] : mx;
        exp_run(s + rlo, rhi - rlo, 1, mx, m[r] + rlo);
      }
      /* Z: 16 sums over j = rlo + 16 t + lane, then the tail in order (masked
       * keys add +0). */
      int64_t j = rlo;
      __m512 vs = _mm512_setzero_ps();
      for (; j + 16 <= rhi; j += 16) vs = _mm512_add_ps(vs, _mm512_loadu_ps(s + j));
      float z = _mm512_reduce_add_ps(vs);
      for (; j < rhi; ++j) z += s[j];
      const __m512 vz = _mm512_set1_ps(z);
      j = rlo;
      for (; j + 16 <= rhi; j += 16) _mm512_storeu_ps(s + j, _mm512_div_ps(_mm512_loadu_ps(s + j), vz));
      for (; j < rhi; ++j) s[j] = s[j] / z;
      for (j = lo; j < rlo; ++j) s[j] = 0.0f;
      for (j = rhi; j < hi; ++j) s[j] = 0.0f;
    }
  }
  /* out = W . V in tiles of up to ATTN_PV_ROWS rows, each over its rows'
   * keys. */
  for (int r0 = 0; r0 < n; r0 += ATTN_PV_ROWS) {
    const int pr = (int)min64(ATTN_PV_ROWS, n - r0);
    int64_t plo = hi, phi = lo;
    for (int r = r0; r < r0 + pr; ++r) {
      plo = min64(plo, kr[r].lo);
      phi = max64(phi, kr[r].hi);
    }
    pv_rows(v, vj, a->e, plo, phi, (const float* const*)(w + r0), lo, ws, o + r0, pr);
  }
}

/* Rows t0 .. t0+nr-1 (t = i * G + g) of (l0, l1); scratch holds
 * ATTN_ROWS x round16(K) + 16 D floats, 64-byte aligned. `lanes`: the
 * rows-in-lanes scores (for blocks of 8 or more rows), else 16 keys' dot
 * products at a time per row. */
static void attn_block_avx(const attn_args* a, int64_t l0, int64_t l1, int64_t t0, int nr, int lanes,
                           float* scratch) {
  const int64_t nk = a->nk, G = a->g;
  const float* k = a->k + l0 * a->ks[0] + l1 * a->ks[1];
  const float* v = a->v + l0 * a->vs[0] + l1 * a->vs[1];
  const int64_t kj = a->ks[2], vj = a->vs[2], mj = a->ms[4];
  const float* q[ATTN_ROWS];
  const uint8_t* m[ATTN_ROWS];
  float* o[ATTN_ROWS];
  key_range kr[ATTN_ROWS];
  int n = 0; /* rows that see a key, compacted */
  const uint8_t* last = NULL; /* rows of a broadcast mask share a scan */
  key_range x = {0, 0, 0};
  for (int r = 0; r < nr; ++r) {
    const int64_t g = (t0 + r) % G, i = (t0 + r) / G;
    const uint8_t* mr = attn_mask(a, l0, l1, g, i);
    if (mr != last) x = scan_mask(mr, mj, nk);
    last = mr;
    float* orow = attn_out(a, l0, l1, g, i);
    if (x.count == 0) {
      attn_uniform_avx(v, vj, nk, a->e, orow);
      continue;
    }
    q[n] = attn_q(a, l0, l1, g, i);
    m[n] = mr;
    o[n] = orow;
    kr[n] = x;
    ++n;
  }
  if (n == 0) return;
  /* Rows whose key ranges lie far apart (requests in their own pages of one
   * pool) go in separate groups, so a group costs its rows' keys, not the
   * span between them. A row's arithmetic does not depend on its group. */
  int order[ATTN_ROWS];
  for (int r = 0; r < n; ++r) order[r] = r;
  for (int r = 1; r < n; ++r)
    for (int s = r; s > 0 && kr[order[s]].lo < kr[order[s - 1]].lo; --s) {
      const int t = order[s];
      order[s] = order[s - 1];
      order[s - 1] = t;
    }
  for (int g0 = 0; g0 < n;) {
    int64_t glo = kr[order[g0]].lo, ghi = kr[order[g0]].hi, widest = ghi - glo;
    int g1 = g0 + 1;
    for (; g1 < n; ++g1) {
      const key_range* x = &kr[order[g1]];
      const int64_t span = max64(ghi, x->hi) - glo, w = max64(widest, x->hi - x->lo);
      if (span > 2 * w + 64) break;
      ghi = max64(ghi, x->hi);
      widest = w;
    }
    const float* gq[ATTN_ROWS];
    const uint8_t* gm[ATTN_ROWS];
    float* go[ATTN_ROWS];
    key_range gk[ATTN_ROWS];
    for (int r = g0; r < g1; ++r) {
      gq[r - g0] = q[order[r]];
      gm[r - g0] = m[order[r]];
      go[r - g0] = o[order[r]];
      gk[r - g0] = kr[order[r]];
    }
    attn_rows_avx(a, k, v, kj, vj, gq, gm, go, gk, g1 - g0, lanes, scratch);
    g0 = g1;
  }
}

#endif /* __AVX512F__ */

/* Total query rows below this many row-keys x (D + E) run on the calling
 * thread. */
#define ATTN_PARALLEL_MIN_WORK (1 << 18)

void KERNEL(_mlir_ciface_linnet_kernel_attention_f32)(linnet_memref5* q, linnet_memref4* k, linnet_memref4* v,
                                                      linnet_memref5* mask, linnet_memref5* out, float scale) {
  attn_args a;
  a.q = (const float*)q->aligned + q->offset;
  a.k = (const float*)k->aligned + k->offset;
  a.v = (const float*)v->aligned + v->offset;
  a.mask = (const uint8_t*)mask->aligned + mask->offset;
  a.out = (float*)out->aligned + out->offset;
  a.l0 = q->sizes[0];
  a.l1 = q->sizes[1];
  a.g = q->sizes[2];
  a.nq = q->sizes[3];
  a.d = q->sizes[4];
  a.nk = k->sizes[2];
  a.e = v->sizes[3];
  a.scale = scale;
  for (int i = 0; i < 5; ++i) {
    a.qs[i] = q->strides[i];
    a.ms[i] = mask->strides[i];
    a.os[i] = out->strides[i];
  }
  for (int i = 0; i < 4; ++i) {
    a.ks[i] = k->strides[i];
    a.vs[i] = v->strides[i];
  }
  if (a.l0 <= 0 || a.l1 <= 0 || a.g <= 0 || a.nq <= 0 || a.e <= 0) return;
  const int64_t rows = a.g * a.nq; /* per (l0, l1) */
  if (a.nk <= 0) {
    for (int64_t l0 = 0; l0 < a.l0; ++l0)
      for (int64_t l1 = 0; l1 < a.l1; ++l1)
        for (int64_t t = 0; t < rows; ++t) {
          float* o = attn_out(&a, l0, l1, t % a.g, t / a.g);
          for (int64_t c = 0; c < a.e; ++c) o[c * a.os[4]] = 0.0f;
        }
    return;
  }
  int fast = 0;
#ifdef LINNET_KERNELS_AVX2
  const int unit = attn_unit_strides(&a);
#endif
#ifdef __AVX512F__
  fast = attn_unit_strides(&a) && (a.ms[4] == 0 || a.ms[4] == 1 || a.nk <= 1);
  if (a.nk <= 1) a.ms[4] = 0;
#endif
  /* Blocks of up to ATTN_ROWS rows, halved while there are fewer blocks
   * than threads. The method (rows in lanes or not) depends on the shape
   * alone, and a row's arithmetic does not depend on its block, so neither
   * does the result on the thread count. */
  int64_t block = 1;
  const int lanes = rows >= 8;
  (void)lanes;
  if (fast) {
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    block = min64(ATTN_ROWS, rows);
    while (block > 1 && a.l0 * a.l1 * ((rows + block - 1) / block) < threads) block = (block + 1) / 2;
  }
  const int64_t per = (rows + block - 1) / block, tasks = a.l0 * a.l1 * per;
  const int64_t need = fast ? ATTN_ROWS * ((a.nk + 15) / 16 * 16) + 16 * a.d : a.nk + a.e;
  const double work = (double)(a.l0 * a.l1 * rows) * (double)a.nk * (double)(a.d + a.e);
  int failed = 0;
  (void)work;
#pragma omp parallel if (work >= ATTN_PARALLEL_MIN_WORK && tasks > 1)
  {
    _Alignas(64) float stack_buf[ATTN_STACK_FLOATS];
    float* buf = need <= ATTN_STACK_FLOATS ? stack_buf : (float*)aligned_alloc(64, (size_t)(need + 15) / 16 * 64);
    if (buf == NULL) {
#pragma omp atomic write
      failed = 1;
    }
#pragma omp barrier
    int stop;
#pragma omp atomic read
    stop = failed;
    if (!stop) {
#pragma omp for schedule(dynamic, 1)
      for (int64_t t = 0; t < tasks; ++t) {
        const int64_t lk = t / per, b = t % per, l0 = lk / a.l1, l1 = lk % a.l1;
        const int64_t t0 = b * block, t1 = min64(rows, t0 + block);
#ifdef __AVX512F__
        if (fast) {
          attn_block_avx(&a, l0, l1, t0, (int)(t1 - t0), lanes, buf);
          continue;
        }
#endif
#ifdef LINNET_KERNELS_AVX2
        if (unit) {
          for (int64_t r = t0; r < t1; ++r) attn_row_avx2(&a, l0, l1, r % a.g, r / a.g, buf);
          continue;
        }
#endif
        for (int64_t r = t0; r < t1; ++r) attn_row_generic(&a, l0, l1, r % a.g, r / a.g, buf);
      }
    }
    if (buf != stack_buf) free(buf);
  }
}

/* ---- bf16 arithmetic's run-time helper ---------------------------------- */

/* LLVM lowers bf16 arithmetic on an x86 CPU without AVX512-BF16 to f32
 * arithmetic and a call to __truncsfbf2, which compiler-rt and GCC 13's
 * libgcc define but Debian 12's libgcc (GCC 12) does not: without this
 * definition a model.so doing bf16 arithmetic would not load. The same
 * rounding: to nearest, ties to even; a NaN stays a quiet NaN with its sign
 * and top payload bits. Weak, so a runtime library's own definition wins.
 * (clang 17 and later have __bf16 here; linnetc compiles model.so with 22.) */
#if defined(__clang__) && __clang_major__ >= 17 && (defined(__x86_64__) || defined(__aarch64__)) && \
    !defined(LINNET_KERNELS_PORTABLE_TEST)
__attribute__((weak)) __bf16 __truncsfbf2(float a) {
  uint32_t u;
  memcpy(&u, &a, sizeof u);
  uint16_t h;
  if ((u & 0x7fffffffu) > 0x7f800000u)
    h = (uint16_t)((u >> 16) | 0x40u);
  else
    h = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  __bf16 out;
  memcpy(&out, &h, sizeof out);
  return out;
}
#endif
