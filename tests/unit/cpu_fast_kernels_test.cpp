// The `fast` numerics' weight product (compiler/targets/cpu/kernels/
// linnet_fast_kernels.c), on the build's kernels (AVX512-VNNI where the build
// machine has it) and on the portable C copy:
//  - the documented error bound against the exact product, element by
//    element, for every format, several (M, N, K), strided views: with x^ the
//    int8-dequantized x (as ggml's quantize_row_q8_0: e_b = max_b |x| / 127,
//    d_b = e_b rounded to f16), w the exactly dequantized
//    weight and a_j its magnitude before cancellation (|w_j| for Q8_0, Q4_0,
//    Q5_0, Q6_K, |d q_j| + |m| for Q4_1, Q5_1, |d sc q_j| + |dmin mn| for
//    Q4_K, Q5_K),
//      |fast - exact| <= sum_b ((e_b / 2)(1 + 2^-16) + 127 |d_b - e_b|) sum_{j in b} |w_j|
//                        + 4 K FLT_EPSILON sum_j (|x_j| + d_b) a_j;
//  - that the 8-bit activations really are used, for every M (M <= 8: the
//    integer path; M > 8: the exact kernel on the dequantized activations):
//    fast against sum_j x^_j w_j (x^ recomputed here), within the rounding
//    term alone;
//  - the same bits on 1 and 2 OpenMP threads.
#include <catch2/catch.hpp>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <span>
#include <vector>

#include "compiler/targets/cpu/kernels/linnet_kernels.h"
#include "base/half.h"
#include "gguf/types.h"
#include "storage_blocks.h"

#ifdef LINNET_KERNELS_TEST_OPENMP
#include <omp.h>
#endif

extern "C" {
void _mlir_ciface_linnet_kernel_matmul_packed_fast(linnet_memref2*, linnet_memref2*, linnet_memref2*, int64_t,
                                                   int64_t);
#ifdef LINNET_KERNELS_TEST_PORTABLE
void linnet_portable_mlir_ciface_linnet_kernel_matmul_packed_fast(linnet_memref2*, linnet_memref2*,
                                                                  linnet_memref2*, int64_t, int64_t);
#endif
}

namespace {

using linnet::gguf::GgmlType;
using namespace linnet::storage_test;
using Fn = void (*)(linnet_memref2*, linnet_memref2*, linnet_memref2*, int64_t, int64_t);

struct Kernel {
  const char* name;
  Fn fast;
};

std::vector<Kernel> fastKernels() {
  std::vector<Kernel> ks = {{"native", _mlir_ciface_linnet_kernel_matmul_packed_fast}};
#ifdef LINNET_KERNELS_TEST_PORTABLE
  ks.push_back({"portable", linnet_portable_mlir_ciface_linnet_kernel_matmul_packed_fast});
#endif
  return ks;
}

// The exactly dequantized row w and each value's magnitude before
// cancellation a: the offset term (m of Q4_1, Q5_1, -dmin mn of the K-quants) is
// the dequantized value of the block with its quants zeroed.
struct DeqRow {
  std::vector<float> w;
  std::vector<double> a;
};

DeqRow dequantWithMagnitudes(const Format& f, const uint8_t* row, int64_t k) {
  DeqRow r{dequantRow(f, row, k), {}};
  r.a.resize(static_cast<size_t>(k));
  std::vector<uint8_t> zeroed(row, row + rowBytes(f, k));
  int64_t from = 0, to = 0;  // the quant bytes in each block
  if (f.id == LINNET_STORAGE_Q4_1) from = 4, to = 20;
  if (f.id == LINNET_STORAGE_Q5_1) from = 4, to = 24;  // qh and qs
  if (f.id == LINNET_STORAGE_Q4_K) from = 16, to = 144;
  if (f.id == LINNET_STORAGE_Q5_K) from = 16, to = 176;
  for (int64_t b = 0; to > 0 && b < k / blockElements(f); ++b)
    std::memset(zeroed.data() + b * blockBytes(f) + from, 0, static_cast<size_t>(to - from));
  const std::vector<float> off = to > 0 ? dequantRow(f, zeroed.data(), k) : std::vector<float>(k, 0.0f);
  for (int64_t j = 0; j < k; ++j) {
    const double o = off[j], w = r.w[j];
    r.a[j] = std::fabs(w - o) + std::fabs(o);
  }
  return r;
}

// Random x whose blocks of 32 have magnitudes 2^-8 .. 2^8 (some all zero),
// so that each block's scale matters.
void fillBlockScaled(Matrix& m, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f), e(-8.0f, 8.0f);
  for (int64_t i = 0; i < m.rows; ++i)
    for (int64_t j0 = 0; j0 < m.cols; j0 += 32) {
      const float s = rng() % 11 == 0 ? 0.0f : std::exp2(e(rng));
      for (int64_t j = j0; j < std::min(m.cols, j0 + 32); ++j) m.at(i, j) = s * u(rng);
    }
}

// The block scale as ggml stores it: max|x| / 127 rounded to binary16
// (runtime/base/half.h's conversion, not the kernel's own).
float f16Scale(float amax) {
  return amax < 0x1p-64f ? 0.0f : linnet::half::f16ToF32(linnet::half::f32ToF16(amax / 127.0f));
}

// The kernel's int8 activations, recomputed as ggml's quantize_row_q8_0:
// x^ = d q, q = rne(x * (127 / max|x|)), d = f16Scale(max|x|).
std::vector<double> quantized(Matrix& x, int64_t i) {
  std::vector<double> out(static_cast<size_t>(x.cols));
  for (int64_t b = 0; b < x.cols; b += 32) {
    float amax = 0;
    for (int64_t j = b; j < b + 32; ++j) amax = std::max(amax, std::fabs(x.at(i, j)));
    const float d = f16Scale(amax);
    for (int64_t j = b; j < b + 32; ++j) {
      const float q = d == 0 ? 0.0f : std::clamp(std::rint(x.at(i, j) * (127.0f / amax)), -127.0f, 127.0f);
      out[j] = static_cast<double>(d) * q;
    }
  }
  return out;
}

// out against the documented bound, and (where the integer path runs)
// against sum_j x^_j w_j within the rounding term.
void checkFast(const Format& f, Matrix& x, const Weights& w, Matrix& out) {
  const bool integer = f.integer;  // prefill (M > 8) too: the same int8 activations
  std::vector<DeqRow> deq;
  for (int64_t n = 0; n < w.n; ++n) deq.push_back(dequantWithMagnitudes(f, w.row(n), w.k));
  int64_t bad = 0, badModel = 0;
  double worst = 0;  // largest |fast - exact| / bound
  for (int64_t m = 0; m < x.rows; ++m) {
    const std::vector<double> xq = quantized(x, m);
    for (int64_t n = 0; n < w.n; ++n) {
      double exact = 0, model = 0, eq = 0, er = 0;
      for (int64_t b = 0; b < w.k; b += 32) {
        double amax = 0;
        for (int64_t j = b; j < std::min(w.k, b + 32); ++j) amax = std::max(amax, std::fabs((double)x.at(m, j)));
        const double d = amax / 127.0;  // e_b: the scale before its f16 rounding
        const double scaleError = std::fabs((double)f16Scale(static_cast<float>(amax)) - d);
        double sw = 0;
        for (int64_t j = b; j < std::min(w.k, b + 32); ++j) {
          const double xj = x.at(m, j), wj = deq[n].w[j];
          exact += xj * wj;
          model += xq[j] * wj;
          sw += std::fabs(wj);
          er += (std::fabs(xj) + d) * deq[n].a[j];
        }
        eq += (d / 2 * (1 + 0x1p-16) + 127 * scaleError) * sw;
      }
      er *= 4.0 * static_cast<double>(w.k) * FLT_EPSILON;
      const double got = out.at(m, n), bound = eq + er + 1e-30;
      worst = std::max(worst, std::fabs(got - exact) / bound);
      if (!(std::fabs(got - exact) <= bound) && bad++ < 5)
        UNSCOPED_INFO("out[" << m << ", " << n << "] = " << got << ", exact " << exact << " +- " << bound);
      if (integer && !(std::fabs(got - model) <= er + 1e-30) && badModel++ < 5)
        UNSCOPED_INFO("out[" << m << ", " << n << "] = " << got << ", int8 model " << model << " +- " << er);
    }
  }
  CHECK(bad == 0);
  CHECK(badModel == 0);
  CHECK(worst <= 1.0);
}

std::vector<int64_t> fastTestKs(const Format& f) {
  const int64_t be = blockElements(f);
  if (be == 1) return {32, 96, 576};
  if (be == 32) return {32, 96, 288, 576, 1088};
  return {256, 768, 1536};
}

}  // namespace

TEST_CASE("matmul_packed_fast within its documented error bound", "[cpu_kernels][fast]") {
  std::mt19937 rng(11);
  const int64_t shapes[][2] = {{1, 1}, {1, 37}, {2, 5}, {3, 9}, {4, 33}, {5, 17}, {8, 19}, {9, 7}, {20, 33}};
  for (const Kernel& ks : fastKernels())
    for (const Format& f : kFormats)
      for (int64_t k : fastTestKs(f))
        for (const auto& mn : shapes) {
          const int64_t m = mn[0], n = mn[1];
          INFO(ks.name << " " << f.name << " M=" << m << " N=" << n << " K=" << k);
          Weights w = randomWeights(f, n, k, rng, 7, 13);
          Matrix x = makeMatrix(m, k, 5, 3);
          fillBlockScaled(x, rng);
          Matrix out = makeMatrix(m, n, 2, 6);
          linnet_memref2 xm = x.memref(), wm = w.memref(), om = out.memref();
          ks.fast(&xm, &wm, &om, f.id, k);
          checkFast(f, x, w, out);
        }
}

TEST_CASE("matmul_packed_fast through views with inner strides", "[cpu_kernels][fast]") {
  std::mt19937 rng(12);
  for (const Kernel& ks : fastKernels())
    for (const Format& f : kFormats)
      for (int64_t m : {1, 3, 8, 12}) {
        INFO(ks.name << " " << f.name << " M=" << m);
        const int64_t n = 19, k = fastTestKs(f)[1], rb = rowBytes(f, k);
        Weights w = randomWeights(f, n, k, rng);
        std::vector<uint8_t> wide(static_cast<size_t>(2 * n * rb + 3), 0x7F);
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = 0; j < rb; ++j) wide[static_cast<size_t>(3 + i * 2 * rb + 2 * j)] = w.row(i)[j];
        linnet_memref2 wm = {wide.data(), wide.data(), 3, {n, rb}, {2 * rb, 2}};
        Matrix x = makeMatrix(m, k, 1, 1, 2);
        fillBlockScaled(x, rng);
        Matrix out = makeMatrix(m, n, 3, 1, 2);
        linnet_memref2 xm = x.memref(), om = out.memref();
        ks.fast(&xm, &wm, &om, f.id, k);
        checkFast(f, x, w, out);
        CHECK(std::isnan(out.data[static_cast<size_t>(out.offset + 1)]));  // junk between outputs untouched
      }
}

TEST_CASE("matmul_packed_fast with a large K (scratch on the heap)", "[cpu_kernels][fast]") {
  std::mt19937 rng(13);
  for (const Kernel& ks : fastKernels())
    for (const Format& f : kFormats) {
      if (!f.integer) continue;
      for (int64_t m : {1, 6}) {
        const int64_t n = 3, k = 8192;
        INFO(ks.name << " " << f.name << " M=" << m << " K=" << k);
        Weights w = randomWeights(f, n, k, rng, 1, 1);
        Matrix x = makeMatrix(m, k);
        fillBlockScaled(x, rng);
        Matrix out = makeMatrix(m, n);
        linnet_memref2 xm = x.memref(), wm = w.memref(), om = out.memref();
        ks.fast(&xm, &wm, &om, f.id, k);
        checkFast(f, x, w, out);
      }
    }
}

TEST_CASE("matmul_packed_fast edge cases", "[cpu_kernels][fast]") {
  for (const Kernel& ks : fastKernels()) {
    INFO(ks.name);
    // K = 0: zeros; M = 0, N = 0: nothing.
    Matrix x = makeMatrix(3, 0), out = makeMatrix(3, 4);
    std::vector<uint8_t> wb(1);
    linnet_memref2 wm = {wb.data(), wb.data(), 0, {4, 0}, {0, 1}};
    linnet_memref2 xm = x.memref(), om = out.memref();
    ks.fast(&xm, &wm, &om, LINNET_STORAGE_Q8_0, 0);
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 4; ++j) CHECK(out.at(i, j) == 0.0f);
    Matrix none = makeMatrix(3, 0);
    linnet_memref2 nm = none.memref();
    ks.fast(&xm, &wm, &nm, LINNET_STORAGE_Q8_0, 0);
    CHECK(std::isnan(none.data[0]));
    // An infinity in x: the exact kernel's result (an infinity or a NaN).
    std::mt19937 rng(14);
    const Format& f = kFormats[3];
    Weights w = randomWeights(f, 4, 64, rng);
    Matrix xi = makeMatrix(1, 64);
    fillBlockScaled(xi, rng);
    xi.at(0, 40) = INFINITY;
    Matrix oi = makeMatrix(1, 4);
    linnet_memref2 xim = xi.memref(), wim = w.memref(), oim = oi.memref();
    ks.fast(&xim, &wim, &oim, f.id, 64);
    for (int64_t j = 0; j < 4; ++j) CHECK(!std::isfinite(oi.at(0, j)));
  }
}

#ifdef LINNET_KERNELS_TEST_OPENMP
TEST_CASE("matmul_packed_fast: the same bits on 1 and 2 threads", "[cpu_kernels][fast]") {
  std::mt19937 rng(15);
  const int saved = omp_get_max_threads();
  for (const Kernel& ks : fastKernels())
    for (const Format& f : kFormats)
      for (int64_t m : {1, 3, 8}) {
        INFO(ks.name << " " << f.name << " M=" << m);
        const int64_t n = 300, k = 512;
        Weights w = randomWeights(f, n, k, rng);
        Matrix x = makeMatrix(m, k);
        fillBlockScaled(x, rng);
        Matrix out1 = makeMatrix(m, n), out2 = makeMatrix(m, n);
        linnet_memref2 xm = x.memref(), wm = w.memref(), om1 = out1.memref(), om2 = out2.memref();
        omp_set_num_threads(1);
        ks.fast(&xm, &wm, &om1, f.id, k);
        omp_set_num_threads(2);
        ks.fast(&xm, &wm, &om2, f.id, k);
        CHECK(std::memcmp(out1.data.data(), out2.data.data(), out1.data.size() * 4) == 0);
        checkFast(f, x, w, out2);
      }
  omp_set_num_threads(saved);
}
#endif
