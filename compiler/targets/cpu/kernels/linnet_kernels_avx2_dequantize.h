/* AVX2 dequantization (with F16C), included by linnet_kernels.c in place of
 * the AVX-512 helpers on machines without AVX-512 (AMD Zen 2 and 3, most
 * client CPUs): the hot formats 8 values at a time, bitwise as the scalar
 * code (int -> f32 conversions are exact; every mul and add/sub is its own
 * op). linnet_kernels_avx2_products.h builds the products on these. */
#ifndef LINNET_KERNELS_AVX2_DEQUANTIZE_H
#define LINNET_KERNELS_AVX2_DEQUANTIZE_H

/* ---- dequantization ---------------------------------------------------- */

/* An f16 scale broadcast to 8 lanes (a signalling NaN comes out quiet; a
 * scale only enters products, which quiet it the same way). */
static ALWAYS_INLINE __m256 f16_bcast(const uint8_t* p) {
  return _mm256_cvtph_ps(_mm_set1_epi16((short)load_u16(p)));
}

/* 8 bytes from p, zero- or sign-extended to 8 int32 lanes. */
static ALWAYS_INLINE __m256i u8x8(const uint8_t* p) {
  return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)p));
}
static ALWAYS_INLINE __m256 i8x8_ps(const uint8_t* p) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i*)p)));
}

static ALWAYS_INLINE __m256i low4_epi32(void) { return _mm256_set1_epi32(0xF); }

/* Q4_0's 8 values (q - 8) * d from 8 nibbles q; Q4_1's q * d + m.
 * Q4_1 and Q4_K compute their mul and add as one FMA: the product of a
 * 4-bit q and an f16 scale (11 significant bits; Q4_K's d * scale, 17) is
 * exact in f32, so rounding it first changes nothing, and the FMA rounds
 * once, as the add does. (On AVX2 machines with 128-bit FP units, Zen 1,
 * each 256-bit op saved is two micro-ops.) */
static ALWAYS_INLINE __m256 q4_0_values(__m256i q, __m256 d) {
  return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(q, _mm256_set1_epi32(8))), d);
}
static ALWAYS_INLINE __m256 q4_1_values(__m256i q, __m256 d, __m256 m) {
  return _mm256_fmadd_ps(_mm256_cvtepi32_ps(q), d, m);
}
/* Q5_1's q * d + m is q4_1_values (a 5-bit q times an f16 scale is exact
 * in f32 too); Q5_0's (q - 16) * d is i8x8_ps of the staged q - 16 times d. */
/* A Q5 block's values staged as 32 bytes (q5_bytes; Q5_0's as q - 16, s8),
 * then read back 8 at a time by the widening loads the other formats use:
 * fewer vector ops than extracting the 5th bits per group of 8. */
static ALWAYS_INLINE void q5_0_stage(const uint8_t* x, uint8_t* q) {
  _mm256_store_si256((__m256i*)q, _mm256_sub_epi8(q5_bytes(x + 2, x + 6), _mm256_set1_epi8(16)));
}
static ALWAYS_INLINE void q5_1_stage(const uint8_t* x, uint8_t* q) {
  _mm256_store_si256((__m256i*)q, q5_bytes(x + 4, x + 8));
}
/* Q4_K's ds * q - ms (ds = d * scale, exact as above). */
static ALWAYS_INLINE __m256 q4_k_values(__m256i q, __m256 ds, __m256 ms) {
  return _mm256_fmsub_ps(ds, _mm256_cvtepi32_ps(q), ms);
}

/* Q6_K: the four 6-bit values (minus 32) of 8 positions l of a 128-value
 * half: from ql[l], ql[l + 32] and qh[l] (a, b, h). */
static ALWAYS_INLINE void q6_k_quads(__m256i a, __m256i b, __m256i h, __m256 out[4]) {
  const __m256i low4 = low4_epi32(), three = _mm256_set1_epi32(3), bias = _mm256_set1_epi32(32);
  const __m256i q[4] = {
      _mm256_or_si256(_mm256_and_si256(a, low4), _mm256_slli_epi32(_mm256_and_si256(h, three), 4)),
      _mm256_or_si256(_mm256_and_si256(b, low4),
                      _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(h, 2), three), 4)),
      _mm256_or_si256(_mm256_srli_epi32(a, 4),
                      _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(h, 4), three), 4)),
      _mm256_or_si256(_mm256_srli_epi32(b, 4), _mm256_slli_epi32(_mm256_srli_epi32(h, 6), 4))};
  for (int t = 0; t < 4; ++t) out[t] = _mm256_cvtepi32_ps(_mm256_sub_epi32(q[t], bias));
}

/* d * sc for a Q6_K block's 16 scales, as the scalar code rounds it. */
static ALWAYS_INLINE void q6_k_scales(const uint8_t* x, float* scales) {
  const float d = f16_at(x + 208);
  for (int i = 0; i < 16; ++i) scales[i] = d * (float)(int8_t)x[192 + i];
}

static ALWAYS_INLINE void deq_q8_0_v(const uint8_t* x, float* y) {
  const __m256 d = f16_bcast(x);
  for (int g = 0; g < 4; ++g) _mm256_storeu_ps(y + 8 * g, _mm256_mul_ps(i8x8_ps(x + 2 + 8 * g), d));
}

static ALWAYS_INLINE void deq_q4_0_v(const uint8_t* x, float* y) {
  const __m256 d = f16_bcast(x);
  for (int g = 0; g < 2; ++g) {
    const __m256i b = u8x8(x + 2 + 8 * g);
    _mm256_storeu_ps(y + 8 * g, q4_0_values(_mm256_and_si256(b, low4_epi32()), d));
    _mm256_storeu_ps(y + 16 + 8 * g, q4_0_values(_mm256_srli_epi32(b, 4), d));
  }
}

/* A Q4_1 block's d and m (its first 4 bytes), converted together and each
 * broadcast to 8 lanes. */
static ALWAYS_INLINE void q4_1_scales(const uint8_t* x, __m256* d, __m256* m) {
  uint32_t bits;
  memcpy(&bits, x, 4);
  const __m128 dm = _mm_cvtph_ps(_mm_cvtsi32_si128((int)bits));
  *d = _mm256_broadcastss_ps(dm);
  *m = _mm256_broadcastss_ps(_mm_movehdup_ps(dm));
}

static ALWAYS_INLINE void deq_q4_1_v(const uint8_t* x, float* y) {
  __m256 d, m;
  q4_1_scales(x, &d, &m);
  for (int g = 0; g < 2; ++g) {
    const __m256i b = u8x8(x + 4 + 8 * g);
    _mm256_storeu_ps(y + 8 * g, q4_1_values(_mm256_and_si256(b, low4_epi32()), d, m));
    _mm256_storeu_ps(y + 16 + 8 * g, q4_1_values(_mm256_srli_epi32(b, 4), d, m));
  }
}

static ALWAYS_INLINE void deq_q5_0_v(const uint8_t* x, float* y) {
  const __m256 d = f16_bcast(x);
  _Alignas(32) uint8_t q[32];
  q5_0_stage(x, q);
  for (int g = 0; g < 4; ++g) _mm256_storeu_ps(y + 8 * g, _mm256_mul_ps(i8x8_ps(q + 8 * g), d));
}

static ALWAYS_INLINE void deq_q5_1_v(const uint8_t* x, float* y) {
  __m256 d, m;
  q4_1_scales(x, &d, &m); /* the same d, m header as Q4_1 */
  _Alignas(32) uint8_t q[32];
  q5_1_stage(x, q);
  for (int g = 0; g < 4; ++g) _mm256_storeu_ps(y + 8 * g, q4_1_values(u8x8(q + 8 * g), d, m));
}

static ALWAYS_INLINE void deq_q4_k_v(const uint8_t* x, float* y) {
  float ds[8], ms[8];
  k4_scales(x, ds, ms);
  const uint8_t* q = x + 16;
  for (int j = 0; j < 4; ++j, q += 32, y += 64) {
    const __m256 d1 = _mm256_set1_ps(ds[2 * j]), m1 = _mm256_set1_ps(ms[2 * j]);
    const __m256 d2 = _mm256_set1_ps(ds[2 * j + 1]), m2 = _mm256_set1_ps(ms[2 * j + 1]);
    for (int h = 0; h < 4; ++h) {
      const __m256i b = u8x8(q + 8 * h);
      _mm256_storeu_ps(y + 8 * h, q4_k_values(_mm256_and_si256(b, low4_epi32()), d1, m1));
      _mm256_storeu_ps(y + 32 + 8 * h, q4_k_values(_mm256_srli_epi32(b, 4), d2, m2));
    }
  }
}

static ALWAYS_INLINE void deq_q6_k_v(const uint8_t* x, float* y) {
  _Alignas(32) float scales[16];
  q6_k_scales(x, scales);
  const uint8_t* ql = x;
  const uint8_t* qh = x + 128;
  for (int n = 0; n < 2; ++n, y += 128, ql += 64, qh += 32)
    for (int c = 0; c < 4; ++c) { /* positions l = 8c .. 8c+7 share their scales */
      __m256 q[4];
      q6_k_quads(u8x8(ql + 8 * c), u8x8(ql + 32 + 8 * c), u8x8(qh + 8 * c), q);
      for (int t = 0; t < 4; ++t)
        _mm256_storeu_ps(y + 32 * t + 8 * c, _mm256_mul_ps(_mm256_set1_ps(scales[8 * n + c / 2 + 2 * t]), q[t]));
    }
}

/* 8 binary16 values: the hardware conversion is exact but quiets signalling
 * NaNs, which half.cpp keeps; NaN lanes are rebuilt from their bits. */
static ALWAYS_INLINE void deq_f16x8_v(const uint8_t* x, float* y) {
  const __m128i h = _mm_loadu_si128((const __m128i*)x);
  __m256 f = _mm256_cvtph_ps(h);
  const __m256i w = _mm256_cvtepu16_epi32(h);
  const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(w, _mm256_set1_epi32(0x7fff)), _mm256_set1_epi32(0x7c00));
  if (!_mm256_testz_si256(nan, nan)) {
    const __m256i bits =
        _mm256_or_si256(_mm256_slli_epi32(_mm256_and_si256(w, _mm256_set1_epi32(0x8000)), 16),
                        _mm256_or_si256(_mm256_set1_epi32(0x7f800000),
                                        _mm256_slli_epi32(_mm256_and_si256(w, _mm256_set1_epi32(0x3ff)), 13)));
    f = _mm256_blendv_ps(f, _mm256_castsi256_ps(bits), _mm256_castsi256_ps(nan));
  }
  _mm256_storeu_ps(y, f);
}

static ALWAYS_INLINE void deq_bf16x8_v(const uint8_t* x, float* y) {
  const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i*)x));
  _mm256_storeu_ps(y, _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)));
}

#endif /* LINNET_KERNELS_AVX2_DEQUANTIZE_H */
