/* Micro-benchmark of the CPU weight-product kernels
 * (compiler/targets/cpu/kernels): GFLOP/s of the product for M x (N, K) x
 * format on 1 and 2 threads, beside two bounds measured in the same run:
 *  - the FMA peak: a tight loop of independent AVX-512 (else AVX2) FMAs per
 *    thread;
 *  - for M = 1, the read bandwidth bound: the time to read the weight's
 *    bytes (the same buffer, the same split over threads).
 * `bench threshold` compares the decode and prefill paths for small M;
 * `bench attention` times attention_f32 (prefill and decode shapes).
 * The kernel source is included so that both paths can be called directly.
 * Build and run: bench/kernels/run.sh */
#include "../../compiler/targets/cpu/kernels/linnet_kernels.c"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* 64-byte aligned, as the compiled model's buffers are. */
static void* alloc64(size_t bytes) { return aligned_alloc(64, (bytes + 63) / 64 * 64); }

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The probes' vector type: AVX-512 where the kernels use it, else AVX2
 * (the build needs one of the two). */
#ifdef __AVX512F__
#define VLANES 16
#define ACCS 20 /* of 32 registers */
typedef __m512 vf;
typedef __m512i vi;
#define VF_SET1(v) _mm512_set1_ps(v)
#define VF_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define VF_ADD(a, b) _mm512_add_ps(a, b)
#define VF_SUM(a) _mm512_reduce_add_ps(a)
#define VI_ZERO() _mm512_setzero_si512()
#define VI_XOR(a, b) _mm512_xor_si512(a, b)
#define VI_LOAD(p) _mm512_loadu_si512(p)
#define VI_SET1_8(c) _mm512_set1_epi8(c)
#define VI_SUM(a) _mm512_reduce_add_epi32(a)
#else
#define VLANES 8
#define ACCS 12 /* of 16 registers */
typedef __m256 vf;
typedef __m256i vi;
#define VF_SET1(v) _mm256_set1_ps(v)
#define VF_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define VF_ADD(a, b) _mm256_add_ps(a, b)
#define VF_SUM(a) hsum8(a)
#define VI_ZERO() _mm256_setzero_si256()
#define VI_XOR(a, b) _mm256_xor_si256(a, b)
#define VI_LOAD(p) _mm256_loadu_si256((const __m256i*)(p))
#define VI_SET1_8(c) _mm256_set1_epi8(c)
#define VI_SUM(a) _mm256_extract_epi32(a, 0)
#endif
#define VBYTES (4 * VLANES)

/* GFLOP/s of independent FMAs on `threads` threads (ACCS accumulators,
 * enough to cover latency x throughput on current cores, none spilled). */
static double fma_peak(int threads) {
  const long iters = 10000000; /* ~25 ms */
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    float sink = 0;
    double t0 = now();
#pragma omp parallel num_threads(threads) reduction(+ : sink)
    {
      vf a[ACCS];
      for (int i = 0; i < ACCS; ++i) a[i] = VF_SET1((float)i * 1e-3f);
      const vf b = VF_SET1(0.999999f), c = VF_SET1(1e-7f);
      for (long it = 0; it < iters; ++it)
        for (int i = 0; i < ACCS; ++i) {
          a[i] = VF_FMA(a[i], b, c);
          __asm__ volatile("" : "+x"(a[i])); /* keep each FMA */
        }
      vf s = a[0];
      for (int i = 1; i < ACCS; ++i) s = VF_ADD(s, a[i]);
      sink += VF_SUM(s);
    }
    double t = now() - t0;
    double gflops = 2.0 * VLANES * ACCS * (double)iters * threads / t * 1e-9;
    if (gflops > best) best = gflops;
    if (sink == 12345.0f) printf(" ");
  }
  return best;
}

/* Seconds to read `bytes` of buf once, split over rows as the kernel splits
 * them (static schedule over `rows` rows of `bytes / rows`). Best of reps. */
static double read_time(const uint8_t* buf, int64_t rows, int64_t row_bytes, int threads) {
  double best = 1e30;
  for (int rep = 0; rep < 20; ++rep) {
    vi acc = VI_ZERO();
    double t0 = now();
#pragma omp parallel num_threads(threads)
    {
      vi a0 = VI_ZERO(), a1 = a0, a2 = a0, a3 = a0;
      int nt = omp_get_num_threads(), id = omp_get_thread_num();
      int64_t r0 = rows * id / nt, r1 = rows * (id + 1) / nt;
      const uint8_t* p = buf + r0 * row_bytes;
      int64_t n = (r1 - r0) * row_bytes, i = 0;
      for (; i + 4 * VBYTES <= n; i += 4 * VBYTES) {
        a0 = VI_XOR(a0, VI_LOAD(p + i));
        a1 = VI_XOR(a1, VI_LOAD(p + i + VBYTES));
        a2 = VI_XOR(a2, VI_LOAD(p + i + 2 * VBYTES));
        a3 = VI_XOR(a3, VI_LOAD(p + i + 3 * VBYTES));
      }
      for (; i < n; ++i) a0 = VI_XOR(a0, VI_SET1_8((char)p[i]));
      a0 = VI_XOR(VI_XOR(a0, a1), VI_XOR(a2, a3));
#pragma omp critical
      acc = VI_XOR(acc, a0);
    }
    double t = now() - t0;
    if (t < best) best = t;
    if (VI_SUM(acc) == 123456789) printf(" ");
  }
  return best;
}

static uint16_t f16_bits(float v) { /* rough f32 -> f16 for scales in range */
  return (uint16_t)_cvtss_sh(v, 0);
}

/* Random valid rows: random bytes, every f16 scale finite and small. */
static void random_weights(int64_t format, uint8_t* w, int64_t n, int64_t k) {
  const int64_t rb = linnet_storage_row_bytes(format, k), bb = linnet_storage_block_bytes[format];
  uint64_t s = 88172645463325252ull;
  for (int64_t i = 0; i < n * rb; ++i) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    w[i] = (uint8_t)s;
  }
  for (int64_t b = 0; b < n * rb / bb; ++b) {
    uint8_t* p = w + b * bb;
    uint16_t h = f16_bits(0.01f);
    switch (format) {
      case LINNET_STORAGE_F32: { float v = (float)(p[0] % 200) * 0.01f - 1.0f; memcpy(p, &v, 4); break; }
      case LINNET_STORAGE_F16: memcpy(p, &h, 2); break;
      case LINNET_STORAGE_BF16: { uint16_t v = 0x3c00; memcpy(p, &v, 2); break; }
      case LINNET_STORAGE_Q6_K: memcpy(p + 208, &h, 2); break;
      default: memcpy(p, &h, 2); memcpy(p + 2, &h, 2); break;
    }
  }
}

typedef void (*path_fn)(const product*);

/* Seconds per call of `fn` (best of calls within ~budget seconds, >= 3). */
static double time_calls(path_fn fn, const product* p, double budget) {
  fn(p); /* warm: caches, thread pool */
  double best = 1e30, start = now();
  for (int rep = 0; rep < 3 || (now() - start < budget && rep < 200); ++rep) {
    double t0 = now();
    fn(p);
    double t = now() - t0;
    if (t < best) best = t;
  }
  return best;
}

static const char* format_name(int64_t f) {
  static const char* names[] = {
#define STORAGE(Id, Name, BlockElements, BlockBytes) Name,
#include "../../common/storage_formats.def"
  };
  return names[f];
}

static void setup(product* p, int64_t format, int64_t m, int64_t n, int64_t k, float* x, uint8_t* w, float* out) {
  product q = {format, m, n, k, x, k, w, linnet_storage_row_bytes(format, k), out, n};
  *p = q;
}

static void bench_table(void) {
  const int64_t ms[] = {1, 16, 128, 512};
  const int64_t nks[][2] = {{576, 576}, {1536, 576}, {576, 1536}, {49152, 576}};
  const int64_t formats[] = {LINNET_STORAGE_F32, LINNET_STORAGE_Q8_0, LINNET_STORAGE_Q4_1, LINNET_STORAGE_Q5_0,
                             LINNET_STORAGE_Q4_K, LINNET_STORAGE_Q6_K};
  /* The machine may be shared: each row's bounds are measured right
   * before it, under the same load, and the best seen is printed too. */
  double best_peak[3] = {0, 0, 0};
  printf("decode path for M <= %d; peak: this row's FMA peak on thr threads\n\n", LINNET_KERNELS_DECODE_MAX_M);
  printf("%-5s %4s %6s %5s %3s | %9s %7s %7s | %8s %9s %7s\n", "fmt", "M", "N", "K", "thr", "GFLOP/s", "peak",
         "ofPeak", "w GB/s", "bw GB/s", "ofBW");
  const int64_t maxm = 512, maxn = 49152, maxk = 1536;
  float* x = (float*)alloc64(sizeof(float) * maxm * maxk);
  float* out = (float*)alloc64(sizeof(float) * maxm * maxn);
  uint8_t* w = (uint8_t*)alloc64((size_t)(maxn * 576 * 4 + 4096));
  for (int64_t i = 0; i < maxm * maxk; ++i) x[i] = (float)((i * 7919) % 1000) * 1e-3f - 0.5f;
  for (size_t fi = 0; fi < sizeof formats / sizeof formats[0]; ++fi)
    for (size_t s = 0; s < 4; ++s) {
      const int64_t n = nks[s][0], k = nks[s][1], f = formats[fi];
      random_weights(f, w, n, k);
      const int64_t rb = linnet_storage_row_bytes(f, k);
      const double wbytes = (double)(n * rb);
      for (size_t mi = 0; mi < 4; ++mi)
        for (int t = 1; t <= 2; ++t) {
          omp_set_num_threads(t);
          const double peak = fma_peak(t);
          if (peak > best_peak[t]) best_peak[t] = peak;
          product p;
          setup(&p, f, ms[mi], n, k, x, w, out);
          const double secs = time_calls(matmul, &p, 0.15);
          const double gflops = 2.0 * (double)(ms[mi] * n * k) / secs * 1e-9;
          printf("%-5s %4lld %6lld %5lld %3d | %9.1f %7.0f %6.1f%% |", format_name(f), (long long)ms[mi],
                 (long long)n, (long long)k, t, gflops, peak, 100 * gflops / peak);
          if (ms[mi] == 1) {
            const double rt = read_time(w, n, rb, t);
            printf(" %8.1f %9.1f %6.1f%%", wbytes / secs * 1e-9, wbytes / rt * 1e-9, 100 * rt / secs);
          }
          printf("\n");
          fflush(stdout);
        }
    }
  printf("\nbest FMA peak seen: %.1f GFLOP/s on 1 thread, %.1f GFLOP/s on 2 threads\n", best_peak[1],
         best_peak[2]);
  free(x);
  free(out);
  free(w);
}

/* Decode against prefill for small M: where the threshold should be. */
static void bench_threshold(void) {
  const int64_t ms[] = {1, 2, 4, 6, 8, 12, 14, 15, 16, 20, 24, 32};
  const int64_t formats[] = {LINNET_STORAGE_F32, LINNET_STORAGE_Q8_0, LINNET_STORAGE_Q4_K};
  const int64_t n = 1536, k = 576;
  float* x = (float*)alloc64(sizeof(float) * 32 * k);
  float* out = (float*)alloc64(sizeof(float) * 32 * n);
  uint8_t* w = (uint8_t*)alloc64((size_t)(n * k * 4));
  for (int64_t i = 0; i < 32 * k; ++i) x[i] = (float)(i % 100) * 0.01f;
  printf("N=%lld K=%lld: GFLOP/s of each path (2 threads, then 1; matmul takes decode for M <= %d)\n%-5s %4s %9s %9s %9s %9s\n", (long long)n,
         (long long)k, LINNET_KERNELS_DECODE_MAX_M, "fmt", "M", "decode2", "prefill2", "decode1", "prefill1");
  for (size_t fi = 0; fi < 3; ++fi) {
    random_weights(formats[fi], w, n, k);
    for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; ++mi) {
      product p;
      setup(&p, formats[fi], ms[mi], n, k, x, w, out);
      double g[4];
      for (int t = 2, c = 0; t >= 1; --t) {
        omp_set_num_threads(t);
        g[c++] = 2.0 * (double)(ms[mi] * n * k) / time_calls(matmul_decode, &p, 0.1) * 1e-9;
        g[c++] = 2.0 * (double)(ms[mi] * n * k) / time_calls(matmul_prefill, &p, 0.1) * 1e-9;
      }
      printf("%-5s %4lld %9.1f %9.1f %9.1f %9.1f\n", format_name(formats[fi]), (long long)ms[mi], g[0], g[1], g[2],
             g[3]);
    }
  }
  free(x);
  free(out);
  free(w);
}

/* ---- attention ---------------------------------------------------------- */

static double attn_secs(linnet_memref5* q, linnet_memref4* k, linnet_memref4* v, linnet_memref5* m,
                        linnet_memref5* o, double budget) {
  _mlir_ciface_linnet_kernel_attention_f32(q, k, v, m, o, 0.125f);
  double best = 1e30, start = now();
  for (int rep = 0; rep < 3 || (now() - start < budget && rep < 500); ++rep) {
    double t0 = now();
    _mlir_ciface_linnet_kernel_attention_f32(q, k, v, m, o, 0.125f);
    double t = now() - t0;
    if (t < best) best = t;
  }
  return best;
}

/* Seconds for `n` libm expf calls over arguments like softmax's (<= 0),
 * split over `threads`: the bound set by the exact exp alone. */
static double expf_secs(int64_t n, int threads) {
  static float in[1024], res[2][1024];
  for (int i = 0; i < 1024; ++i) in[i] = -(float)i * 0.01f;
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    double t0 = now();
#pragma omp parallel num_threads(threads)
    {
      float* o = res[omp_get_thread_num() & 1];
      const int64_t mine = n / omp_get_num_threads();
      for (int64_t i0 = 0; i0 < mine; i0 += 1024)
        for (int64_t i = 0; i < 1024 && i0 + i < mine; ++i) o[i] = expf(in[i]);
    }
    double t = now() - t0;
    if (t < best) best = t;
  }
  if (res[0][1] == 2.0f) printf(" ");
  return best;
}

/* G = 3 query heads per key head, L1 = 3 key heads, D = E = 64: causal
 * prefill (mask [Q, K] broadcast) and decode (mask [K], a prefix visible). */
static void bench_attention(void) {
  const int64_t G = 3, L1 = 3, D = 64, E = 64;
  struct { const char* name; int64_t nq, nk, visible; } cases[] = {
      {"prefill", 128, 128, 0}, {"prefill", 512, 512, 0}, {"decode", 1, 8192, 512}};
  printf("attention f32: L0=1 L1=%lld G=%lld D=E=%lld, GFLOP/s = (2D + 2E) x visible (row, key) pairs / time;\n"
         "expf: the same count of libm expf calls alone, as GFLOP/s of the same work (the exp bound)\n\n",
         (long long)L1, (long long)G, (long long)D);
  printf("%-8s %4s %5s %4s %3s | %8s %9s %7s %7s | %9s %6s\n", "case", "Q", "K", "vis", "thr", "us", "GFLOP/s",
         "peak", "ofPeak", "expf", "ofExp");
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
    const int64_t Q = cases[c].nq, K = cases[c].nk;
    float* qb = (float*)alloc64(sizeof(float) * (size_t)(L1 * G * Q * D));
    float* kb = (float*)alloc64(sizeof(float) * (size_t)(L1 * K * D));
    float* vb = (float*)alloc64(sizeof(float) * (size_t)(L1 * K * E));
    float* ob = (float*)alloc64(sizeof(float) * (size_t)(L1 * G * Q * E));
    uint8_t* mb = (uint8_t*)alloc64((size_t)(Q * K));
    for (int64_t i = 0; i < L1 * G * Q * D; ++i) qb[i] = (float)((i * 7919) % 1000) * 2e-3f - 1.0f;
    for (int64_t i = 0; i < L1 * K * D; ++i) kb[i] = (float)((i * 104729) % 1000) * 2e-3f - 1.0f;
    for (int64_t i = 0; i < L1 * K * E; ++i) vb[i] = (float)((i * 31337) % 1000) * 2e-3f - 1.0f;
    int64_t pairs = 0; /* visible (row, key) pairs over all rows */
    for (int64_t i = 0; i < Q; ++i)
      for (int64_t j = 0; j < K; ++j) {
        const int vis = cases[c].visible ? j < cases[c].visible : j <= i;
        mb[i * K + j] = (uint8_t)vis;
        pairs += vis * L1 * G;
      }
    linnet_memref5 q = {qb, qb, 0, {1, L1, G, Q, D}, {L1 * G * Q * D, G * Q * D, Q * D, D, 1}};
    linnet_memref4 k = {kb, kb, 0, {1, L1, K, D}, {L1 * K * D, K * D, D, 1}};
    linnet_memref4 v = {vb, vb, 0, {1, L1, K, E}, {L1 * K * E, K * E, E, 1}};
    linnet_memref5 m = {mb, mb, 0, {1, L1, G, Q, K}, {0, 0, 0, K, 1}};
    if (Q == 1) m.strides[3] = 0;
    linnet_memref5 o = {ob, ob, 0, {1, L1, G, Q, E}, {L1 * G * Q * E, G * Q * E, Q * E, E, 1}};
    const double flops = (double)pairs * (double)(2 * D + 2 * E);
    for (int t = 1; t <= 2; ++t) {
      omp_set_num_threads(t);
      const double peak = fma_peak(t);
      const double secs = attn_secs(&q, &k, &v, &m, &o, 0.3);
      const double esecs = expf_secs(pairs, t);
      printf("%-8s %4lld %5lld %4lld %3d | %8.1f %9.1f %7.0f %6.1f%% | %9.1f %5.1f%%\n", cases[c].name,
             (long long)Q, (long long)K, (long long)(cases[c].visible ? cases[c].visible : K), t, secs * 1e6,
             flops / secs * 1e-9, peak, 100 * flops / secs * 1e-9 / peak, flops / esecs * 1e-9,
             100 * esecs / secs);
      fflush(stdout);
    }
    free(qb);
    free(kb);
    free(vb);
    free(ob);
    free(mb);
  }
}

/* ---- a gradient's f32 products ------------------------------------------ */

/* out [M, N] = x . W with x [M, K] in rows, or (x_km) a transposed view of
 * x stored [K, M] (a gradient's dY^T X, attention's P^T dO), and W [N, K]
 * read as rows or (kn) [K, N] as it lies: the best of `reps` calls. */
static void train_row(const char* what, int x_km, int kn, int64_t m, int64_t n, int64_t k, int reps) {
  float* x = alloc64((size_t)(m * k) * 4);
  float* w = alloc64((size_t)(n * k) * 4);
  float* o = alloc64((size_t)(m * n) * 4);
  for (int64_t i = 0; i < m * k; ++i) x[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
  for (int64_t i = 0; i < n * k; ++i) w[i] = (float)((i * 40503u) % 1000) / 1000.0f - 0.5f;
  linnet_memref2 xm = {x, x, 0, {m, k}, {x_km ? 1 : k, x_km ? m : 1}}, om = {o, o, 0, {m, n}, {n, 1}};
  linnet_memref2 wm = kn ? (linnet_memref2){w, w, 0, {k, n}, {n, 1}} : (linnet_memref2){w, w, 0, {n, k}, {k, 1}};
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const double t = now();
    if (kn)
      _mlir_ciface_linnet_kernel_matmul_f32_kn(&xm, &wm, &om);
    else
      _mlir_ciface_linnet_kernel_matmul_f32(&xm, &wm, &om);
    const double dt = now() - t;
    if (dt < best) best = dt;
  }
  printf("%-28s %6lld %6lld %6lld %5s %3s | %9.1f %9.3f\n", what, (long long)m, (long long)n, (long long)k,
         x_km ? "x_km" : "x", kn ? "kn" : "nk", 2.0 * m * n * k / best * 1e-9, best * 1e3);
  free(x);
  free(w);
  free(o);
}

/* SmolLM2's products in a 512-token training step (docs/train.md). */
static void bench_train(void) {
  printf("%-28s %6s %6s %6s %5s %3s | %9s %9s\n", "product", "M", "N", "K", "x", "W", "GFLOP/s", "ms");
  train_row("forward q, o", 0, 0, 512, 576, 576, 20);
  train_row("forward gate, up", 0, 0, 512, 1536, 576, 20);
  train_row("dX gate, up (dY W)", 0, 1, 512, 576, 1536, 20);
  train_row("dW gate (dY^T X)", 1, 1, 1536, 576, 512, 10);
  train_row("dW gate, x as rows", 0, 1, 1536, 576, 512, 10);
  train_row("attention q k^T", 0, 0, 1536, 512, 64, 20);
  train_row("attention P V", 0, 1, 1536, 64, 512, 20);
  train_row("attention dV (P^T dO)", 1, 1, 512, 64, 1536, 20);
  train_row("attention dV, x as rows", 0, 1, 512, 64, 1536, 20);
  train_row("head logits (chunk)", 0, 0, 128, 49152, 576, 3);
  train_row("head dx (chunk)", 0, 1, 128, 576, 49152, 3);
  /* LoRA r = 8 on gate/up: dB = dY^T (X A^T), dA = (dY B)^T X. */
  train_row("LoRA dB gate (dY^T XA)", 1, 1, 1536, 8, 512, 50);
  train_row("LoRA dA gate ((dY B)^T X)", 1, 1, 8, 576, 512, 50);
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "threshold") == 0)
    bench_threshold();
  else if (argc > 1 && strcmp(argv[1], "train") == 0)
    bench_train();
  else if (argc > 1 && strcmp(argv[1], "attention") == 0)
    bench_attention();
  else
    bench_table();
  return 0;
}
