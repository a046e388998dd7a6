/* AVX2 attention rows (with FMA), included by linnet_kernels.c after
 * attn_row_generic on machines without AVX-512: the generic row's steps
 * (scores over the visible keys, max, exp, sum, weighted values) with the
 * score dot products and the value sums 8 lanes at a time, for query, key,
 * value and output rows of unit inner stride (the compiled models' case).
 * Any mask stride. The portable row sums a score in D order and the AVX-512
 * block in lanes; this one in 8 lanes then across them: results agree to
 * rounding, and depend on neither the thread count nor the block. */
#ifndef LINNET_KERNELS_AVX2_ATTENTION_H
#define LINNET_KERNELS_AVX2_ATTENTION_H

static ALWAYS_INLINE float dot_avx2(const float* a, const float* b, int64_t n) {
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
  int64_t c = 0;
  for (; c + 16 <= n; c += 16) {
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + c), _mm256_loadu_ps(b + c), s0);
    s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + c + 8), _mm256_loadu_ps(b + c + 8), s1);
  }
  if (c + 8 <= n) {
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + c), _mm256_loadu_ps(b + c), s0);
    c += 8;
  }
  float s = hsum8(_mm256_add_ps(s0, s1));
  for (; c < n; ++c) s += a[c] * b[c];
  return s;
}

/* acc[0..n) += w * v[0..n). */
static ALWAYS_INLINE void axpy_avx2(float* acc, float w, const float* v, int64_t n) {
  const __m256 wv = _mm256_set1_ps(w);
  int64_t c = 0;
  for (; c + 8 <= n; c += 8) _mm256_storeu_ps(acc + c, _mm256_fmadd_ps(wv, _mm256_loadu_ps(v + c), _mm256_loadu_ps(acc + c)));
  for (; c < n; ++c) acc[c] += w * v[c];
}

/* Unit inner strides for q, k, v and out (the mask's may be anything). */
static int attn_unit_strides(const attn_args* a) {
  return (a->qs[4] == 1 || a->d <= 1) && (a->ks[3] == 1 || a->d <= 1) && (a->vs[3] == 1 || a->e <= 1) &&
         (a->os[4] == 1 || a->e <= 1);
}

/* One query row of unit inner strides; buf holds K + E floats. */
static void attn_row_avx2(const attn_args* a, int64_t l0, int64_t l1, int64_t g, int64_t i, float* buf) {
  const int64_t nk = a->nk, d = a->d, e = a->e;
  const float* q = attn_q(a, l0, l1, g, i);
  const float* k = a->k + l0 * a->ks[0] + l1 * a->ks[1];
  const float* v = a->v + l0 * a->vs[0] + l1 * a->vs[1];
  const uint8_t* m = attn_mask(a, l0, l1, g, i);
  const int64_t kj = a->ks[2], vj = a->vs[2], mj = a->ms[4];
  float* o = attn_out(a, l0, l1, g, i);
  float* acc = buf + nk;
  for (int64_t c = 0; c < e; ++c) acc[c] = 0.0f;
  const key_range r = scan_mask(m, mj, nk);
  if (r.count == 0) { /* every key masked: the mean of the values */
    const float w = 1.0f / (float)nk;
    for (int64_t j = 0; j < nk; ++j) axpy_avx2(acc, w, v + j * vj, e);
  } else {
    const int dense = r.count == r.hi - r.lo;
    float mx = ATTN_MASKED;
    for (int64_t j = r.lo; j < r.hi; ++j) {
      if (!dense && !m[j * mj]) continue;
      const float s = dot_avx2(q, k + j * kj, d) * a->scale;
      buf[j] = s;
      mx = s > mx ? s : mx;
    }
    float z = 0.0f;
    for (int64_t j = r.lo; j < r.hi; ++j) {
      buf[j] = dense || m[j * mj] ? expf(buf[j] - mx) : 0.0f;
      z += buf[j];
    }
    for (int64_t j = r.lo; j < r.hi; ++j)
      if (dense || m[j * mj]) axpy_avx2(acc, buf[j] / z, v + j * vj, e);
  }
  for (int64_t c = 0; c < e; ++c) o[c] = acc[c];
}

#endif /* LINNET_KERNELS_AVX2_ATTENTION_H */
