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

/* The dot products of q with 4 key rows (4 sums in lanes, reduced
 * together by horizontal adds), so q is read once per 4 keys. */
static ALWAYS_INLINE void dots4_avx2(const float* q, const float* const k[4], int64_t n, float out[4]) {
  __m256 s[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
  int64_t c = 0;
  for (; c + 8 <= n; c += 8) {
    const __m256 qv = _mm256_loadu_ps(q + c);
    for (int t = 0; t < 4; ++t) s[t] = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k[t] + c), s[t]);
  }
  /* lane t of each 128-bit half: key t's partial sums; then the halves */
  const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(s[0], s[1]), _mm256_hadd_ps(s[2], s[3]));
  _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1)));
  for (; c < n; ++c)
    for (int t = 0; t < 4; ++t) out[t] += q[c] * k[t][c];
}

/* out[0..e) = sum of w[j] * v[j][0..e) over the visible keys j in [lo, hi),
 * 64 values at a time with the sums in registers. */
static void weighted_values_avx2(const float* v, int64_t vj, const float* w, const uint8_t* m, int64_t mj,
                                 int dense, int64_t lo, int64_t hi, int64_t e, float* out) {
  int64_t c0 = 0;
  for (; c0 + 64 <= e; c0 += 64) {
    __m256 acc[8];
    for (int u = 0; u < 8; ++u) acc[u] = _mm256_setzero_ps();
    for (int64_t j = lo; j < hi; ++j) {
      if (!dense && !m[j * mj]) continue;
      const __m256 wv = _mm256_set1_ps(w[j]);
      const float* vr = v + j * vj + c0;
      for (int u = 0; u < 8; ++u) acc[u] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(vr + 8 * u), acc[u]);
    }
    for (int u = 0; u < 8; ++u) _mm256_storeu_ps(out + c0 + 8 * u, acc[u]);
  }
  for (; c0 + 8 <= e; c0 += 8) {
    __m256 acc = _mm256_setzero_ps();
    for (int64_t j = lo; j < hi; ++j)
      if (dense || m[j * mj]) acc = _mm256_fmadd_ps(_mm256_set1_ps(w[j]), _mm256_loadu_ps(v + j * vj + c0), acc);
    _mm256_storeu_ps(out + c0, acc);
  }
  for (; c0 < e; ++c0) {
    float acc = 0.0f;
    for (int64_t j = lo; j < hi; ++j)
      if (dense || m[j * mj]) acc += w[j] * v[j * vj + c0];
    out[c0] = acc;
  }
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
  const key_range r = scan_mask(m, mj, nk);
  if (r.count == 0) { /* every key masked: the mean of the values */
    for (int64_t j = 0; j < nk; ++j) buf[j] = 1.0f / (float)nk;
    weighted_values_avx2(v, vj, buf, m, mj, 1, 0, nk, e, o);
    return;
  }
  const int dense = r.count == r.hi - r.lo;
  float mx = ATTN_MASKED;
  int64_t j = r.lo;
  for (; j + 4 <= r.hi; j += 4) { /* masked keys' scores are computed and dropped */
    const float* kr[4] = {k + j * kj, k + (j + 1) * kj, k + (j + 2) * kj, k + (j + 3) * kj};
    float s[4];
    dots4_avx2(q, kr, d, s);
    for (int t = 0; t < 4; ++t) {
      if (!dense && !m[(j + t) * mj]) continue;
      buf[j + t] = s[t] * a->scale;
      mx = buf[j + t] > mx ? buf[j + t] : mx;
    }
  }
  for (; j < r.hi; ++j) {
    if (!dense && !m[j * mj]) continue;
    const float s = dot_avx2(q, k + j * kj, d) * a->scale;
    buf[j] = s;
    mx = s > mx ? s : mx;
  }
  float z = 0.0f;
  for (j = r.lo; j < r.hi; ++j) {
    buf[j] = dense || m[j * mj] ? expf(buf[j] - mx) : 0.0f;
    z += buf[j];
  }
  for (j = r.lo; j < r.hi; ++j) buf[j] /= z;
  weighted_values_avx2(v, vj, buf, m, mj, dense, r.lo, r.hi, e, o);
}

#endif /* LINNET_KERNELS_AVX2_ATTENTION_H */
