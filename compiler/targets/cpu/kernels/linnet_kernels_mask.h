/* The keys a row of an attention mask lets its query see, found by
 * scanning the row from both ends (64 bytes at a time with AVX-512BW):
 * shared by the forward kernel (linnet_kernels.c) and the backward
 * (linnet_attention_train.c). Internal: static inline. */
#ifndef LINNET_KERNELS_MASK_H
#define LINNET_KERNELS_MASK_H

#include <stdint.h>
#include <string.h>

#include "linnet_kernels_common.h"

/* A masked score (sema::kAttentionMasked). */
#define ATTN_MASKED (-3.0e38f)

typedef struct {
  int64_t lo, hi, count; /* visible keys: count of them, all in [lo, hi) */
} key_range;

/* Visible keys of the mask row m (byte j at m[j * stride]). */
MAYBE_UNUSED static key_range scan_mask(const uint8_t* m, int64_t stride, int64_t n) {
  key_range r = {0, 0, 0};
  if (n <= 0) return r;
  if (stride == 0) {
    if (m[0]) r.hi = r.count = n;
    return r;
  }
  int64_t lo = 0, hi = n, count = 0;
  if (stride == 1) {
    uint64_t w;
#ifdef __AVX512BW__
    while (lo + 64 <= n && !_mm512_test_epi8_mask(_mm512_loadu_si512(m + lo), _mm512_loadu_si512(m + lo))) lo += 64;
#endif
    while (lo + 8 <= n && (memcpy(&w, m + lo, 8), w == 0)) lo += 8;
    while (lo < n && !m[lo]) ++lo;
    if (lo == n) return r;
#ifdef __AVX512BW__
    while (hi - 64 >= lo &&
           !_mm512_test_epi8_mask(_mm512_loadu_si512(m + hi - 64), _mm512_loadu_si512(m + hi - 64)))
      hi -= 64;
#endif
    while (hi - 8 >= lo && (memcpy(&w, m + hi - 8, 8), w == 0)) hi -= 8;
    while (!m[hi - 1]) --hi;
    int64_t j = lo;
#ifdef __AVX512BW__
    for (; j + 64 <= hi; j += 64) {
      const __m512i b = _mm512_loadu_si512(m + j);
      count += __builtin_popcountll(_mm512_test_epi8_mask(b, b));
    }
#endif
    for (; j < hi; ++j) count += m[j] != 0;
  } else {
    while (lo < n && !m[lo * stride]) ++lo;
    if (lo == n) return r;
    while (!m[(hi - 1) * stride]) --hi;
    for (int64_t j = lo; j < hi; ++j) count += m[j * stride] != 0;
  }
  r.lo = lo;
  r.hi = hi;
  r.count = count;
  return r;
}

#endif /* LINNET_KERNELS_MASK_H */
