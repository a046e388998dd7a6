/* f32 attention for a training step, one call per layer each way (the
 * gradient's attention, compiler/autodiff/attention.h, where the target
 * keeps it whole), without ever storing a [Q, K] square per head, as flash
 * attention does it. The forward writes the output and each query row's
 * statistics (its scores' maximum and the sum of exp(s - max)); the
 * reverse recomputes each row's probabilities from them over the keys its
 * mask lets it see and gives q, k and v their cotangents. Contracts beside
 * the declarations in linnet_kernels.h.
 *
 * Method. Rows (g, i) of one (l0, l1) are taken in the order (i, g), in
 * blocks of 16 held in the 16 lanes of a vector; a block reads only the
 * union of its rows' visible keys [lo, hi), so a causal mask costs about
 * half the square. Forward: s = (q . k_j) scale for each key, the row's
 * maximum, P = exp(s - max), sum, out = (P v) / sum. Reverse: P from the
 * statistics, dP = dO . v_j, rowDot = sum_j dP P, dS = P (dP - rowDot)
 * scale; dq = dS k is the block's own, dk += dSᵀ q and dv += Pᵀ dO are
 * summed over blocks. Each (l0, l1)'s blocks are dealt round-robin to a
 * fixed number of parts, each summing its own dk and dv, then added in
 * part order: results do not depend on the thread count. Vectors are
 * GCC/clang vector types of 16 floats: one zmm with AVX-512, two ymm with
 * AVX2, plain code elsewhere. */

#ifdef _OPENMP
#include <omp.h>
#endif

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "linnet_kernels.h"
#include "linnet_kernels_common.h"
#include "linnet_kernels_mask.h"

#define GRAD_LANES 16
/* Keys (or columns) a loop keeps in accumulators at once: 8 vectors of 16
 * are 8 of AVX-512's 32 registers, but 16 of AVX2's 16 (spilled): 4 there. */
#ifdef __AVX512F__
#define GRAD_UNROLL 8
#else
#define GRAD_UNROLL 4
#endif
#define GRAD_MAX_PARTS 4
/* Per-part sums of dk and dv stay under this many bytes in all. */
#define GRAD_PART_BYTES ((int64_t)64 << 20)
/* Below this much work (multiply-adds) the call runs on one thread. */
#define GRAD_PARALLEL_MIN_WORK 65536.0

/* GCC notes that a 64-byte vector passed by value would change the ABI
 * without AVX-512 (the portable copy); these helpers are static and inlined. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif
typedef float v16 __attribute__((vector_size(64)));
typedef int32_t v16i __attribute__((vector_size(64)));
typedef uint32_t v16u __attribute__((vector_size(64)));

static ALWAYS_INLINE v16 load16(const float* p) {
  v16 v;
  memcpy(&v, p, sizeof v);
  return v;
}
static ALWAYS_INLINE void store16(float* p, v16 v) { memcpy(p, &v, sizeof v); }
static ALWAYS_INLINE v16 splat(float x) { return (v16){0} + x; }
static ALWAYS_INLINE v16 where(v16i m, v16 x) { return (v16)((v16i)x & m); }

/* exp(x) for x <= 0 (a score less its row's maximum): Cody-Waite reduction
 * and Cephes' degree-6 polynomial, within 2 ulp; 0 below -87. */
static ALWAYS_INLINE v16 exp_nonpositive(v16 x) {
  const v16i kept = x >= -87.0f;
  x = where(kept, x);
  const v16 shift = splat(12582912.0f); /* 1.5 * 2^23: rounds to an integer */
  v16 n = x * 1.44269504088896341f + shift;
  const v16i bits = (v16i)(((v16u)n - (v16u)shift + 127u) << 23); /* unsigned: no shift is undefined */
  n = n - shift;
  const v16 r = x - n * 0.693359375f + n * 2.12194440e-4f;
  v16 p = splat(1.9875691500e-4f);
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  return where(kept, p * (v16)bits);
}

/* One call's operands. The forward writes `rows` (out), max and sum; the
 * reverse reads max, sum and dout and writes `rows` (dq), dk and dv. */
typedef struct {
  const float *q, *k, *v, *dout;
  const uint8_t* mask;
  float *max, *sum, *rows, *dk, *dv;
  int64_t l0, l1, g, nq, d, nk, e;
  int64_t qs[5], ks[4], vs[4], ms[5], xs[5], ss[5], os[5], rs[5], dks[4], dvs[4];
  float scale;
  int64_t dp, ep; /* d and e rounded up to 16 */
} grad_args;

/* One block's rows, gathered. */
typedef struct {
  int nr;
  int64_t lo, hi;
  const uint8_t* m[GRAD_LANES];
  float* row[GRAD_LANES]; /* each row's output: out, or dq */
  float *max[GRAD_LANES], *sum[GRAD_LANES];
  v16 mx, inv_sum;
  v16i seen;      /* rows that see some key */
  v16i from, to;  /* each row's visible keys [from, to), where they are a run */
  int runs;       /* every row's visible keys are one run: no mask bytes read per key */
} grad_block;

/* Scratch of one thread: [16][dp] q rows, [16][ep] dO rows, their
 * transposes [dp][16] and [ep][16], P and dS [nk][16]. */
typedef struct {
  float *qrows, *drows, *qt, *dt, *p, *ds;
} grad_scratch;

static int64_t round16(int64_t n) { return (n + 15) / 16 * 16; }

static ALWAYS_INLINE const float* k_at(const grad_args* a, int64_t l0, int64_t l1) {
  return a->k + l0 * a->ks[0] + l1 * a->ks[1];
}
static ALWAYS_INLINE const float* v_at(const grad_args* a, int64_t l0, int64_t l1) {
  return a->v + l0 * a->vs[0] + l1 * a->vs[1];
}

/* Gathers rows [t0, t0 + nr) of (l0, l1): their pointers, statistics and
 * q and dO rows (and transposes), zero in the lanes past nr. */
static void gather_block(const grad_args* a, int64_t l0, int64_t l1, int64_t t0, int nr, grad_block* b,
                         const grad_scratch* s) {
  const int reverse = a->dout != NULL;
  memset(s->qrows, 0, sizeof(float) * GRAD_LANES * a->dp);
  if (reverse) memset(s->drows, 0, sizeof(float) * GRAD_LANES * a->ep);
  b->nr = nr;
  b->lo = a->nk;
  b->hi = 0;
  float mx[GRAD_LANES] = {0}, inv[GRAD_LANES] = {0};
  int32_t seen[GRAD_LANES] = {0}, from[GRAD_LANES] = {0}, to[GRAD_LANES] = {0};
  b->runs = 1;
  for (int r = 0; r < nr; ++r) {
    const int64_t t = t0 + r, g = t % a->g, i = t / a->g;
    const int64_t qo = l0 * a->qs[0] + l1 * a->qs[1] + g * a->qs[2] + i * a->qs[3];
    const int64_t xo = l0 * a->xs[0] + l1 * a->xs[1] + g * a->xs[2] + i * a->xs[3];
    const int64_t so = l0 * a->ss[0] + l1 * a->ss[1] + g * a->ss[2] + i * a->ss[3];
    const int64_t oo = l0 * a->os[0] + l1 * a->os[1] + g * a->os[2] + i * a->os[3];
    b->m[r] = a->mask + l0 * a->ms[0] + l1 * a->ms[1] + g * a->ms[2] + i * a->ms[3];
    b->row[r] = a->rows + l0 * a->rs[0] + l1 * a->rs[1] + g * a->rs[2] + i * a->rs[3];
    b->max[r] = a->max + xo;
    b->sum[r] = a->sum + so;
    for (int64_t c = 0; c < a->d; ++c) s->qrows[r * a->dp + c] = a->q[qo + c * a->qs[4]];
    if (reverse) {
      for (int64_t c = 0; c < a->e; ++c) s->drows[r * a->ep + c] = a->dout[oo + c * a->os[4]];
      mx[r] = a->max[xo];
      inv[r] = 1.0f / a->sum[so];
    }
    const key_range kr = scan_mask(b->m[r], a->ms[4], a->nk);
    int64_t lo = kr.lo, hi = kr.hi;
    seen[r] = kr.count > 0 ? -1 : 0;
    from[r] = (int32_t)lo;
    to[r] = (int32_t)hi;
    b->runs &= kr.count == hi - lo;
    if (kr.count == 0) lo = 0, hi = a->nk; /* a row that sees no key: uniform over all */
    if (lo < b->lo) b->lo = lo;
    if (hi > b->hi) b->hi = hi;
  }
  for (int64_t c = 0; c < a->dp; ++c)
    for (int r = 0; r < GRAD_LANES; ++r) s->qt[c * GRAD_LANES + r] = s->qrows[r * a->dp + c];
  for (int64_t c = 0; reverse && c < a->ep; ++c)
    for (int r = 0; r < GRAD_LANES; ++r) s->dt[c * GRAD_LANES + r] = s->drows[r * a->ep + c];
  memcpy(&b->mx, mx, sizeof mx);
  memcpy(&b->inv_sum, inv, sizeof inv);
  memcpy(&b->seen, seen, sizeof seen);
  memcpy(&b->from, from, sizeof from);
  memcpy(&b->to, to, sizeof to);
}

/* Which of the block's rows see key j (-1). */
static ALWAYS_INLINE v16i visible_at(const grad_args* a, const grad_block* b, int64_t j) {
  if (b->runs) return ((v16i){0} + (int32_t)j >= b->from) & ((v16i){0} + (int32_t)j < b->to);
  int32_t m[GRAD_LANES] = {0};
  for (int r = 0; r < b->nr; ++r) m[r] = b->m[r][j * a->ms[4]] ? -1 : 0;
  v16i v;
  memcpy(&v, m, sizeof v);
  return v;
}

/* out[jj] = sum_c rows_t[c] * x[j0 + jj][c] for GRAD_UNROLL keys (rows
 * transposed [n][16]; x rows of stride xj, elements of stride xc), keys
 * past `count` read key j0 again. */
static ALWAYS_INLINE void dots(const float* rows_t, int64_t n, const float* x, int64_t xj, int64_t xc, int64_t j0,
                               int count, v16 out[GRAD_UNROLL]) {
  const float* kr[GRAD_UNROLL];
  for (int jj = 0; jj < GRAD_UNROLL; ++jj) kr[jj] = x + (j0 + (jj < count ? jj : 0)) * xj;
  v16 acc[GRAD_UNROLL] = {{0}};
  for (int64_t c = 0; c < n; ++c) {
    const v16 t = load16(rows_t + c * GRAD_LANES);
    for (int jj = 0; jj < GRAD_UNROLL; ++jj) acc[jj] += t * kr[jj][c * xc];
  }
  for (int jj = 0; jj < GRAD_UNROLL; ++jj) out[jj] = acc[jj];
}

/* P [hi - lo][16] from the scores, and dS [hi - lo][16] from dP. */
static void block_probabilities(const grad_args* a, const grad_block* b, const grad_scratch* s, const float* k,
                                const float* v) {
  v16 row_dot = {0};
  for (int64_t j0 = b->lo; j0 < b->hi; j0 += GRAD_UNROLL) {
    const int count = (int)min64(GRAD_UNROLL, b->hi - j0);
    v16 sc[GRAD_UNROLL], dp[GRAD_UNROLL];
    dots(s->qt, a->d, k, a->ks[2], a->ks[3], j0, count, sc);
    dots(s->dt, a->e, v, a->vs[2], a->vs[3], j0, count, dp);
    for (int jj = 0; jj < count; ++jj) {
      const int64_t j = j0 + jj;
      const v16i counted = visible_at(a, b, j) | ~b->seen;
      /* A row that sees no key counts every key with exp(0), as the forward did. */
      const v16 x = where(b->seen, sc[jj] * a->scale - b->mx);
      const v16 p = where(counted, exp_nonpositive(x)) * b->inv_sum;
      store16(s->p + (j - b->lo) * GRAD_LANES, p);
      store16(s->ds + (j - b->lo) * GRAD_LANES, dp[jj]);
      row_dot += dp[jj] * p;
    }
  }
  for (int64_t j = b->lo; j < b->hi; ++j) {
    float* ds = s->ds + (j - b->lo) * GRAD_LANES;
    const v16 p = load16(s->p + (j - b->lo) * GRAD_LANES);
    const v16 d = p * (load16(ds) - row_dot) * a->scale;
    store16(ds, where(visible_at(a, b, j) & b->seen, d));
  }
}

/* Each row's output row[r][c] = mul[r] sum_j w[j][r] x_j[c] (c < n; x rows
 * of stride xj, elements of stride xc), GRAD_UNROLL columns at a time: dq = dS k,
 * and the forward's out = (P v) / sum. */
static void block_rows_out(const grad_args* a, const grad_block* b, const float* w, const float* x, int64_t xj,
                           int64_t xc, int64_t n, v16 mul) {
  for (int64_t c0 = 0; c0 < n; c0 += GRAD_UNROLL) {
    const int cols = (int)min64(GRAD_UNROLL, n - c0);
    v16 acc[GRAD_UNROLL] = {{0}};
    for (int64_t j = b->lo; j < b->hi; ++j) {
      const v16 wj = load16(w + (j - b->lo) * GRAD_LANES);
      const float* xr = x + j * xj;
      for (int cc = 0; cc < GRAD_UNROLL; ++cc) acc[cc] += wj * xr[(c0 + (cc < cols ? cc : 0)) * xc];
    }
    for (int cc = 0; cc < cols; ++cc) {
      float lanes[GRAD_LANES];
      store16(lanes, acc[cc] * mul);
      for (int r = 0; r < b->nr; ++r) b->row[r][(c0 + cc) * a->rs[4]] = lanes[r];
    }
  }
}

/* sums[j][:] += sum_r w[j][r] rows[r][:] for the block's keys, GRAD_UNROLL / 2 keys by
 * 32 columns at a time (w [hi - lo][16], rows [16][n16], sums [nk][n16]). */
static void block_key_sums(const grad_block* b, const float* w, const float* rows, int64_t n16, float* sums) {
  enum { KEYS = GRAD_UNROLL / 2 };
  for (int64_t j0 = b->lo; j0 < b->hi; j0 += KEYS) {
    const int count = (int)min64(KEYS, b->hi - j0);
    const float* wj[KEYS];
    for (int jj = 0; jj < KEYS; ++jj) wj[jj] = w + (j0 - b->lo + (jj < count ? jj : 0)) * GRAD_LANES;
    for (int64_t c = 0; c < n16; c += 2 * GRAD_LANES) {
      const int two = c + 2 * GRAD_LANES <= n16; /* else the last 16 columns alone */
      v16 lo[KEYS] = {{0}}, hi[KEYS] = {{0}};
      for (int r = 0; r < b->nr; ++r) {
        const v16 x0 = load16(rows + r * n16 + c), x1 = two ? load16(rows + r * n16 + c + GRAD_LANES) : x0;
        for (int jj = 0; jj < KEYS; ++jj) {
          lo[jj] += x0 * wj[jj][r];
          hi[jj] += x1 * wj[jj][r];
        }
      }
      for (int jj = 0; jj < count; ++jj) {
        float* out = sums + (j0 + jj) * n16 + c;
        store16(out, load16(out) + lo[jj]);
        if (two) store16(out + GRAD_LANES, load16(out + GRAD_LANES) + hi[jj]);
      }
    }
  }
}

/* The work of part `part` of (l0, l1): blocks part, part + parts, ... */
static void run_part(const grad_args* a, int64_t l0, int64_t l1, int64_t part, int64_t parts, float* dk_sum,
                     float* dv_sum, const grad_scratch* s) {
  const int64_t rows = a->g * a->nq, blocks = (rows + GRAD_LANES - 1) / GRAD_LANES;
  const float *k = k_at(a, l0, l1), *v = v_at(a, l0, l1);
  memset(dk_sum, 0, sizeof(float) * a->nk * a->dp);
  memset(dv_sum, 0, sizeof(float) * a->nk * a->ep);
  for (int64_t blk = part; blk < blocks; blk += parts) {
    grad_block b;
    const int64_t t0 = blk * GRAD_LANES;
    gather_block(a, l0, l1, t0, (int)min64(GRAD_LANES, rows - t0), &b, s);
    if (b.lo >= b.hi) continue;
    block_probabilities(a, &b, s, k, v);
    block_rows_out(a, &b, s->ds, k, a->ks[2], a->ks[3], a->d, splat(1.0f));
    block_key_sums(&b, s->ds, s->qrows, a->dp, dk_sum);
    block_key_sums(&b, s->p, s->drows, a->ep, dv_sum);
  }
}

/* A gradient with a part missing would be silently wrong: the job ends, saying why. */
static void out_of_memory(int64_t bytes) {
  fprintf(stderr, "linnet: the attention gradient kernel could not allocate %lld bytes of scratch\n",
          (long long)bytes);
  abort();
}

static int64_t scratch_floats(const grad_args* a) {
  return 2 * GRAD_LANES * (a->dp + a->ep) + 2 * GRAD_LANES * a->nk;
}

static int scratch_alloc(const grad_args* a, grad_scratch* s, float** block) {
  float* p = (float*)aligned_alloc(64, (size_t)scratch_floats(a) * sizeof(float));
  *block = p;
  if (!p) return 0;
  s->qrows = p;
  s->drows = s->qrows + GRAD_LANES * a->dp;
  s->qt = s->drows + GRAD_LANES * a->ep;
  s->dt = s->qt + GRAD_LANES * a->dp;
  s->p = s->dt + GRAD_LANES * a->ep;
  s->ds = s->p + GRAD_LANES * a->nk;
  return 1;
}

/* K, G or Q = 0: every output zero (the forward's max the masked value,
 * its sum 0 keys). */
static void zero_outputs(const grad_args* a) {
  const int64_t width = a->dout ? a->d : a->e;
  for (int64_t l0 = 0; l0 < a->l0; ++l0)
    for (int64_t l1 = 0; l1 < a->l1; ++l1) {
      for (int64_t t = 0; t < a->g * a->nq; ++t) {
        const int64_t g = t % a->g, i = t / a->g;
        float* row = a->rows + l0 * a->rs[0] + l1 * a->rs[1] + g * a->rs[2] + i * a->rs[3];
        for (int64_t c = 0; c < width; ++c) row[c * a->rs[4]] = 0.0f;
        if (a->dout) continue;
        a->max[l0 * a->xs[0] + l1 * a->xs[1] + g * a->xs[2] + i * a->xs[3]] = ATTN_MASKED;
        a->sum[l0 * a->ss[0] + l1 * a->ss[1] + g * a->ss[2] + i * a->ss[3]] = 0.0f;
      }
      for (int64_t j = 0; a->dout && j < a->nk; ++j) {
        for (int64_t c = 0; c < a->d; ++c) a->dk[l0 * a->dks[0] + l1 * a->dks[1] + j * a->dks[2] + c * a->dks[3]] = 0.0f;
        for (int64_t c = 0; c < a->e; ++c) a->dv[l0 * a->dvs[0] + l1 * a->dvs[1] + j * a->dvs[2] + c * a->dvs[3]] = 0.0f;
      }
    }
}

/* ---- forward ------------------------------------------------------------ */

static ALWAYS_INLINE v16 select16(v16i m, v16 x, v16 y) { return (v16)(((v16i)x & m) | ((v16i)y & ~m)); }

/* The block's output rows and statistics: scores (masked ones -3e38) into
 * P's scratch and each row's maximum; then P = exp(s - max), its sum, and
 * out = (P v) / sum. */
static void block_forward(const grad_args* a, grad_block* b, const grad_scratch* s, const float* k, const float* v) {
  v16 mx = splat(ATTN_MASKED), sum = {0};
  for (int64_t j0 = b->lo; j0 < b->hi; j0 += GRAD_UNROLL) {
    const int count = (int)min64(GRAD_UNROLL, b->hi - j0);
    v16 sc[GRAD_UNROLL];
    dots(s->qt, a->d, k, a->ks[2], a->ks[3], j0, count, sc);
    for (int jj = 0; jj < count; ++jj) {
      const v16 score = select16(visible_at(a, b, j0 + jj), sc[jj] * a->scale, splat(ATTN_MASKED));
      store16(s->p + (j0 + jj - b->lo) * GRAD_LANES, score);
      mx = select16(score > mx, score, mx);
    }
  }
  /* A masked score (-3e38) less a row's max is below exp's range: its p is
   * 0 without reading the mask again; a row that sees no key counts every
   * key with exp(0). */
  for (int64_t j = b->lo; j < b->hi; ++j) {
    float* p = s->p + (j - b->lo) * GRAD_LANES;
    const v16 e = exp_nonpositive(where(b->seen, load16(p) - mx));
    store16(p, e);
    sum += e;
  }
  block_rows_out(a, b, s->p, v, a->vs[2], a->vs[3], a->e, splat(1.0f) / sum);
  float m[GRAD_LANES], z[GRAD_LANES];
  store16(m, mx);
  store16(z, sum);
  for (int r = 0; r < b->nr; ++r) {
    *b->max[r] = m[r];
    *b->sum[r] = z[r];
  }
}

/* A task's work on one thread, with that thread's scratch. */
typedef void (*grad_task)(const grad_args* a, int64_t task, const grad_scratch* s, void* context);

/* Runs task(a, t, scratch, context) for t in [0, tasks), on OpenMP threads
 * where the call is big enough, each thread with scratch of its own. */
static void run_tasks(const grad_args* a, int64_t tasks, grad_task task, void* context) {
  const double work = (double)(a->l0 * a->l1 * a->g * a->nq) * (double)a->nk * (double)(a->d + a->e);
  (void)work;
  int failed = 0;
#pragma omp parallel if (work >= GRAD_PARALLEL_MIN_WORK && tasks > 1)
  {
    grad_scratch s;
    float* block = NULL;
    if (!scratch_alloc(a, &s, &block)) {
#pragma omp atomic write
      failed = 1;
    }
#pragma omp for schedule(dynamic, 1)
    for (int64_t t = 0; t < tasks; ++t)
      if (block) task(a, t, &s, context);
    free(block);
  }
  if (failed) out_of_memory(scratch_floats(a) * (int64_t)sizeof(float));
}

/* Forward task t: block t % blocks of head t / blocks. */
static void forward_task(const grad_args* a, int64_t task, const grad_scratch* s, void* context) {
  (void)context;
  const int64_t rows = a->g * a->nq, blocks = (rows + GRAD_LANES - 1) / GRAD_LANES;
  const int64_t head = task / blocks, t0 = (task % blocks) * GRAD_LANES, l0 = head / a->l1, l1 = head % a->l1;
  grad_block b;
  gather_block(a, l0, l1, t0, (int)min64(GRAD_LANES, rows - t0), &b, s);
  block_forward(a, &b, s, k_at(a, l0, l1), v_at(a, l0, l1));
}

static void run_forward(const grad_args* a) {
  const int64_t blocks = (a->g * a->nq + GRAD_LANES - 1) / GRAD_LANES;
  run_tasks(a, a->l0 * a->l1 * blocks, forward_task, NULL);
}

/* ---- reverse ------------------------------------------------------------ */

/* dk and dv: each head's parts added in part order, keys split over threads. */
static void add_parts(const grad_args* a, const float* sums, int64_t parts) {
  const int64_t heads = a->l0 * a->l1, part = a->nk * (a->dp + a->ep);
  const double work = (double)(heads * a->nk) * (double)(a->d + a->e) * (double)parts;
  (void)work;
#pragma omp parallel for if (work >= GRAD_PARALLEL_MIN_WORK) schedule(static)
  for (int64_t hj = 0; hj < heads * a->nk; ++hj) {
    const int64_t head = hj / a->nk, j = hj % a->nk, l0 = head / a->l1, l1 = head % a->l1;
    const float* h = sums + head * parts * part; /* part p's dk at h + p * part, its dv nk * dp after */
    float* dk = a->dk + l0 * a->dks[0] + l1 * a->dks[1] + j * a->dks[2];
    float* dv = a->dv + l0 * a->dvs[0] + l1 * a->dvs[1] + j * a->dvs[2];
    for (int64_t c = 0; c < a->d; ++c) {
      float t = 0.0f;
      for (int64_t p = 0; p < parts; ++p) t += h[p * part + j * a->dp + c];
      dk[c * a->dks[3]] = t;
    }
    for (int64_t c = 0; c < a->e; ++c) {
      float t = 0.0f;
      for (int64_t p = 0; p < parts; ++p) t += h[p * part + a->nk * a->dp + j * a->ep + c];
      dv[c * a->dvs[3]] = t;
    }
  }
}

typedef struct {
  float* sums; /* per head and part: dk [nk][dp], then dv [nk][ep] */
  int64_t parts;
} grad_parts;

/* Reverse task t: part t % parts of head t / parts. */
static void reverse_task(const grad_args* a, int64_t task, const grad_scratch* s, void* context) {
  const grad_parts* p = (const grad_parts*)context;
  const int64_t head = task / p->parts, part = task % p->parts;
  float* dk_sum = p->sums + (head * p->parts + part) * a->nk * (a->dp + a->ep);
  run_part(a, head / a->l1, head % a->l1, part, p->parts, dk_sum, dk_sum + a->nk * a->dp, s);
}

static void run_grad(const grad_args* a) {
  const int64_t heads = a->l0 * a->l1, blocks = (a->g * a->nq + GRAD_LANES - 1) / GRAD_LANES;
  const int64_t head_bytes = a->nk * (a->dp + a->ep) * (int64_t)sizeof(float);
  grad_parts p = {NULL, GRAD_MAX_PARTS};
  while (p.parts > 1 && (p.parts > blocks || heads * p.parts * head_bytes > GRAD_PART_BYTES)) --p.parts;
  p.sums = (float*)malloc((size_t)(heads * p.parts * head_bytes));
  if (!p.sums) out_of_memory(heads * p.parts * head_bytes);
  run_tasks(a, heads * p.parts, reverse_task, &p);
  add_parts(a, p.sums, p.parts);
  free(p.sums);
}

/* ---- entry points ------------------------------------------------------- */

static void read_common(grad_args* a, linnet_memref5* q, linnet_memref4* k, linnet_memref4* v, linnet_memref5* mask,
                        linnet_memref5* max, linnet_memref5* sum, linnet_memref5* rows, float scale) {
  a->q = (const float*)q->aligned + q->offset;
  a->k = (const float*)k->aligned + k->offset;
  a->v = (const float*)v->aligned + v->offset;
  a->mask = (const uint8_t*)mask->aligned + mask->offset;
  a->max = (float*)max->aligned + max->offset;
  a->sum = (float*)sum->aligned + sum->offset;
  a->rows = (float*)rows->aligned + rows->offset;
  a->dout = NULL;
  a->dk = a->dv = NULL;
  a->l0 = q->sizes[0];
  a->l1 = q->sizes[1];
  a->g = q->sizes[2];
  a->nq = q->sizes[3];
  a->d = q->sizes[4];
  a->nk = k->sizes[2];
  a->e = v->sizes[3];
  a->dp = round16(a->d);
  a->ep = round16(a->e);
  a->scale = scale;
  for (int i = 0; i < 5; ++i) {
    a->qs[i] = q->strides[i];
    a->ms[i] = mask->strides[i];
    a->xs[i] = max->strides[i];
    a->ss[i] = sum->strides[i];
    a->rs[i] = rows->strides[i];
    a->os[i] = 0;
  }
  for (int i = 0; i < 4; ++i) {
    a->ks[i] = k->strides[i];
    a->vs[i] = v->strides[i];
    a->dks[i] = a->dvs[i] = 0;
  }
}

void KERNEL(_mlir_ciface_linnet_kernel_attention_rows_f32)(linnet_memref5* q, linnet_memref4* k, linnet_memref4* v,
                                                           linnet_memref5* mask, linnet_memref5* out,
                                                           linnet_memref5* max, linnet_memref5* sum, float scale) {
  grad_args a;
  read_common(&a, q, k, v, mask, max, sum, out, scale);
  if (a.l0 <= 0 || a.l1 <= 0 || a.g <= 0 || a.nq <= 0) return;
  if (a.nk <= 0)
    zero_outputs(&a);
  else
    run_forward(&a);
}

void KERNEL(_mlir_ciface_linnet_kernel_attention_grad_f32)(linnet_memref5* q, linnet_memref4* k, linnet_memref4* v,
                                                           linnet_memref5* mask, linnet_memref5* max,
                                                           linnet_memref5* sum, linnet_memref5* dout,
                                                           linnet_memref5* dq, linnet_memref4* dk,
                                                           linnet_memref4* dv, float scale) {
  grad_args a;
  read_common(&a, q, k, v, mask, max, sum, dq, scale);
  a.dout = (const float*)dout->aligned + dout->offset;
  a.dk = (float*)dk->aligned + dk->offset;
  a.dv = (float*)dv->aligned + dv->offset;
  for (int i = 0; i < 5; ++i) a.os[i] = dout->strides[i];
  for (int i = 0; i < 4; ++i) {
    a.dks[i] = dk->strides[i];
    a.dvs[i] = dv->strides[i];
  }
  if (a.l0 <= 0 || a.l1 <= 0) return;
  if (a.g <= 0 || a.nq <= 0 || a.nk <= 0)
    zero_outputs(&a);
  else
    run_grad(&a);
}
