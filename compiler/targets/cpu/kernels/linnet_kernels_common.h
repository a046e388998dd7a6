/* What the CPU kernel sources (linnet_kernels.c, linnet_fast_kernels.c,
 * linnet_attention_train.c) share: the KERNEL naming, scalar readers of ggml's block fields (a Q5 block's values among
 * them), the Q4_K/Q5_K scale
 * unpacking, the weight-stream prefetch and (AVX2) a Q5_0/Q5_1 block's
 * values as bytes. Internal: static inline, so each
 * translation unit (and the unit test's portable copy) has its own. */
#ifndef LINNET_KERNELS_COMMON_H
#define LINNET_KERNELS_COMMON_H

#include <stdint.h>
#include <string.h>

/* AVX2 with FMA and F16C, without AVX-512: linnet_kernels_avx2_*.h. */
#if !defined(__AVX512F__) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define LINNET_KERNELS_AVX2 1
#endif

#if defined(__AVX512F__) || defined(LINNET_KERNELS_AVX2)
#include <immintrin.h>
#endif

/* The unit test builds a second, portable copy of each kernel source under
 * other names. */
#ifdef LINNET_KERNELS_PORTABLE_TEST
#define KERNEL(name) linnet_portable##name
#else
#define KERNEL(name) name
#endif

#if defined(__GNUC__)
#define ALWAYS_INLINE inline __attribute__((always_inline))
#define MAYBE_UNUSED __attribute__((unused))
#else
#define ALWAYS_INLINE inline
#define MAYBE_UNUSED
#endif

static inline uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  memcpy(&v, p, 2);
  return v;
}

static inline float bits_to_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* IEEE binary16 -> f32 exactly as runtime/base/half.cpp (NaN payload kept). */
static inline float f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return bits_to_f32(sign | 0x7f800000u | (mant << 13));
  if (exp != 0) return bits_to_f32(sign | ((exp + 112u) << 23) | (mant << 13));
  if (mant == 0) return bits_to_f32(sign);
  float v = (float)mant * 0x1p-24f; /* subnormal: exact in f32 */
  uint32_t u;
  memcpy(&u, &v, 4);
  return bits_to_f32(sign | u);
}

static inline float f16_at(const uint8_t* p) { return f16_to_f32(load_u16(p)); }
static inline float bf16_to_f32(uint16_t h) { return bits_to_f32((uint32_t)h << 16); }

static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* Value j (0..31) of a Q5_0/Q5_1 block, 0..31: its nibble (j < 16 the low
 * one of qs[j], else the high one of qs[j - 16]) and, as 16, bit j of the
 * little-endian uint32 qh. */
static inline int q5_value(uint32_t qh, const uint8_t* qs, int j) {
  const int nibble = j < 16 ? qs[j] & 0x0F : qs[j - 16] >> 4;
  return nibble | (int)(((qh >> j) & 1u) << 4);
}

/* The (scale, min) pair j of a Q4_K/Q5_K block's 12 packed scale bytes. */
static inline void scale_min_k4(int j, const uint8_t* q, uint8_t* d, uint8_t* m) {
  if (j < 4) {
    *d = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *d = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

#if defined(__AVX512F__) || defined(LINNET_KERNELS_AVX2)
/* Software prefetch PREFETCH_AHEAD bytes ahead of the weight stream: on
 * top of the hardware's, it took a row-streaming f32 product from 29 to 42
 * GB/s out of DRAM on one thread (and +10% from L3). One prefetch per 64
 * bytes of [p, p + bytes), shifted ahead. */
#define PREFETCH_AHEAD 4096
static ALWAYS_INLINE void prefetch_ahead(const void* p, int bytes) {
  for (int b = 0; b < bytes; b += 64) _mm_prefetch((const char*)p + PREFETCH_AHEAD + b, _MM_HINT_T0);
}
#endif

#ifdef LINNET_KERNELS_AVX2
/* The sum of a vector's 8 lanes: halves, then pairs, then the last two. */
static ALWAYS_INLINE float hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

/* A Q5_0/Q5_1 block's 32 values q (0..31) in order, as u8: the nibbles of
 * qs (value j < 16 the low nibble of qs[j], value j >= 16 the high nibble
 * of qs[j - 16]), plus 16 where bit j of the little-endian uint32 at qh is
 * set (byte j of 32 takes byte j / 8 of qh and keeps bit j % 8). */
static ALWAYS_INLINE __m256i q5_bytes(const uint8_t* qh, const uint8_t* qs) {
  uint32_t h;
  memcpy(&h, qh, 4);
  const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32((int)h),
                                             _mm256_set_epi64x(0x0303030303030303LL, 0x0202020202020202LL,
                                                               0x0101010101010101LL, 0x0000000000000000LL));
  const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ULL);
  const __m256i high = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit), _mm256_set1_epi8(16));
  const __m128i b = _mm_loadu_si128((const __m128i*)qs), low4 = _mm_set1_epi8(0xF);
  return _mm256_or_si256(_mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(b, 4), low4), _mm_and_si128(b, low4)), high);
}
#endif

#endif /* LINNET_KERNELS_COMMON_H */
