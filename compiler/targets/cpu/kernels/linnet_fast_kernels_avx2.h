/* The `fast` product's integer path on AVX2 machines without AVX512-VNNI,
 * included by linnet_fast_kernels.c in place of the VNNI one, for Q8_0,
 * Q4_0, Q4_1, Q5_0, Q5_1 and Q4_K (Q5_K and Q6_K take dot_row_c): per
 * block of 32 weights, 32 u8 x s8 products summed in pairs by vpmaddubsw (no
 * saturation: |pair| <= 2 * 128 * 127) and in fours by vpmaddwd, so that
 * each int32 lane is the exact integer dot of 4 values (the lanes of
 * xrow's corr), then scaled by the weight's scale * d_b into 8 f32 lanes,
 * summed across them at the end of the row. The same integer sums as
 * dot_row_c; the f32 sums in another order, within the bound above. */
#ifndef LINNET_FAST_KERNELS_AVX2_H
#define LINNET_FAST_KERNELS_AVX2_H

static ALWAYS_INLINE float f16_scale(const uint8_t* p) { return _cvtsh_ss(load_u16(p)); }

/* Exact int32 dots of 4 consecutive u8 x s8 products, in 8 lanes. */
static ALWAYS_INLINE __m256i lane_dots(__m256i u, __m256i s) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

/* A 4-bit block's 16 bytes as its 32 values in order (low nibbles are
 * values 0-15, high nibbles 16-31), u8. */
static ALWAYS_INLINE __m256i nibbles_u8(const uint8_t* q) {
  const __m128i b = _mm_loadu_si128((const __m128i*)q), low4 = _mm_set1_epi8(0xF);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(b, 4), low4), _mm_and_si128(b, low4));
}

static float dot_row_avx2(int64_t format, const uint8_t* w, int64_t k, const xrow* x) {
  __m256 acc = _mm256_setzero_ps();
  float offset = 0.0f; /* Q4_1, Q5_1: sum_b m * d_b * sum_b q; Q4_K: minus its mins' terms */
  const int64_t nb = k / 32;
  const int8_t* q = x->q;
  switch (format) {
    case LINNET_STORAGE_Q8_0: /* s8 x s8 as |w| x (q * sign w) */
      for (int64_t b = 0; b < nb; ++b, w += 34, q += 32) {
        const __m256i wv = _mm256_loadu_si256((const __m256i*)(w + 2));
        const __m256i qv = _mm256_loadu_si256((const __m256i*)q);
        const __m256i dots = lane_dots(_mm256_sign_epi8(wv, wv), _mm256_sign_epi8(qv, wv));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(f16_scale(w) * x->d[b]), _mm256_cvtepi32_ps(dots), acc);
      }
      break;
    case LINNET_STORAGE_Q4_0: /* (n - 8) q: n q, plus corr = -8 * the lane's sum of q */
      for (int64_t b = 0; b < nb; ++b, w += 18, q += 32) {
        const __m256i dots = _mm256_add_epi32(lane_dots(nibbles_u8(w + 2), _mm256_loadu_si256((const __m256i*)q)),
                                              _mm256_loadu_si256((const __m256i*)(x->corr + 8 * b)));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(f16_scale(w) * x->d[b]), _mm256_cvtepi32_ps(dots), acc);
      }
      break;
    case LINNET_STORAGE_Q4_1:
      for (int64_t b = 0; b < nb; ++b, w += 20, q += 32) {
        const __m256i dots = lane_dots(nibbles_u8(w + 4), _mm256_loadu_si256((const __m256i*)q));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(f16_scale(w) * x->d[b]), _mm256_cvtepi32_ps(dots), acc);
        offset += f16_scale(w + 2) * x->dxsb[b];
      }
      break;
    case LINNET_STORAGE_Q5_0: /* (n - 16) q: n q, plus corr = -16 * the lane's sum of q */
      for (int64_t b = 0; b < nb; ++b, w += 22, q += 32) {
        const __m256i dots = _mm256_add_epi32(lane_dots(q5_bytes(w + 2, w + 6), _mm256_loadu_si256((const __m256i*)q)),
                                              _mm256_loadu_si256((const __m256i*)(x->corr + 8 * b)));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(f16_scale(w) * x->d[b]), _mm256_cvtepi32_ps(dots), acc);
      }
      break;
    case LINNET_STORAGE_Q5_1:
      for (int64_t b = 0; b < nb; ++b, w += 24, q += 32) {
        const __m256i dots = lane_dots(q5_bytes(w + 4, w + 8), _mm256_loadu_si256((const __m256i*)q));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(f16_scale(w) * x->d[b]), _mm256_cvtepi32_ps(dots), acc);
        offset += f16_scale(w + 2) * x->dxsb[b];
      }
      break;
    case LINNET_STORAGE_Q4_K: /* sub-blocks 2j and 2j+1: the low and high nibbles of the same 32 bytes */
      for (int64_t kb = 0; kb < k / QK_K; ++kb, w += 144) {
        const float d = f16_scale(w), dmin = f16_scale(w + 2);
        for (int j = 0; j < 4; ++j) {
          const __m256i qv = _mm256_loadu_si256((const __m256i*)(w + 16 + 32 * j)), low4 = _mm256_set1_epi8(0xF);
          const __m256i n[2] = {_mm256_and_si256(qv, low4), _mm256_and_si256(_mm256_srli_epi16(qv, 4), low4)};
          for (int h = 0; h < 2; ++h) {
            const int sub = 2 * j + h;
            const int64_t b = 8 * kb + sub;
            uint8_t sc, mn;
            scale_min_k4(sub, w + 4, &sc, &mn);
            const __m256i dots = lane_dots(n[h], _mm256_loadu_si256((const __m256i*)(q + 32 * b)));
            acc = _mm256_fmadd_ps(_mm256_set1_ps(d * (float)sc * x->d[b]), _mm256_cvtepi32_ps(dots), acc);
            offset -= dmin * (float)mn * x->d[b] * (float)x->sum[b];
          }
        }
      }
      break;
    default: return dot_row_c(format, w, k, x);
  }
  return hsum8(acc) + offset;
}

static void product_rows(const fast_product* p, int64_t n0, int64_t n1) {
  for (int64_t n = n0; n < n1; ++n)
    for (int64_t m = 0; m < p->m; ++m)
      p->out[m * p->ldo + n * p->sdo] = dot_row_avx2(p->format, p->w + n * p->ldw, p->k, &p->x[m]);
}

#endif /* LINNET_FAST_KERNELS_AVX2_H */
