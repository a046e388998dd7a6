/* AVX2 products (with FMA), included by linnet_kernels.c in place of the
 * AVX-512 ones on machines without AVX-512; the same structure with 8 lanes:
 *  - decode: a row of W dequantized in registers 8 values at a time
 *    (linnet_kernels_avx2_dequantize.h) and fed to up to DECODE_ROWS rows
 *    of x;
 *  - prefill: the micro-tile, MR rows of x against 16 columns of the packed
 *    panel at a time (6 x 2 accumulators of the 16 ymm registers), each
 *    output summed in K order with one FMA per term, as on AVX-512.
 * Before these the AVX2 machines ran the portable C: SmolLM2's Q4_1 decode
 * at 3.5% of the read-bandwidth bound (`linnet bench decode`). */
#ifndef LINNET_KERNELS_AVX2_PRODUCTS_H
#define LINNET_KERNELS_AVX2_PRODUCTS_H

/* ---- decode path ------------------------------------------------------- */

/* Independent sums per row of x to hide FMA latency: 4 for one or two rows,
 * 2 for three or four (so that 8 accumulators, a weight vector and an x
 * vector fit the 16 registers). mr is a constant in each instantiation. */
typedef __m256 dot_acc[DECODE_ROWS][4];
#define ACC(u) ((u) & (mr <= 2 ? 3 : 1))

static ALWAYS_INLINE void acc_zero(dot_acc acc) {
  for (int r = 0; r < DECODE_ROWS; ++r)
    for (int u = 0; u < 4; ++u) acc[r][u] = _mm256_setzero_ps();
}

static ALWAYS_INLINE void acc_finish(dot_acc acc, int mr, float* const* out) {
  for (int r = 0; r < mr; ++r)
    *out[r] = hsum8(_mm256_add_ps(_mm256_add_ps(acc[r][0], acc[r][1]), _mm256_add_ps(acc[r][2], acc[r][3])));
}

/* 8 weights w_ against x[r][koff .. koff+8) for every row r, into sum u. */
#define FEED(wv, koff, u)                                                               \
  do {                                                                                  \
    const __m256 w_ = (wv);                                                             \
    for (int r = 0; r < mr; ++r)                                                        \
      acc[r][ACC(u)] = _mm256_fmadd_ps(w_, _mm256_loadu_ps(x[r] + (koff)), acc[r][ACC(u)]); \
  } while (0)

static ALWAYS_INLINE void dot_chunk(dot_acc acc, const float* w, const float* const* x, int64_t len, int mr) {
  int64_t j = 0;
  for (; j + 32 <= len; j += 32) {
    prefetch_ahead(w + j, 128);
    for (int u = 0; u < 4; ++u) FEED(_mm256_loadu_ps(w + j + 8 * u), j + 8 * u, u);
  }
  for (; j + 8 <= len; j += 8) FEED(_mm256_loadu_ps(w + j), j, 0);
  if (j < len) { /* the tail through zero-padded copies */
    _Alignas(32) float wt[8] = {0}, xt[DECODE_ROWS][8] = {{0}};
    memcpy(wt, w + j, (size_t)(len - j) * sizeof(float));
    for (int r = 0; r < mr; ++r) memcpy(xt[r], x[r] + j, (size_t)(len - j) * sizeof(float));
    const __m256 wv = _mm256_load_ps(wt);
    for (int r = 0; r < mr; ++r) acc[r][ACC(1)] = _mm256_fmadd_ps(wv, _mm256_load_ps(xt[r]), acc[r][ACC(1)]);
  }
}

/* The fused kernels, one block at a time: each group of 8 values of a
 * block goes to its own sum, the one dot_chunk gives it, so that a row's sum
 * is bitwise dot_chunk's over the dequantized row (the unit test checks it). */
static ALWAYS_INLINE void block_q8_0(dot_acc acc, const uint8_t* w, int64_t k0, const float* const* x, int mr) {
  const __m256 d = f16_bcast(w);
  for (int g = 0; g < 4; ++g) FEED(_mm256_mul_ps(i8x8_ps(w + 2 + 8 * g), d), k0 + 8 * g, g);
}

static ALWAYS_INLINE void block_q4_0(dot_acc acc, const uint8_t* w, int64_t k0, const float* const* x, int mr) {
  const __m256 d = f16_bcast(w);
  for (int g = 0; g < 2; ++g) {
    const __m256i b = u8x8(w + 2 + 8 * g);
    FEED(q4_0_values(_mm256_and_si256(b, low4_epi32()), d), k0 + 8 * g, g);
    FEED(q4_0_values(_mm256_srli_epi32(b, 4), d), k0 + 16 + 8 * g, 2 + g);
  }
}

static ALWAYS_INLINE void block_q4_1(dot_acc acc, const uint8_t* w, int64_t k0, const float* const* x, int mr) {
  __m256 d, m;
  q4_1_scales(w, &d, &m); /* one conversion for both */
  for (int g = 0; g < 2; ++g) {
    const __m256i b = u8x8(w + 4 + 8 * g);
    FEED(q4_1_values(_mm256_and_si256(b, low4_epi32()), d, m), k0 + 8 * g, g);
    FEED(q4_1_values(_mm256_srli_epi32(b, 4), d, m), k0 + 16 + 8 * g, 2 + g);
  }
}

static ALWAYS_INLINE void block_q5_0(dot_acc acc, const uint8_t* w, int64_t k0, const float* const* x, int mr) {
  const __m256 d = f16_bcast(w);
  _Alignas(32) uint8_t q[32];
  q5_0_stage(w, q);
  for (int g = 0; g < 4; ++g) FEED(_mm256_mul_ps(i8x8_ps(q + 8 * g), d), k0 + 8 * g, g);
}

static ALWAYS_INLINE void block_q5_1(dot_acc acc, const uint8_t* w, int64_t k0, const float* const* x, int mr) {
  __m256 d, m;
  q4_1_scales(w, &d, &m);
  _Alignas(32) uint8_t q[32];
  q5_1_stage(w, q);
  for (int g = 0; g < 4; ++g) FEED(q4_1_values(u8x8(q + 8 * g), d, m), k0 + 8 * g, g);
}

#define FUSED_32(name, bytes)                                                                          \
  static ALWAYS_INLINE void fused_##name(const uint8_t* w, int64_t nb, const float* const* x, int mr, \
                                         float* const* out) {                                        \
    dot_acc acc;                                                                                     \
    acc_zero(acc);                                                                                   \
    for (int64_t b = 0; b < nb; ++b) {                                                               \
      if ((b & 1) == 0) prefetch_ahead(w + b * (bytes), 64);                                         \
      block_##name(acc, w + b * (bytes), 32 * b, x, mr);                                             \
    }                                                                                                \
    acc_finish(acc, mr, out);                                                                        \
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
    float ds[8], ms[8];
    k4_scales(w, ds, ms);
    const uint8_t* q = w + 16;
    for (int j = 0; j < 4; ++j, q += 32) {
      const __m256 d1 = _mm256_set1_ps(ds[2 * j]), m1 = _mm256_set1_ps(ms[2 * j]);
      const __m256 d2 = _mm256_set1_ps(ds[2 * j + 1]), m2 = _mm256_set1_ps(ms[2 * j + 1]);
      const int64_t k0 = 256 * b + 64 * j;
      for (int h = 0; h < 4; ++h) {
        const __m256i v = u8x8(q + 8 * h);
        FEED(q4_k_values(_mm256_and_si256(v, low4_epi32()), d1, m1), k0 + 8 * h, h);
        FEED(q4_k_values(_mm256_srli_epi32(v, 4), d2, m2), k0 + 32 + 8 * h, h + 2);
      }
    }
  }
  acc_finish(acc, mr, out);
}

static ALWAYS_INLINE void fused_q6_k(const uint8_t* w, int64_t nb, const float* const* x, int mr,
                                     float* const* out) {
  dot_acc acc;
  acc_zero(acc);
  for (int64_t b = 0; b < nb; ++b, w += 210) {
    prefetch_ahead(w, 210);
    _Alignas(32) float scales[16];
    q6_k_scales(w, scales);
    const uint8_t* ql = w;
    const uint8_t* qh = w + 128;
    for (int n = 0; n < 2; ++n, ql += 64, qh += 32)
      for (int c = 0; c < 4; ++c) {
        __m256 q[4];
        q6_k_quads(u8x8(ql + 8 * c), u8x8(ql + 32 + 8 * c), u8x8(qh + 8 * c), q);
        for (int t = 0; t < 4; ++t)
          FEED(_mm256_mul_ps(_mm256_set1_ps(scales[8 * n + c / 2 + 2 * t]), q[t]),
               256 * b + 128 * n + 32 * t + 8 * c, t);
      }
  }
  acc_finish(acc, mr, out);
}

#undef FEED
#undef ACC

/* ---- prefill path ------------------------------------------------------ */

/* out[i][0..nr) (+)= sum_kk x[i][kk] * pack[kk][0..nr) for i < mr, with
 * x[i][kk] at x[i * xi + kk * xk], 16 columns at a time; `first` stores,
 * later K-slices add to what it stored. */
static ALWAYS_INLINE void micro_tile(const float* pack, int64_t kl, const float* x, int64_t xi, int64_t xk,
                                     float* out, int64_t ldo, int mr, int nr, int first) {
  for (int h = 0; h < nr; h += 16) {
    __m256 c[MR][2];
    for (int i = 0; i < MR; ++i) c[i][0] = c[i][1] = _mm256_setzero_ps();
    for (int64_t kk = 0; kk < kl; ++kk) {
      const __m256 b0 = _mm256_load_ps(pack + kk * NR + h), b1 = _mm256_load_ps(pack + kk * NR + h + 8);
      for (int i = 0; i < mr; ++i) {
        const __m256 a = _mm256_broadcast_ss(x + i * xi + kk * xk);
        c[i][0] = _mm256_fmadd_ps(a, b0, c[i][0]);
        c[i][1] = _mm256_fmadd_ps(a, b1, c[i][1]);
      }
    }
    const int cols = nr - h < 16 ? nr - h : 16;
    for (int i = 0; i < mr; ++i) {
      float* o = out + i * ldo + h;
      if (cols == 16) {
        if (!first) {
          c[i][0] = _mm256_add_ps(c[i][0], _mm256_loadu_ps(o));
          c[i][1] = _mm256_add_ps(c[i][1], _mm256_loadu_ps(o + 8));
        }
        _mm256_storeu_ps(o, c[i][0]);
        _mm256_storeu_ps(o + 8, c[i][1]);
      } else {
        _Alignas(32) float t[16];
        _mm256_store_ps(t, c[i][0]);
        _mm256_store_ps(t + 8, c[i][1]);
        for (int j = 0; j < cols; ++j) o[j] = first ? t[j] : t[j] + o[j];
      }
    }
  }
}

#endif /* LINNET_KERNELS_AVX2_PRODUCTS_H */
