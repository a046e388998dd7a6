/* Micro-benchmark of the `fast` numerics' weight product
 * (_mlir_ciface_linnet_kernel_matmul_packed_fast, linnet_fast_kernels.c)
 * against the exact one (_mlir_ciface_linnet_kernel_matmul_packed), both
 * called through their descriptors as model.so calls them:
 *   bench_fast          M = 1, (N, K) x format x threads (1, 2): GFLOP/s of
 *                       each and the % of the read bandwidth bound (the
 *                       weight's bytes read by a tight 32-byte-vector loop, the
 *                       same buffer split over the threads as the kernels
 *                       split it, measured beside each row);
 *   bench_fast m        GFLOP/s for M = 1 .. 32 (where the fast kernel should
 *                       hand over to the exact one: build with
 *                       CFLAGS=-DLINNET_FAST_MAX_M=1000 to time it past its
 *                       threshold).
 * Build and run: bash bench/kernels/run.sh fast [m] */
#include "../../compiler/targets/cpu/kernels/linnet_kernels.h"

#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void _mlir_ciface_linnet_kernel_matmul_packed_fast(linnet_memref2* x, linnet_memref2* w, linnet_memref2* out,
                                                   int64_t format, int64_t k);

typedef void (*kernel_fn)(linnet_memref2*, linnet_memref2*, linnet_memref2*, int64_t, int64_t);

static void* alloc64(size_t bytes) { return aligned_alloc(64, (bytes + 63) / 64 * 64); }

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Seconds to read rows * row_bytes of buf once, rows split statically over
 * the threads. Best of 20. 32-byte vectors (GCC vector extensions), so that
 * the probe builds for AVX2 as for AVX-512. */
typedef long long v32 __attribute__((vector_size(32)));
static inline v32 load32(const uint8_t* p) {
  v32 v;
  memcpy(&v, p, 32);
  return v;
}

static double read_time(const uint8_t* buf, int64_t rows, int64_t row_bytes, int threads) {
  double best = 1e30;
  for (int rep = 0; rep < 20; ++rep) {
    v32 acc = {0, 0, 0, 0};
    double t0 = now();
#pragma omp parallel num_threads(threads)
    {
      v32 a0 = {0, 0, 0, 0}, a1 = a0, a2 = a0, a3 = a0;
      int nt = omp_get_num_threads(), id = omp_get_thread_num();
      int64_t r0 = rows * id / nt, r1 = rows * (id + 1) / nt;
      const uint8_t* p = buf + r0 * row_bytes;
      int64_t n = (r1 - r0) * row_bytes, i = 0;
      for (; i + 128 <= n; i += 128) {
        a0 ^= load32(p + i);
        a1 ^= load32(p + i + 32);
        a2 ^= load32(p + i + 64);
        a3 ^= load32(p + i + 96);
      }
      for (; i < n; ++i) a0[0] ^= p[i];
      a0 ^= a1 ^ a2 ^ a3;
#pragma omp critical
      acc ^= a0;
    }
    double t = now() - t0;
    if (t < best) best = t;
    if (acc[0] + acc[1] + acc[2] + acc[3] == 123456789) printf(" ");
  }
  return best;
}

/* Random valid rows: random bytes, every f16 scale 0.01. */
static void random_weights(int64_t format, uint8_t* w, int64_t n, int64_t k) {
  const int64_t rb = linnet_storage_row_bytes(format, k), bb = linnet_storage_block_bytes[format];
  uint64_t s = 88172645463325252ull;
  for (int64_t i = 0; i < n * rb; ++i) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    w[i] = (uint8_t)s;
  }
  const uint16_t h = (uint16_t)_cvtss_sh(0.01f, 0);
  for (int64_t b = 0; b < n * rb / bb; ++b) {
    uint8_t* p = w + b * bb;
    if (format == LINNET_STORAGE_Q6_K)
      memcpy(p + 208, &h, 2);
    else {
      memcpy(p, &h, 2);
      memcpy(p + 2, &h, 2);
    }
  }
}

typedef struct {
  linnet_memref2 x, w, out;
  int64_t format, k;
} call;

static call make_call(int64_t format, int64_t m, int64_t n, int64_t k, float* x, uint8_t* w, float* out) {
  const int64_t rb = linnet_storage_row_bytes(format, k);
  call c = {{x, x, 0, {m, k}, {k, 1}}, {w, w, 0, {n, rb}, {rb, 1}}, {out, out, 0, {m, n}, {n, 1}}, format, k};
  return c;
}

/* Seconds per call (best of calls within ~budget seconds, at least 3). */
static double time_calls(kernel_fn fn, call* c, double budget) {
  fn(&c->x, &c->w, &c->out, c->format, c->k); /* warm: caches, thread pool */
  double best = 1e30, start = now();
  for (int rep = 0; rep < 3 || (now() - start < budget && rep < 400); ++rep) {
    double t0 = now();
    fn(&c->x, &c->w, &c->out, c->format, c->k);
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

static const int64_t kFormats[] = {LINNET_STORAGE_Q8_0, LINNET_STORAGE_Q4_0, LINNET_STORAGE_Q4_1, LINNET_STORAGE_Q5_0,
                                   LINNET_STORAGE_Q5_1, LINNET_STORAGE_Q4_K, LINNET_STORAGE_Q5_K, LINNET_STORAGE_Q6_K};
#define NFORMATS (sizeof kFormats / sizeof kFormats[0])

static void bench_table(void) {
  const int64_t nks[][2] = {{576, 576}, {1536, 576}, {576, 1536}, {49152, 576}};
  const int64_t maxn = 49152, maxk = 1536;
  float* x = (float*)alloc64(sizeof(float) * maxk);
  float* out = (float*)alloc64(sizeof(float) * maxn);
  uint8_t* w = (uint8_t*)alloc64((size_t)(maxn * 640 + 4096)); /* q8_0: 612 bytes per row of 576 */
  for (int64_t i = 0; i < maxk; ++i) x[i] = (float)((i * 7919) % 1000) * 1e-3f - 0.5f;
  printf("M = 1 (K-quants: K = 576 runs as 512, a multiple of 256); bound: the weight's bytes read by a tight loop on thr threads, beside each row\n\n");
  printf("%-5s %6s %5s %3s %9s | %9s %7s | %9s %7s | %7s\n", "fmt", "N", "K", "thr", "bw GB/s", "exact GF/s",
         "ofBW", "fast GF/s", "ofBW", "fast/ex");
  for (size_t fi = 0; fi < NFORMATS; ++fi)
    for (size_t s = 0; s < 4; ++s) {
      const int64_t f = kFormats[fi], be = linnet_storage_block_elements[f];
      const int64_t n = nks[s][0], k = nks[s][1] / be * be; /* K-quants: 576 -> 512 */
      random_weights(f, w, n, k);
      const int64_t rb = linnet_storage_row_bytes(f, k);
      const double wbytes = (double)(n * rb), flop = 2.0 * (double)(n * k);
      for (int t = 1; t <= 2; ++t) {
        omp_set_num_threads(t);
        call c = make_call(f, 1, n, k, x, w, out);
        const double rt = read_time(w, n, rb, t);
        const double te = time_calls(_mlir_ciface_linnet_kernel_matmul_packed, &c, 0.1);
        const double tf = time_calls(_mlir_ciface_linnet_kernel_matmul_packed_fast, &c, 0.1);
        printf("%-5s %6lld %5lld %3d %9.1f | %10.1f %6.1f%% | %9.1f %6.1f%% | %6.2fx\n", format_name(f),
               (long long)n, (long long)k, t, wbytes / rt * 1e-9, flop / te * 1e-9, 100 * rt / te,
               flop / tf * 1e-9, 100 * rt / tf, te / tf);
        fflush(stdout);
      }
    }
  free(x);
  free(out);
  free(w);
}

static void bench_m(void) {
  const int64_t ms[] = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32};
  const int64_t nks[][2] = {{1536, 576}, {576, 1536}};
  const int64_t maxm = 32, n_max = 1536, k_max = 1536;
  float* x = (float*)alloc64(sizeof(float) * maxm * k_max);
  float* out = (float*)alloc64(sizeof(float) * maxm * n_max);
  uint8_t* w = (uint8_t*)alloc64((size_t)(n_max * k_max + 4096));
  for (int64_t i = 0; i < maxm * k_max; ++i) x[i] = (float)((i * 7919) % 1000) * 1e-3f - 0.5f;
  printf("GFLOP/s, exact vs fast, 2 threads then 1\n%-5s %5s %5s %4s | %8s %8s | %8s %8s\n", "fmt", "N", "K", "M",
         "exact2", "fast2", "exact1", "fast1");
  for (size_t fi = 0; fi < NFORMATS; ++fi)
    for (size_t s = 0; s < 2; ++s) {
      const int64_t f = kFormats[fi], be = linnet_storage_block_elements[f];
      const int64_t n = nks[s][0], k = nks[s][1] / be * be;
      random_weights(f, w, n, k);
      for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; ++mi) {
        double g[4];
        for (int t = 2, i = 0; t >= 1; --t) {
          omp_set_num_threads(t);
          call c = make_call(f, ms[mi], n, k, x, w, out);
          const double flop = 2.0 * (double)(ms[mi] * n * k);
          g[i++] = flop / time_calls(_mlir_ciface_linnet_kernel_matmul_packed, &c, 0.05) * 1e-9;
          g[i++] = flop / time_calls(_mlir_ciface_linnet_kernel_matmul_packed_fast, &c, 0.05) * 1e-9;
        }
        printf("%-5s %5lld %5lld %4lld | %8.1f %8.1f | %8.1f %8.1f\n", format_name(f), (long long)n, (long long)k,
               (long long)ms[mi], g[0], g[1], g[2], g[3]);
        fflush(stdout);
      }
    }
  free(x);
  free(out);
  free(w);
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "m") == 0)
    bench_m();
  else
    bench_table();
  return 0;
}
