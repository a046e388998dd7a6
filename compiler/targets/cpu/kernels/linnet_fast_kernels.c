/* The `fast` numerics' weight product (linnet_kernels.h has the ABI):
 *
 *   void _mlir_ciface_linnet_kernel_matmul_packed_fast(linnet_memref2* x, linnet_memref2* w,
 *                                                      linnet_memref2* out, int64_t format, int64_t k);
 *
 * out[m, n] ~= sum_k x[m, k] * W[n, k], with the arguments of
 * _mlir_ciface_linnet_kernel_matmul_packed (x f32 [M, K], w i8 [N, RowBytes]
 * in `format`, out f32 [M, N], any strides, RowBytes from format and k).
 * Compiled into model.so beside linnet_kernels.c, whose exact kernel it
 * calls for what it does not do itself.
 *
 * Numerics, as llama.cpp's CPU backend does it:
 *  - each row of x is quantized once per call, per block b of 32 values, to
 *    int8 exactly as ggml's quantize_row_q8_0 does on x86 (so that a Q8_0
 *    file gives llama.cpp's products, not just products as accurate):
 *    with a_b = max_{j in b} |x_j|, q_j = round-to-nearest-even(x_j * (127 / a_b)),
 *    clamped to [-127, 127], and the block's scale d_b = a_b / 127 rounded
 *    to binary16 (ggml stores it as an f16) (d_b = 0 and q_j = 0 when
 *    a_b < 2^-64; a block whose d_b passes f16's range sends the call to the
 *    exact kernel, as a non-finite x does);
 *  - each weight block's dot product with those q is an exact integer sum
 *    (AVX512-VNNI vpdpbusd, u8 x s8 -> s32; AVX2's vpmaddubsw and vpmaddwd
 *    for the 32-value formats, linnet_fast_kernels_avx2.h; or the same sums
 *    in plain C),
 *    scaled once by the weight's scale and d_b; Q4_1, Q5_1 and the K-quants add
 *    their min/offset term from per-block sums of q; all of it accumulated
 *    in f32. Q6_K's sub-blocks of 16 take the 32-block of x they fall in.
 *  - F32, F16 and BF16 have no integer path: they run the exact kernel, as
 *    do calls where x holds an infinity or a NaN, and calls whose scratch
 *    allocation fails. Calls with M > LINNET_FAST_MAX_M (prefill) quantize x
 *    the same way and give the dequantized activations to the exact
 *    register-tiled kernel, faster there (bench/kernels/README.md):
 *    prefill_product.
 *  - Work is split over rows of W only (the quantization of x is done once,
 *    before), so results do not depend on the thread count.
 *
 * Error bound. With x^_j = d_b q_j the dequantized int8 activations and
 * e_b = a_b / 127 (the scale before its f16 rounding),
 * |x_j - x^_j| <= (e_b / 2) (1 + 2^-16) + 127 |d_b - e_b| (the 2^-16 covers
 * the rounding of x_j * 127 / a_b; |d_b - e_b| <= max(2^-11 e_b, 2^-25), f16's
 * half ulp), so, with w_j the exactly dequantized weight
 * (linnet::gguf::dequantize) and a_j its magnitude before cancellation
 * (a_j = |w_j| for Q8_0, Q4_0, Q5_0, Q6_K; |d q_j| + |m| for Q4_1, Q5_1;
 * |d sc q_j| + |dmin mn| for Q4_K and Q5_K),
 *
 *   |fast - exact| <= sum_b ((e_b / 2) (1 + 2^-16) + 127 |d_b - e_b|) sum_{j in b} |w_j|   (quantization of x)
 *                   + 4 K FLT_EPSILON sum_j (|x_j| + d_b) a_j             (f32 rounding)
 *                   + sum_{b with max |x| < 2^-64} max_{j in b} |x_j| sum_{j in b} |w_j|
 *
 * for finite x and finite, normal-range scales (exact is the
 * real-number sum_j x_j w_j). The rounding term counts the f32 products
 * scale * scale * integer and the f32 sum of K/4 lane partials; it is far
 * looser than that, as the exact kernel's own 4 K eps sum |x w| is.
 * tests/unit/cpu_fast_kernels_test.cpp checks this bound element by element.
 */
#include "linnet_kernels.h"
#include "linnet_kernels_common.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__)
#define FAST_VNNI 1
#include <immintrin.h>
#endif

/* The unit test's portable copy (KERNEL, linnet_kernels_common.h) calls the
 * portable copy of the exact kernel. */
#ifdef LINNET_KERNELS_PORTABLE_TEST
void linnet_portable_mlir_ciface_linnet_kernel_matmul_packed(linnet_memref2* x, linnet_memref2* w,
                                                             linnet_memref2* out, int64_t format, int64_t k);
#endif
void KERNEL(_mlir_ciface_linnet_kernel_matmul_packed_fast)(linnet_memref2* x, linnet_memref2* w,
                                                           linnet_memref2* out, int64_t format, int64_t k);


/* Products below this many weight elements (N*K) run on the calling thread. */
#define PARALLEL_MIN_WORK 65536
/* Rows of x fed by each unpacked weight block. */
#define FAST_ROWS 4
/* Larger M goes to the exact kernel (its prefill path is faster there). */
#ifndef LINNET_FAST_MAX_M
#define LINNET_FAST_MAX_M 8
#endif
/* Quantized x up to this many bytes lives on the stack, else in one malloc. */
#define FAST_STACK_BYTES 24576
/* Rows of W per scheduling unit. */
#define ROW_GROUP 16
#define QK_K 256

/* ---- scalar helpers (the shared ones: linnet_kernels_common.h) ---------- */

static inline int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

/* a (>= 0, finite) rounded to the nearest binary16 value, ties to even, as
 * ggml's GGML_FP32_TO_FP16; past f16's largest finite value, +inf. */
static inline float round_to_f16(float a) {
  if (a >= 65520.0f) return INFINITY;
  if (a < 0x1p-14f) return rintf(a * 0x1p24f) * 0x1p-24f; /* subnormal: multiples of 2^-24 */
  int e;
  (void)frexpf(a, &e); /* a = m 2^e, m in [1/2, 1): 11 significant bits */
  return ldexpf(rintf(ldexpf(a, 11 - e)), e - 11);
}


/* ---- quantized x ------------------------------------------------------- */

/* One row of x, quantized. Arrays run to Kp = K rounded up to 64 (zeros past
 * K); a "lane" is 4 consecutive values (one int32 lane of vpdpbusd). */
typedef struct {
  int8_t* q;      /* [Kp] */
  int32_t* corr;  /* [Kp/4] -bias * (sum of the lane's q): the weight's zero point, folded in */
  float* dxl;     /* [Kp/4] d_b of the lane's block */
  float* dxsl;    /* [Kp/4] d_b * (sum of the lane's q) (Q4_1's, Q5_1's offset term) */
  float* dxs16;   /* [K/256][16] 8 zeros, then d_b * sum_b q of the 256's 8 blocks (K-quants' mins) */
  float* d;       /* [K/32] d_b */
  float* dxsb;    /* [K/32] d_b * sum_b q (Q4_1's, Q5_1's offset term) */
  int32_t* sum;   /* [K/32] sum_b q */
} xrow;

static int64_t xrow_bytes(int64_t k) {
  const int64_t kp = round_up(k, 64), nb = k / 32;
  return kp + 3 * kp + round_up(k / QK_K * 64, 64) + 3 * round_up(nb * 4, 64);
}

static void xrow_place(xrow* r, unsigned char* p, int64_t k) {
  const int64_t kp = round_up(k, 64), nb = k / 32;
  r->q = (int8_t*)p, p += kp;
  r->corr = (int32_t*)(void*)p, p += kp;
  r->dxl = (float*)(void*)p, p += kp;
  r->dxsl = (float*)(void*)p, p += kp;
  r->dxs16 = (float*)(void*)p, p += round_up(k / QK_K * 64, 64);
  r->d = (float*)(void*)p, p += round_up(nb * 4, 64);
  r->dxsb = (float*)(void*)p, p += round_up(nb * 4, 64);
  r->sum = (int32_t*)(void*)p;
}

#ifdef FAST_VNNI
/* quantize_row's blocks for a contiguous x, 16 lanes at a time (the same
 * operations: max of |x|, one f32 product by 127 / max per value, round to
 * nearest even, clamp). 0 if x is not finite or a scale passes f16's range. */
static int quantize_blocks_v(const float* x, int64_t nb, xrow* r) {
  __mmask16 bad = 0;
  for (int64_t b = 0; b < nb; ++b) {
    const __m512 v0 = _mm512_loadu_ps(x + 32 * b), v1 = _mm512_loadu_ps(x + 32 * b + 16);
    const __m512 a0 = _mm512_abs_ps(v0), a1 = _mm512_abs_ps(v1), a = _mm512_max_ps(a0, a1);
    bad |= _mm512_cmp_ps_mask(a0, _mm512_set1_ps(FLT_MAX), _CMP_NLE_UQ) |
           _mm512_cmp_ps_mask(a1, _mm512_set1_ps(FLT_MAX), _CMP_NLE_UQ); /* infinities, NaNs */
    const float amax = _mm512_reduce_max_ps(a);
    const float d = amax < 0x1p-64f ? 0.0f : round_to_f16(amax / 127.0f);
    if (d == INFINITY) return 0;
    __m512i q0 = _mm512_setzero_si512(), q1 = q0;
    if (d != 0.0f) {
      const __m512 id = _mm512_set1_ps(127.0f / amax), lim = _mm512_set1_ps(127.0f), nlim = _mm512_set1_ps(-127.0f);
      q0 = _mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(_mm512_roundscale_ps(_mm512_mul_ps(v0, id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), nlim), lim));
      q1 = _mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(_mm512_roundscale_ps(_mm512_mul_ps(v1, id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), nlim), lim));
    }
    _mm_storeu_si128((__m128i*)(r->q + 32 * b), _mm512_cvtepi32_epi8(q0));
    _mm_storeu_si128((__m128i*)(r->q + 32 * b + 16), _mm512_cvtepi32_epi8(q1));
    r->d[b] = d;
    r->sum[b] = _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
  }
  return bad == 0;
}
#endif

/* Quantizes x[j * sx], j < k (k a multiple of 32); `bias` is the weight's
 * unsigned zero point (corr = -bias * lane sums). 0 if x is not finite or a
 * scale passes f16's range. */
static int quantize_row(const float* x, int64_t sx, int64_t k, int bias, xrow* r) {
  const int64_t kp = round_up(k, 64);
  int64_t nb = k / 32;
#ifdef FAST_VNNI
  if (sx == 1) {
    if (!quantize_blocks_v(x, nb, r)) return 0;
    nb = 0;
  }
#endif
  for (int64_t b = 0; b < nb; ++b) {
    float v[32], amax = 0.0f;
    for (int j = 0; j < 32; ++j) {
      v[j] = x[(32 * b + j) * sx];
      const float a = fabsf(v[j]);
      if (!(a <= FLT_MAX)) return 0;
      amax = a > amax ? a : amax;
    }
    const float d = amax < 0x1p-64f ? 0.0f : round_to_f16(amax / 127.0f);
    if (d == INFINITY) return 0;
    const float id = d == 0.0f ? 0.0f : 127.0f / amax;
    int32_t s = 0;
    for (int j = 0; j < 32; ++j) {
      float t = rintf(v[j] * id);
      t = t > 127.0f ? 127.0f : t < -127.0f ? -127.0f : t;
      r->q[32 * b + j] = (int8_t)t;
      s += (int32_t)t;
    }
    r->d[b] = d;
    r->sum[b] = s;
  }
  memset(r->q + k, 0, (size_t)(kp - k));
  for (int64_t b = 0; b < k / 32; ++b) r->dxsb[b] = r->d[b] * (float)r->sum[b];
  for (int64_t l = 0; l < kp / 4; ++l) {
    const int32_t s = (int32_t)r->q[4 * l] + r->q[4 * l + 1] + r->q[4 * l + 2] + r->q[4 * l + 3];
    const float d = l < k / 4 ? r->d[l / 8] : 0.0f;
    r->corr[l] = -bias * s;
    r->dxl[l] = d;
    r->dxsl[l] = d * (float)s;
  }
  for (int64_t kb = 0; kb < k / QK_K; ++kb)
    for (int i = 0; i < 8; ++i) {
      r->dxs16[16 * kb + i] = 0.0f;
      r->dxs16[16 * kb + 8 + i] = r->d[8 * kb + i] * (float)r->sum[8 * kb + i];
    }
  return 1;
}

/* The weight's unsigned zero point in the integer path (see corr). */
static int format_bias(int64_t format) {
  switch (format) {
#ifdef FAST_VNNI
    case LINNET_STORAGE_Q8_0: return 128; /* s8 weights as u8 = w + 128 */
#endif
    case LINNET_STORAGE_Q4_0: return 8;
    case LINNET_STORAGE_Q5_0: return 16;
    case LINNET_STORAGE_Q6_K: return 32;
    default: return 0;
  }
}

/* ---- the product on contiguous weight rows ----------------------------- */

typedef struct {
  int64_t format, m, n, k;
  const xrow* x; /* [m] */
  const uint8_t* w;
  int64_t ldw;   /* bytes */
  float* out;
  int64_t ldo, sdo; /* floats: row and column strides */
} fast_product;

/* ---- portable C: the same integer sums, one block at a time ------------ */

/* sum_j x[m, j] W[n, j] for one row of W and one quantized row of x. */
static float dot_row_c(int64_t format, const uint8_t* w, int64_t k, const xrow* x) {
  float acc = 0.0f;
  const int8_t* q = x->q;
  switch (format) {
    case LINNET_STORAGE_Q8_0:
      for (int64_t b = 0; b < k / 32; ++b, w += 34, q += 32) {
        int32_t s = 0;
        for (int j = 0; j < 32; ++j) s += (int8_t)w[2 + j] * q[j];
        acc += f16_at(w) * x->d[b] * (float)s;
      }
      break;
    case LINNET_STORAGE_Q4_0:
      for (int64_t b = 0; b < k / 32; ++b, w += 18, q += 32) {
        int32_t s = 0;
        for (int j = 0; j < 16; ++j) s += ((w[2 + j] & 0xF) - 8) * q[j] + ((w[2 + j] >> 4) - 8) * q[16 + j];
        acc += f16_at(w) * x->d[b] * (float)s;
      }
      break;
    case LINNET_STORAGE_Q4_1:
      for (int64_t b = 0; b < k / 32; ++b, w += 20, q += 32) {
        int32_t s = 0;
        for (int j = 0; j < 16; ++j) s += (w[4 + j] & 0xF) * q[j] + (w[4 + j] >> 4) * q[16 + j];
        acc += f16_at(w) * x->d[b] * (float)s + f16_at(w + 2) * x->d[b] * (float)x->sum[b];
      }
      break;
    case LINNET_STORAGE_Q5_0:
      for (int64_t b = 0; b < k / 32; ++b, w += 22, q += 32) {
        uint32_t qh;
        memcpy(&qh, w + 2, 4);
        int32_t s = 0;
        for (int j = 0; j < 32; ++j) s += (q5_value(qh, w + 6, j) - 16) * q[j];
        acc += f16_at(w) * x->d[b] * (float)s;
      }
      break;
    case LINNET_STORAGE_Q5_1:
      for (int64_t b = 0; b < k / 32; ++b, w += 24, q += 32) {
        uint32_t qh;
        memcpy(&qh, w + 4, 4);
        int32_t s = 0;
        for (int j = 0; j < 32; ++j) s += q5_value(qh, w + 8, j) * q[j];
        acc += f16_at(w) * x->d[b] * (float)s + f16_at(w + 2) * x->d[b] * (float)x->sum[b];
      }
      break;
    case LINNET_STORAGE_Q4_K:
    case LINNET_STORAGE_Q5_K: {
      const int five = format == LINNET_STORAGE_Q5_K;
      const int64_t bb = five ? 176 : 144;
      for (int64_t kb = 0; kb < k / QK_K; ++kb, w += bb) {
        const float d = f16_at(w), dmin = f16_at(w + 2);
        const uint8_t* qh = w + 16;
        const uint8_t* ql = w + (five ? 48 : 16);
        for (int s = 0; s < 8; ++s) {
          uint8_t sc, mn;
          scale_min_k4(s, w + 4, &sc, &mn);
          const uint8_t* qs = ql + 32 * (s / 2);
          const int shift = 4 * (s & 1);
          const int8_t* xs = q + 256 * kb + 32 * s;
          int32_t t = 0;
          for (int l = 0; l < 32; ++l) {
            int v = (qs[l] >> shift) & 0xF;
            if (five && (qh[l] >> s) & 1) v += 16;
            t += v * xs[l];
          }
          const int64_t b = 8 * kb + s;
          acc += d * (float)sc * x->d[b] * (float)t - dmin * (float)mn * x->d[b] * (float)x->sum[b];
        }
      }
      break;
    }
    case LINNET_STORAGE_Q6_K:
      for (int64_t kb = 0; kb < k / QK_K; ++kb, w += 210) {
        const float d = f16_at(w + 208);
        const int8_t* sc = (const int8_t*)(w + 192);
        for (int h = 0; h < 2; ++h) {
          const uint8_t* ql = w + 64 * h;
          const uint8_t* qh = w + 128 + 32 * h;
          for (int t = 0; t < 4; ++t) { /* values 128h + 32t + l: the 32-block 8kb + 4h + t of x */
            const int8_t* xs = q + 256 * kb + 128 * h + 32 * t;
            int32_t part[2] = {0, 0};
            for (int l = 0; l < 32; ++l) {
              const int lo = (t & 2) ? ql[l + 32 * (t & 1)] >> 4 : ql[l + 32 * (t & 1)] & 0xF;
              const int v = (lo | (((qh[l] >> (2 * t)) & 3) << 4)) - 32;
              part[l / 16] += v * xs[l];
            }
            const int32_t s = sc[8 * h + 2 * t] * part[0] + sc[8 * h + 2 * t + 1] * part[1];
            acc += d * x->d[8 * kb + 4 * h + t] * (float)s;
          }
        }
      }
      break;
    default: break;
  }
  return acc;
}

#if !defined(FAST_VNNI) && defined(LINNET_KERNELS_AVX2)
#include "linnet_fast_kernels_avx2.h"
#elif !defined(FAST_VNNI)

static void product_rows(const fast_product* p, int64_t n0, int64_t n1) {
  for (int64_t n = n0; n < n1; ++n)
    for (int64_t m = 0; m < p->m; ++m)
      p->out[m * p->ldo + n * p->sdo] = dot_row_c(p->format, p->w + n * p->ldw, p->k, &p->x[m]);
}

#else /* FAST_VNNI */

/* ---- AVX512-VNNI ------------------------------------------------------- *
 * Each kernel unpacks 64 weight values at a time into a vector of u8 (the
 * weight plus its zero point), and for each of the mr rows of x: one
 * vpdpbusd against the 64 q's, started from corr (so each int32 lane holds
 * the exact integer dot of 4 values), converted to f32 and multiplied by
 * the lane's weight scale * d_b into a 16-lane f32 accumulator. The
 * 32-value formats take 8 blocks per step (their 8 f16 scales converted
 * and multiplied by d_b together); each row's 16 lanes are summed with 15
 * other rows' (reduce16). */

typedef __m512 facc[FAST_ROWS][2];

static ALWAYS_INLINE void acc_zero(facc acc) {
  for (int r = 0; r < FAST_ROWS; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
}

/* A row's 16-lane partial sums, one vector per row of x; reduce16 sums them
 * for 16 rows of W at once. */
static ALWAYS_INLINE void acc_store(facc acc, int mr, __m512* out) {
  for (int r = 0; r < mr; ++r) out[r * ROW_GROUP] = _mm512_add_ps(acc[r][0], acc[r][1]);
}

/* Lane i of the result = the sum of v[i]'s 16 lanes (a transposing tree). */
static ALWAYS_INLINE __m512 reduce16(const __m512* v) {
  __m512 t[8], u[4];
  for (int i = 0; i < 8; ++i)
    t[i] = _mm512_add_ps(_mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]), _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]));
  for (int i = 0; i < 4; ++i) {
    const __m512d a = _mm512_castps_pd(t[2 * i]), b = _mm512_castps_pd(t[2 * i + 1]);
    u[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(a, b)), _mm512_castpd_ps(_mm512_unpackhi_pd(a, b)));
  }
  const __m512 w0 = _mm512_add_ps(_mm512_shuffle_f32x4(u[0], u[1], 0x88), _mm512_shuffle_f32x4(u[0], u[1], 0xDD));
  const __m512 w1 = _mm512_add_ps(_mm512_shuffle_f32x4(u[2], u[3], 0x88), _mm512_shuffle_f32x4(u[2], u[3], 0xDD));
  return _mm512_add_ps(_mm512_shuffle_f32x4(w0, w1, 0x88), _mm512_shuffle_f32x4(w0, w1, 0xDD));
}


/* [v0 x8, v1 x8] of two f16 at a and b. */
static ALWAYS_INLINE __m512 f16_pair(const uint8_t* a, const uint8_t* b) {
  const uint32_t u = (uint32_t)load_u16(a) | ((uint32_t)load_u16(b) << 16);
  const __m512 both = _mm512_castps128_ps512(_mm_cvtph_ps(_mm_cvtsi32_si128((int)u)));
  return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1), both);
}

/* Feeds u8 weights wv (64 values from element e of the row) with per-lane
 * weight scales sw to the mr rows of x. */
#define FEED(wv, sw, e, u)                                                                                 \
  do {                                                                                                     \
    const __m512i w_ = (wv);                                                                               \
    const __m512 s_ = (sw);                                                                                \
    for (int r = 0; r < mr; ++r) {                                                                         \
      const __m512i i_ = _mm512_dpbusd_epi32(_mm512_loadu_si512(x[r]->corr + (e) / 4), w_,                 \
                                             _mm512_loadu_si512(x[r]->q + (e)));                           \
      acc[r][u] = _mm512_fmadd_ps(_mm512_mul_ps(s_, _mm512_loadu_ps(x[r]->dxl + (e) / 4)),                 \
                                  _mm512_cvtepi32_ps(i_), acc[r][u]);                                      \
    }                                                                                                      \
  } while (0)

/* Q8_0, two blocks: the s8 weights + 128 as u8 (corr holds -128 * sums). */
static ALWAYS_INLINE void pair_q8_0(facc acc, const uint8_t* a, const uint8_t* b, int two, int64_t e,
                                    const xrow* const* x, int mr, int u) {
  const __m256i lo = _mm256_loadu_si256((const __m256i*)(a + 2));
  const __m512i v = two ? _mm512_inserti64x4(_mm512_castsi256_si512(lo), _mm256_loadu_si256((const __m256i*)(b + 2)), 1)
                        : _mm512_zextsi256_si512(lo);
  const __m512 sw = two ? f16_pair(a, b) : _mm512_maskz_mov_ps(0x00FF, f16_pair(a, a));
  FEED(_mm512_xor_si512(v, _mm512_set1_epi8((char)0x80)), sw, e, u);
}

/* 16 bytes of nibbles of two blocks -> [lo(a), hi(a), lo(b), hi(b)]. */
static ALWAYS_INLINE __m512i nibbles_pair(const uint8_t* qa, const uint8_t* qb, int two) {
  const __m256i a = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i*)qa));
  const __m512i v = two ? _mm512_inserti64x4(_mm512_castsi256_si512(a),
                                            _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i*)qb)), 1)
                       : _mm512_zextsi256_si512(a);
  return _mm512_and_si512(_mm512_mask_srli_epi16(v, 0xFF00FF00u, v, 4), _mm512_set1_epi8(0x0F));
}

static ALWAYS_INLINE void pair_q4_0(facc acc, const uint8_t* a, const uint8_t* b, int two, int64_t e,
                                    const xrow* const* x, int mr, int u) {
  const __m512 sw = two ? f16_pair(a, b) : _mm512_maskz_mov_ps(0x00FF, f16_pair(a, a));
  FEED(nibbles_pair(a + 2, b + 2, two), sw, e, u);
}

/* Q4_1/Q5_1's f16 (d, m) of blocks a and b: d in *sw and m in *mw, block
 * a's in the low 8 lanes and b's in the high 8. */
static ALWAYS_INLINE void scale_min_pair(const uint8_t* a, const uint8_t* b, int two, __m512* sw, __m512* mw) {
  uint32_t da, db = 0;
  memcpy(&da, a, 4);
  if (two) memcpy(&db, b, 4);
  const __m512 dm = _mm512_castps128_ps512(_mm_cvtph_ps(_mm_cvtsi64_si128((long long)(da | ((uint64_t)db << 32)))));
  *sw = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2), dm);
  *mw = _mm512_permutexvar_ps(_mm512_setr_epi32(1, 1, 1, 1, 1, 1, 1, 1, 3, 3, 3, 3, 3, 3, 3, 3), dm);
}

static ALWAYS_INLINE void pair_q4_1(facc acc, const uint8_t* a, const uint8_t* b, int two, int64_t e,
                                    const xrow* const* x, int mr, int u) {
  __m512 sw, mw;
  scale_min_pair(a, b, two, &sw, &mw);
  FEED(nibbles_pair(a + 4, b + 4, two), sw, e, u);
  for (int r = 0; r < mr; ++r) acc[r][u] = _mm512_fmadd_ps(mw, _mm512_loadu_ps(x[r]->dxsl + e / 4), acc[r][u]);
}

/* Q5_0/Q5_1: the nibbles of two blocks (nibbles_pair) with each value's
 * 5th bit added as 16: bit j of a's qh for byte j, of b's for byte 32 + j. */
static ALWAYS_INLINE __m512i q5_pair(const uint8_t* qha, const uint8_t* qsa, const uint8_t* qhb, const uint8_t* qsb,
                                     int two) {
  uint32_t ha, hb = 0;
  memcpy(&ha, qha, 4);
  if (two) memcpy(&hb, qhb, 4);
  const __m512i v = nibbles_pair(qsa, qsb, two);
  return _mm512_mask_add_epi8(v, (__mmask64)ha | ((__mmask64)hb << 32), v, _mm512_set1_epi8(16));
}

/* Q5_0: q - 16 as u8 q with corr = -16 * the lane's sum of x's q. */
static ALWAYS_INLINE void pair_q5_0(facc acc, const uint8_t* a, const uint8_t* b, int two, int64_t e,
                                    const xrow* const* x, int mr, int u) {
  const __m512 sw = two ? f16_pair(a, b) : _mm512_maskz_mov_ps(0x00FF, f16_pair(a, a));
  FEED(q5_pair(a + 2, a + 6, b + 2, b + 6, two), sw, e, u);
}

static ALWAYS_INLINE void pair_q5_1(facc acc, const uint8_t* a, const uint8_t* b, int two, int64_t e,
                                    const xrow* const* x, int mr, int u) {
  __m512 sw, mw;
  scale_min_pair(a, b, two, &sw, &mw);
  FEED(q5_pair(a + 4, a + 8, b + 4, b + 8, two), sw, e, u);
  for (int r = 0; r < mr; ++r) acc[r][u] = _mm512_fmadd_ps(mw, _mm512_loadu_ps(x[r]->dxsl + e / 4), acc[r][u]);
}

/* 8 f16 at a, a + stride, ..., a + 7 stride, as f32. */
static ALWAYS_INLINE __m256 f16x8(const uint8_t* a, int stride) {
  uint64_t lo = 0, hi = 0;
  for (int i = 0; i < 4; ++i) {
    lo |= (uint64_t)load_u16(a + i * stride) << (16 * i);
    hi |= (uint64_t)load_u16(a + (i + 4) * stride) << (16 * i);
  }
  return _mm256_cvtph_ps(_mm_set_epi64x((long long)hi, (long long)lo));
}

/* [s[2p] x8, s[2p+1] x8] */
static ALWAYS_INLINE __m512 spread8(__m256 s, int p) {
  const __m512i lo = _mm512_set1_epi32(2 * p);
  return _mm512_permutexvar_ps(_mm512_mask_add_epi32(lo, 0xFF00, lo, _mm512_set1_epi32(1)), _mm512_castps256_ps512(s));
}

/* Eight blocks of a 32-value format from block b (element 32 b): the
 * weight scales of all eight converted at once and multiplied by each row's
 * d_b (one product per block), then spread over each pair's 16 lanes. */
#define FEED8(wv, e, p, u)                                                                                 \
  do {                                                                                                     \
    const __m512i w_ = (wv);                                                                               \
    for (int r = 0; r < mr; ++r) {                                                                         \
      const __m512i i_ = _mm512_dpbusd_epi32(_mm512_loadu_si512(x[r]->corr + (e) / 4), w_,                 \
                                             _mm512_loadu_si512(x[r]->q + (e)));                           \
      acc[r][u] = _mm512_fmadd_ps(spread8(s8[r], p), _mm512_cvtepi32_ps(i_), acc[r][u]);                   \
    }                                                                                                      \
  } while (0)

static ALWAYS_INLINE void group8_q8_0(facc acc, const uint8_t* w, int64_t b, const xrow* const* x, int mr) {
  const __m256 dw = f16x8(w, 34);
  __m256 s8[FAST_ROWS];
  for (int r = 0; r < mr; ++r) s8[r] = _mm256_mul_ps(dw, _mm256_loadu_ps(x[r]->d + b));
  for (int p = 0; p < 4; ++p) {
    const uint8_t* a = w + 68 * p;
    const __m512i v = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i*)(a + 2))),
                                         _mm256_loadu_si256((const __m256i*)(a + 36)), 1);
    FEED8(_mm512_xor_si512(v, _mm512_set1_epi8((char)0x80)), 32 * b + 64 * p, p, p & 1);
  }
}

static ALWAYS_INLINE void group8_q4_0(facc acc, const uint8_t* w, int64_t b, const xrow* const* x, int mr) {
  const __m256 dw = f16x8(w, 18);
  __m256 s8[FAST_ROWS];
  for (int r = 0; r < mr; ++r) s8[r] = _mm256_mul_ps(dw, _mm256_loadu_ps(x[r]->d + b));
  for (int p = 0; p < 4; ++p) FEED8(nibbles_pair(w + 36 * p + 2, w + 36 * p + 20, 1), 32 * b + 64 * p, p, p & 1);
}

/* Q4_1/Q5_1: eight blocks' scales d times x's d_b into s8, and their
 * offsets m_b d_b sum_b added to lanes 0-7 of acc[r][1]. */
static ALWAYS_INLINE void scales_offsets8(facc acc, const uint8_t* w, int stride, int64_t b, const xrow* const* x,
                                          int mr, __m256* s8) {
  const __m256 dw = f16x8(w, stride), mw = f16x8(w + 2, stride);
  for (int r = 0; r < mr; ++r) {
    s8[r] = _mm256_mul_ps(dw, _mm256_loadu_ps(x[r]->d + b));
    acc[r][1] = _mm512_fmadd_ps(_mm512_zextps256_ps512(mw), _mm512_zextps256_ps512(_mm256_loadu_ps(x[r]->dxsb + b)),
                                acc[r][1]);
  }
}

static ALWAYS_INLINE void group8_q4_1(facc acc, const uint8_t* w, int64_t b, const xrow* const* x, int mr) {
  __m256 s8[FAST_ROWS];
  scales_offsets8(acc, w, 20, b, x, mr, s8);
  for (int p = 0; p < 4; ++p) FEED8(nibbles_pair(w + 40 * p + 4, w + 40 * p + 24, 1), 32 * b + 64 * p, p, p & 1);
}

static ALWAYS_INLINE void group8_q5_0(facc acc, const uint8_t* w, int64_t b, const xrow* const* x, int mr) {
  const __m256 dw = f16x8(w, 22);
  __m256 s8[FAST_ROWS];
  for (int r = 0; r < mr; ++r) s8[r] = _mm256_mul_ps(dw, _mm256_loadu_ps(x[r]->d + b));
  for (int p = 0; p < 4; ++p) {
    const uint8_t* a = w + 44 * p;
    FEED8(q5_pair(a + 2, a + 6, a + 24, a + 28, 1), 32 * b + 64 * p, p, p & 1);
  }
}

static ALWAYS_INLINE void group8_q5_1(facc acc, const uint8_t* w, int64_t b, const xrow* const* x, int mr) {
  __m256 s8[FAST_ROWS];
  scales_offsets8(acc, w, 24, b, x, mr, s8);
  for (int p = 0; p < 4; ++p) {
    const uint8_t* a = w + 48 * p;
    FEED8(q5_pair(a + 4, a + 8, a + 28, a + 32, 1), 32 * b + 64 * p, p, p & 1);
  }
}

/* The 32-value formats, eight blocks per step, then the rest two at a time. */
#define ROW_32(name, bytes)                                                                                 \
  static ALWAYS_INLINE void row_##name(const uint8_t* w, int64_t nb, const xrow* const* x, int mr,          \
                                       __m512* out) {                                                \
    facc acc;                                                                                              \
    acc_zero(acc);                                                                                         \
    int64_t b = 0;                                                                                         \
    for (; b + 8 <= nb; b += 8) {                                                                          \
      prefetch_ahead(w + b * (bytes), 8 * (bytes));                                                        \
      group8_##name(acc, w + b * (bytes), b, x, mr);                                                       \
    }                                                                                                      \
    for (; b + 2 <= nb; b += 2) pair_##name(acc, w + b * (bytes), w + (b + 1) * (bytes), 1, 32 * b, x, mr, 0); \
    if (b < nb) pair_##name(acc, w + b * (bytes), w, 0, 32 * b, x, mr, 1);                                 \
    acc_store(acc, mr, out);                                                                               \
  }
ROW_32(q8_0, 34)
ROW_32(q4_0, 18)
ROW_32(q4_1, 20)
ROW_32(q5_0, 22)
ROW_32(q5_1, 24)
#undef ROW_32

/* d * sc (lanes 0-7) and dmin * mn (lanes 8-15) of a Q4_K/Q5_K block. */
static ALWAYS_INLINE __m512 k4_scales_v(const uint8_t* x) {
  uint32_t u[3], w[4];
  memcpy(u, x + 4, 12);
  w[0] = u[0] & 0x3f3f3f3fu;
  w[1] = (u[2] & 0x0f0f0f0fu) | (((u[0] >> 6) & 0x03030303u) << 4);
  w[2] = u[1] & 0x3f3f3f3fu;
  w[3] = ((u[2] >> 4) & 0x0f0f0f0fu) | (((u[1] >> 6) & 0x03030303u) << 4);
  const __m512 sm = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)w)));
  const __m512 dm = _mm512_cvtph_ps(_mm256_set1_epi32((int)(load_u16(x) | ((uint32_t)load_u16(x + 2) << 16))));
  const __m512 spread = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1), dm);
  return _mm512_mul_ps(spread, sm);
}

/* [v[2j] x8, v[2j+1] x8] */
static ALWAYS_INLINE __m512 spread_pair(__m512 v, int j) {
  const __m512i lo = _mm512_set1_epi32(2 * j);
  return _mm512_permutexvar_ps(_mm512_mask_add_epi32(lo, 0xFF00, lo, _mm512_set1_epi32(1)), v);
}

static ALWAYS_INLINE void row_qk45(const uint8_t* w, int64_t nb, const xrow* const* x, int mr, __m512* out,
                                   int five) {
  facc acc;
  acc_zero(acc);
  const int64_t bb = five ? 176 : 144;
  for (int64_t kb = 0; kb < nb; ++kb, w += bb) {
    prefetch_ahead(w, (int)bb);
    const __m512 dsms = k4_scales_v(w);
    /* the mins: - sum_s dmin mn_s d_s sum_s (lanes 0-7 add ds * 0) */
    for (int r = 0; r < mr; ++r) acc[r][1] = _mm512_fnmadd_ps(dsms, _mm512_loadu_ps(x[r]->dxs16 + 16 * kb), acc[r][1]);
    const uint8_t* ql = w + (five ? 48 : 16);
    __m512i hbits = _mm512_setzero_si512();
    if (five) hbits = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i*)(w + 16)));
    for (int j = 0; j < 4; ++j) {
      const __m512i v = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i*)(ql + 32 * j)));
      __m512i q = _mm512_and_si512(_mm512_mask_srli_epi16(v, 0xFFFF0000u, v, 4), _mm512_set1_epi8(0x0F));
      if (five) {
        const __m512i sel = _mm512_mask_blend_epi64(0xF0, _mm512_set1_epi8((char)(1 << (2 * j))),
                                                    _mm512_set1_epi8((char)(2 << (2 * j))));
        q = _mm512_mask_add_epi8(q, _mm512_test_epi8_mask(hbits, sel), q, _mm512_set1_epi8(16));
      }
      FEED(q, spread_pair(dsms, j), 256 * kb + 64 * j, j & 1);
    }
  }
  acc_store(acc, mr, out);
}

static ALWAYS_INLINE void row_q4_k(const uint8_t* w, int64_t nb, const xrow* const* x, int mr, __m512* out) {
  row_qk45(w, nb, x, mr, out, 0);
}
static ALWAYS_INLINE void row_q5_k(const uint8_t* w, int64_t nb, const xrow* const* x, int mr, __m512* out) {
  row_qk45(w, nb, x, mr, out, 1);
}

static ALWAYS_INLINE void row_q6_k(const uint8_t* w, int64_t nb, const xrow* const* x, int mr, __m512* out) {
  facc acc;
  acc_zero(acc);
  const __m512i low4 = _mm512_set1_epi8(0x0F), bits45 = _mm512_set1_epi8(0x30);
  for (int64_t kb = 0; kb < nb; ++kb, w += 210) {
    prefetch_ahead(w, 210);
    /* d * sc for each 16 values */
    const __m512 fsc = _mm512_mul_ps(_mm512_set1_ps(f16_at(w + 208)),
                                     _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i*)(w + 192)))));
    for (int h = 0; h < 2; ++h) {
      const __m512i l = _mm512_loadu_si512(w + 64 * h);
      const __m512i hv = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i*)(w + 128 + 32 * h)));
      const __m512i h1 = _mm512_mask_srli_epi16(hv, 0xFFFF0000u, hv, 2); /* [qh, qh >> 2] */
      const __m512i a = _mm512_or_si512(_mm512_and_si512(l, low4), _mm512_and_si512(_mm512_slli_epi16(h1, 4), bits45));
      const __m512i c = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l, 4), low4), _mm512_and_si512(h1, bits45));
      for (int g = 0; g < 2; ++g) { /* values 128h + 64g + i take scale (128h + 64g + i) / 16 */
        const int s0 = 8 * h + 4 * g;
        const __m512i idx = _mm512_setr_epi32(s0, s0, s0, s0, s0 + 1, s0 + 1, s0 + 1, s0 + 1, s0 + 2, s0 + 2, s0 + 2,
                                              s0 + 2, s0 + 3, s0 + 3, s0 + 3, s0 + 3);
        FEED(g ? c : a, _mm512_permutexvar_ps(idx, fsc), 256 * kb + 128 * h + 64 * g, g);
      }
    }
  }
  acc_store(acc, mr, out);
}

/* Rows [n0, n1) of W (at most ROW_GROUP) against every row of x, FAST_ROWS
 * rows of x at a time, one loop per format and row count; the partial sums
 * of the group's rows are then reduced 16 at a time. (The row pointers are
 * set once per group of x rows: rebuilding them per row of W cost a failed
 * store-to-load forwarding, ~40 cycles, per row.) */
#define ROWS_LOOP(fn)                                                             \
  for (int64_t m0 = 0; m0 < p->m; m0 += FAST_ROWS) {                              \
    const int mr = (int)min64(FAST_ROWS, p->m - m0);                              \
    const xrow* x[FAST_ROWS];                                                     \
    for (int r = 0; r < mr; ++r) x[r] = &p->x[m0 + r];                            \
    for (int64_t n = n0; n < n1; ++n) {                                           \
      const uint8_t* wrow = p->w + n * p->ldw;                                    \
      __m512* o = &part[m0][n - n0];                                              \
      switch (mr) {                                                               \
        case 1: fn(wrow, nb, x, 1, o); break;                                     \
        case 2: fn(wrow, nb, x, 2, o); break;                                     \
        case 3: fn(wrow, nb, x, 3, o); break;                                     \
        default: fn(wrow, nb, x, 4, o); break;                                    \
      }                                                                           \
    }                                                                             \
  }

static void product_rows(const fast_product* p, int64_t n0, int64_t n1) {
  const int64_t nb = p->k / linnet_storage_block_elements[p->format];
  __m512 part[LINNET_FAST_MAX_M][ROW_GROUP];
  switch (p->format) {
    case LINNET_STORAGE_Q8_0: ROWS_LOOP(row_q8_0); break;
    case LINNET_STORAGE_Q4_0: ROWS_LOOP(row_q4_0); break;
    case LINNET_STORAGE_Q4_1: ROWS_LOOP(row_q4_1); break;
    case LINNET_STORAGE_Q5_0: ROWS_LOOP(row_q5_0); break;
    case LINNET_STORAGE_Q5_1: ROWS_LOOP(row_q5_1); break;
    case LINNET_STORAGE_Q4_K: ROWS_LOOP(row_q4_k); break;
    case LINNET_STORAGE_Q5_K: ROWS_LOOP(row_q5_k); break;
    case LINNET_STORAGE_Q6_K: ROWS_LOOP(row_q6_k); break;
    default:
      for (int64_t n = n0; n < n1; ++n)
        for (int64_t m = 0; m < p->m; ++m)
          p->out[m * p->ldo + n * p->sdo] = dot_row_c(p->format, p->w + n * p->ldw, p->k, &p->x[m]);
      return;
  }
  const int cnt = (int)(n1 - n0);
  for (int64_t m = 0; m < p->m; ++m) {
    for (int i = cnt; i < ROW_GROUP; ++i) part[m][i] = _mm512_setzero_ps();
    const __m512 sums = reduce16(part[m]);
    float* o = p->out + m * p->ldo + n0 * p->sdo;
    if (p->sdo == 1) {
      _mm512_mask_storeu_ps(o, (__mmask16)((1u << cnt) - 1), sums);
    } else {
      _Alignas(64) float tmp[16];
      _mm512_store_ps(tmp, sums);
      for (int i = 0; i < cnt; ++i) o[i * p->sdo] = tmp[i];
    }
  }
}

#endif /* FAST_VNNI */

static void fast_matmul(const fast_product* p) {
  const int64_t groups = (p->n + ROW_GROUP - 1) / ROW_GROUP;
#pragma omp parallel for schedule(static) if (p->n * p->k >= PARALLEL_MIN_WORK)
  for (int64_t g = 0; g < groups; ++g) product_rows(p, g * ROW_GROUP, min64(p->n, (g + 1) * ROW_GROUP));
}

/* M > LINNET_FAST_MAX_M (prefill): x quantized as above, each row at a time,
 * and dequantized (d_b q_j, exact in f32: an f16 scale times a 7-bit
 * integer) into an f32 copy that the exact register-tiled kernel multiplies
 * (faster there than the integer path). The products are those of the
 * integer path up to the order of f32 rounding, so prefill and decode see
 * the same 8-bit activations (llama.cpp quantizes them in both). */
static void prefill_product(linnet_memref2* x, linnet_memref2* w, linnet_memref2* out, int64_t format, int64_t k) {
  const int64_t m = out->sizes[0];
  const int64_t per_row = xrow_bytes(k);
  unsigned char* heap = (unsigned char*)aligned_alloc(64, (size_t)round_up(m * k * 4, 64) + (size_t)round_up(per_row, 64));
  if (heap == NULL) {
    KERNEL(_mlir_ciface_linnet_kernel_matmul_packed)(x, w, out, format, k);
    return;
  }
  float* xq = (float*)(void*)heap;
  xrow row;
  xrow_place(&row, heap + round_up(m * k * 4, 64), k);
  const float* xb = (const float*)x->aligned + x->offset;
  for (int64_t i = 0; i < m; ++i) {
    if (!quantize_row(xb + i * x->strides[0], x->strides[1], k, 0, &row)) {
      free(heap);
      KERNEL(_mlir_ciface_linnet_kernel_matmul_packed)(x, w, out, format, k);
      return;
    }
    for (int64_t j = 0; j < k; ++j) xq[i * k + j] = row.d[j / 32] * (float)row.q[j];
  }
  linnet_memref2 xm = {heap, heap, 0, {m, k}, {k, 1}};
  KERNEL(_mlir_ciface_linnet_kernel_matmul_packed)(&xm, w, out, format, k);
  free(heap);
}

static int has_integer_path(int64_t format) {
  switch (format) {
    case LINNET_STORAGE_Q8_0:
    case LINNET_STORAGE_Q4_0:
    case LINNET_STORAGE_Q4_1:
    case LINNET_STORAGE_Q5_0:
    case LINNET_STORAGE_Q5_1:
    case LINNET_STORAGE_Q4_K:
    case LINNET_STORAGE_Q5_K:
    case LINNET_STORAGE_Q6_K: return 1;
    default: return 0;
  }
}

void KERNEL(_mlir_ciface_linnet_kernel_matmul_packed_fast)(linnet_memref2* x, linnet_memref2* w,
                                                           linnet_memref2* out, int64_t format, int64_t k) {
  if (format < 0 || format >= LINNET_STORAGE_COUNT) return;
  const int64_t m = out->sizes[0], n = out->sizes[1];
  if (m <= 0 || n <= 0) return;
  if (k <= 0 || !has_integer_path(format) || k % linnet_storage_block_elements[format] != 0) {
    KERNEL(_mlir_ciface_linnet_kernel_matmul_packed)(x, w, out, format, k);
    return;
  }
  if (m > LINNET_FAST_MAX_M) {
    prefill_product(x, w, out, format, k);
    return;
  }
  _Alignas(64) unsigned char stack[FAST_STACK_BYTES];
  xrow rows_stack[FAST_ROWS];
  const int64_t per_row = xrow_bytes(k);
  const int64_t rb = linnet_storage_row_bytes(format, k);
  const int strided_w = w->strides[1] != 1 && rb > 1;
  const size_t xbytes = (size_t)(m * per_row), header = (size_t)round_up(m * (int64_t)sizeof(xrow), 64);
  const size_t wbytes = strided_w ? (size_t)(n * rb) : 0;
  unsigned char* heap = NULL;
  unsigned char* base = stack;
  xrow* rows = rows_stack;
  if (m > FAST_ROWS || xbytes > sizeof stack || strided_w) {
    /* One allocation: the row table, quantized x, a contiguous copy of W. */
    heap = (unsigned char*)aligned_alloc(64, header + xbytes + round_up((int64_t)wbytes, 64) + 64);
    if (heap == NULL) {
      KERNEL(_mlir_ciface_linnet_kernel_matmul_packed)(x, w, out, format, k);
      return;
    }
    rows = (xrow*)(void*)heap;
    base = heap + header;
  }
  const float* xb = (const float*)x->aligned + x->offset;
  const int bias = format_bias(format);
  for (int64_t i = 0; i < m; ++i) {
    xrow_place(&rows[i], base + i * per_row, k);
    if (!quantize_row(xb + i * x->strides[0], x->strides[1], k, bias, &rows[i])) {
      free(heap);
      KERNEL(_mlir_ciface_linnet_kernel_matmul_packed)(x, w, out, format, k);
      return;
    }
  }
  const uint8_t* wb = (const uint8_t*)w->aligned + w->offset;
  int64_t ldw = w->strides[0];
  if (strided_w) {
    uint8_t* copy = base + xbytes;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < rb; ++j) copy[i * rb + j] = wb[i * w->strides[0] + j * w->strides[1]];
    wb = copy;
    ldw = rb;
  }
  fast_product p = {format, m, n, k, rows, wb, ldw, (float*)out->aligned + out->offset, out->strides[0],
                    out->strides[1]};
  fast_matmul(&p);
  free(heap);
}
