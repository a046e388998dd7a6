// The CPU weight-product kernels (compiler/targets/cpu/kernels): unpack and
// gather_rows against linnet::gguf::dequantize bit for bit, the products
// against a double-precision x . dequant(W)^T, strided views, and the same
// bits on 1 and 2 OpenMP threads. Each case runs on the build's kernels
// (AVX-512 where the build machine has it) and, where CMake builds it, on a
// second copy compiled without AVX-512 (the portable C path).
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <functional>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "compiler/targets/cpu/kernels/linnet_kernels.h"
#include "gguf/types.h"
#include "storage_blocks.h"

#ifdef LINNET_KERNELS_TEST_OPENMP
#include <omp.h>
#endif

#ifdef LINNET_KERNELS_TEST_PORTABLE
extern "C" {
void linnet_portable_mlir_ciface_linnet_kernel_matmul_packed(linnet_memref2*, linnet_memref2*, linnet_memref2*,
                                                             int64_t, int64_t);
void linnet_portable_mlir_ciface_linnet_kernel_matmul_f32(linnet_memref2*, linnet_memref2*, linnet_memref2*);
void linnet_portable_mlir_ciface_linnet_kernel_matmul_f32_kn(linnet_memref2*, linnet_memref2*, linnet_memref2*);
void linnet_portable_mlir_ciface_linnet_kernel_gather_rows(linnet_memref2*, linnet_memref1*, linnet_memref2*,
                                                           int64_t, int64_t);
void linnet_portable_mlir_ciface_linnet_kernel_unpack(linnet_memref2*, linnet_memref2*, int64_t, int64_t);
void linnet_portable_mlir_ciface_linnet_kernel_attention_f32(linnet_memref5*, linnet_memref4*, linnet_memref4*,
                                                             linnet_memref5*, linnet_memref5*, float);
}
#endif

namespace {

using linnet::gguf::GgmlType;
using namespace linnet::storage_test;

struct Kernels {
  const char* name;
  void (*matmulPacked)(linnet_memref2*, linnet_memref2*, linnet_memref2*, int64_t, int64_t);
  void (*matmulF32)(linnet_memref2*, linnet_memref2*, linnet_memref2*);
  void (*matmulF32Kn)(linnet_memref2*, linnet_memref2*, linnet_memref2*);
  void (*gatherRows)(linnet_memref2*, linnet_memref1*, linnet_memref2*, int64_t, int64_t);
  void (*unpack)(linnet_memref2*, linnet_memref2*, int64_t, int64_t);
  void (*attention)(linnet_memref5*, linnet_memref4*, linnet_memref4*, linnet_memref5*, linnet_memref5*, float);
};

std::vector<Kernels> allKernels() {
  std::vector<Kernels> ks = {{"native", _mlir_ciface_linnet_kernel_matmul_packed,
                              _mlir_ciface_linnet_kernel_matmul_f32, _mlir_ciface_linnet_kernel_matmul_f32_kn,
                              _mlir_ciface_linnet_kernel_gather_rows,
                              _mlir_ciface_linnet_kernel_unpack, _mlir_ciface_linnet_kernel_attention_f32}};
#ifdef LINNET_KERNELS_TEST_PORTABLE
  ks.push_back({"portable", linnet_portable_mlir_ciface_linnet_kernel_matmul_packed,
                linnet_portable_mlir_ciface_linnet_kernel_matmul_f32,
                linnet_portable_mlir_ciface_linnet_kernel_matmul_f32_kn,
                linnet_portable_mlir_ciface_linnet_kernel_gather_rows, linnet_portable_mlir_ciface_linnet_kernel_unpack,
                linnet_portable_mlir_ciface_linnet_kernel_attention_f32});
#endif
  return ks;
}

// The reference: linnet::gguf::dequantize of row i.
std::vector<float> referenceRow(const Format& f, const Weights& w, int64_t i) { return dequantRow(f, w.row(i), w.k); }

void fillRandom(Matrix& m, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int64_t i = 0; i < m.rows; ++i)
    for (int64_t j = 0; j < m.cols; ++j) m.at(i, j) = u(rng);
}

bool sameBits(float a, float b) { return std::memcmp(&a, &b, 4) == 0; }

// out against sum_k x[m,k] * deq(W)[n,k] in double, within 4 K eps sum |x w|.
void checkProduct(const Format& f, Matrix& x, const Weights& w, Matrix& out) {
  std::vector<std::vector<float>> deq;
  for (int64_t n = 0; n < w.n; ++n) deq.push_back(referenceRow(f, w, n));
  int64_t bad = 0;
  for (int64_t m = 0; m < x.rows; ++m)
    for (int64_t n = 0; n < w.n; ++n) {
      double sum = 0, mag = 0;
      for (int64_t k = 0; k < w.k; ++k) {
        const double p = static_cast<double>(x.at(m, k)) * deq[n][k];
        sum += p;
        mag += std::fabs(p);
      }
      const double got = out.at(m, n);
      const double tol = 4.0 * static_cast<double>(w.k) * FLT_EPSILON * mag + 1e-30;
      if (!(std::fabs(got - sum) <= tol) && bad++ < 5)
        UNSCOPED_INFO("out[" << m << ", " << n << "] = " << got << ", expected " << sum << " +- " << tol);
    }
  CHECK(bad == 0);
}

std::vector<int64_t> testKs(const Format& f) {
  const int64_t be = blockElements(f);
  // Past 1024 the prefill path takes K in slices (the last one shorter).
  if (be == 1) return {1, 17, 300, 600, 1100};
  if (be == 32) return {32, 288, 576, 1088};
  return {256, 768, 1280};
}

// A random f32 W as a matrix, [N, K] or (kn) [K, N], and the same values
// as f32 weight rows for checkProduct.
struct F32Weights {
  Matrix mat;
  Weights rows;
};
F32Weights randomF32Weights(int64_t n, int64_t k, bool kn, std::mt19937& rng) {
  F32Weights w{kn ? makeMatrix(k, n) : makeMatrix(n, k), randomWeights(kFormats[0], n, k, rng)};
  fillRandom(w.mat, rng);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < k; ++j)
      std::memcpy(const_cast<uint8_t*>(w.rows.row(i)) + 4 * j, kn ? &w.mat.at(j, i) : &w.mat.at(i, j), 4);
  return w;
}

// Every element of `got`'s first rows has the bits of `want`'s.
void requireSameBits(Matrix& got, Matrix& want) {
  for (int64_t i = 0; i < want.rows; ++i)
    for (int64_t j = 0; j < want.cols; ++j) REQUIRE(sameBits(got.at(i, j), want.at(i, j)));
}

}  // namespace

TEST_CASE("unpack equals gguf::dequantize bit for bit", "[cpu_kernels]") {
  std::mt19937 rng(1);
  for (const Kernels& ks : allKernels())
    for (const Format& f : kFormats)
      for (int64_t k : testKs(f)) {
        INFO(ks.name << " " << f.name << " K=" << k);
        Weights w = randomWeights(f, 5, k, rng, /*offset=*/7, /*pad=*/11);
        Matrix out = makeMatrix(5, k, /*offset=*/3, /*rowPad=*/5);
        linnet_memref2 wm = w.memref(), om = out.memref();
        ks.unpack(&wm, &om, f.id, k);
        int64_t bad = 0;
        for (int64_t n = 0; n < w.n; ++n) {
          std::vector<float> ref = referenceRow(f, w, n);
          for (int64_t j = 0; j < k; ++j) bad += !sameBits(out.at(n, j), ref[j]);
        }
        CHECK(bad == 0);
      }
}

TEST_CASE("unpack keeps every f16 and bf16 bit pattern, NaNs included", "[cpu_kernels]") {
  for (const Kernels& ks : allKernels())
    for (const Format& f : {kFormats[1], kFormats[2]}) {
      INFO(ks.name << " " << f.name);
      // All 65536 patterns as one [256, 256] weight.
      Weights w{std::vector<uint8_t>(2 * 65536), 256, 256, 0, 512};
      for (uint32_t v = 0; v < 65536; ++v) putU16(w.bytes.data() + 2 * v, static_cast<uint16_t>(v));
      Matrix out = makeMatrix(256, 256);
      linnet_memref2 wm = w.memref(), om = out.memref();
      ks.unpack(&wm, &om, f.id, 256);
      int64_t bad = 0;
      for (int64_t n = 0; n < 256; ++n) {
        std::vector<float> ref = referenceRow(f, w, n);
        for (int64_t j = 0; j < 256; ++j) bad += !sameBits(out.at(n, j), ref[j]);
      }
      CHECK(bad == 0);
    }
}

TEST_CASE("unpack through strided views", "[cpu_kernels]") {
  std::mt19937 rng(2);
  for (const Kernels& ks : allKernels())
    for (const Format& f : kFormats) {
      INFO(ks.name << " " << f.name);
      const int64_t k = blockElements(f) == 1 ? 40 : blockElements(f) * 2, n = 3, rb = rowBytes(f, k);
      Weights w = randomWeights(f, n, k, rng, 5, 3);
      // The same bytes with inner stride 2 (every other byte junk).
      std::vector<uint8_t> wide(static_cast<size_t>(2 * n * rb + 9), 0xAB);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < rb; ++j) wide[static_cast<size_t>(9 + i * 2 * rb + 2 * j)] = w.row(i)[j];
      linnet_memref2 wm = {wide.data(), wide.data(), 9, {n, rb}, {2 * rb, 2}};
      Matrix out = makeMatrix(n, k, 1, 2, /*colStride=*/3);
      linnet_memref2 om = out.memref();
      ks.unpack(&wm, &om, f.id, k);
      int64_t bad = 0;
      for (int64_t i = 0; i < n; ++i) {
        std::vector<float> ref = referenceRow(f, w, i);
        for (int64_t j = 0; j < k; ++j) bad += !sameBits(out.at(i, j), ref[j]);
      }
      CHECK(bad == 0);
    }
}

TEST_CASE("gather_rows clamps ids and equals the dequantized rows", "[cpu_kernels]") {
  std::mt19937 rng(3);
  for (const Kernels& ks : allKernels())
    for (const Format& f : kFormats) {
      INFO(ks.name << " " << f.name);
      const int64_t n = 6, k = testKs(f).back();
      Weights w = randomWeights(f, n, k, rng, 2, 4);
      // ids with stride 2 (the odd slots are junk).
      std::vector<int64_t> idsBuf = {0, 99, -5, 99, n + 3, 99, 2, 99, n - 1, 99, 1, 99};
      const std::vector<int64_t> expect = {0, 0, n - 1, 2, n - 1, 1};
      const int64_t r = static_cast<int64_t>(expect.size());
      linnet_memref1 im = {idsBuf.data(), idsBuf.data(), 0, {r}, {2}};
      Matrix out = makeMatrix(r, k, 4, 3);
      linnet_memref2 wm = w.memref(), om = out.memref();
      ks.gatherRows(&wm, &im, &om, f.id, k);
      int64_t bad = 0;
      for (int64_t i = 0; i < r; ++i) {
        std::vector<float> ref = referenceRow(f, w, expect[static_cast<size_t>(i)]);
        for (int64_t j = 0; j < k; ++j) bad += !sameBits(out.at(i, j), ref[j]);
      }
      CHECK(bad == 0);
    }
}

TEST_CASE("matmul_packed against a double-precision product", "[cpu_kernels]") {
  std::mt19937 rng(4);
  const int64_t shapes[][2] = {{1, 1}, {1, 37}, {2, 5}, {3, 9}, {4, 33}, {5, 17}, {7, 33}, {33, 65}, {9, 1}, {16, 64}};
  for (const Kernels& ks : allKernels())
    for (const Format& f : kFormats)
      for (int64_t k : testKs(f))
        for (const auto& mn : shapes) {
          const int64_t m = mn[0], n = mn[1];
          INFO(ks.name << " " << f.name << " M=" << m << " N=" << n << " K=" << k);
          Weights w = randomWeights(f, n, k, rng, 7, 13);
          Matrix x = makeMatrix(m, k, 5, 3);
          fillRandom(x, rng);
          Matrix out = makeMatrix(m, n, 2, 6);
          linnet_memref2 xm = x.memref(), wm = w.memref(), om = out.memref();
          ks.matmulPacked(&xm, &wm, &om, f.id, k);
          checkProduct(f, x, w, out);
        }
}

// The 32-value formats' fused decode kernels dequantize in registers and
// feed each value to the accumulator that the f32 kernel gives the same
// column (linnet_kernels.c, FUSED_32), and the prefill path dequantizes
// into its panel: with K a multiple of 64, a product is bitwise the f32
// product of the weights gguf::dequantize gives, on every path.
TEST_CASE("matmul_packed of the 32-value formats equals matmul_f32 on the dequantized weights bit for bit",
          "[cpu_kernels]") {
  std::mt19937 rng(8);
  for (const Kernels& ks : allKernels())
    for (const Format& f : kFormats) {
      if (blockElements(f) != 32) continue;
      for (int64_t k : {64, 576, 1152})
        for (int64_t m : {1, 2, 3, 4, 5, 15, 16, 23}) {
          const int64_t n = 37;
          INFO(ks.name << " " << f.name << " M=" << m << " K=" << k);
          Weights w = randomWeights(f, n, k, rng, 3, 5);
          Matrix wf = makeMatrix(n, k);
          for (int64_t i = 0; i < n; ++i) {
            std::vector<float> row = referenceRow(f, w, i);
            for (int64_t j = 0; j < k; ++j) wf.at(i, j) = row[j];
          }
          Matrix x = makeMatrix(m, k, 1, 2);
          fillRandom(x, rng);
          Matrix packed = makeMatrix(m, n), plain = makeMatrix(m, n);
          linnet_memref2 xm = x.memref(), wm = w.memref(), wfm = wf.memref(), pm = packed.memref(),
                         fm = plain.memref();
          ks.matmulPacked(&xm, &wm, &pm, f.id, k);
          ks.matmulF32(&xm, &wfm, &fm);
          int64_t bad = 0;
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) bad += !sameBits(packed.at(i, j), plain.at(i, j));
          CHECK(bad == 0);
        }
    }
}

TEST_CASE("matmul through views with inner strides", "[cpu_kernels]") {
  std::mt19937 rng(5);
  for (const Kernels& ks : allKernels())
    for (const Format& f : kFormats)
      for (int64_t m : {1, 9}) {
        INFO(ks.name << " " << f.name << " M=" << m);
        const int64_t n = 19, k = testKs(f)[1 % testKs(f).size()], rb = rowBytes(f, k);
        Weights w = randomWeights(f, n, k, rng);
        std::vector<uint8_t> wide(static_cast<size_t>(2 * n * rb + 3), 0x7F);
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = 0; j < rb; ++j) wide[static_cast<size_t>(3 + i * 2 * rb + 2 * j)] = w.row(i)[j];
        linnet_memref2 wm = {wide.data(), wide.data(), 3, {n, rb}, {2 * rb, 2}};
        Matrix x = makeMatrix(m, k, 1, 1, 2);
        fillRandom(x, rng);
        Matrix out = makeMatrix(m, n, 3, 1, 2);
        linnet_memref2 xm = x.memref(), om = out.memref();
        ks.matmulPacked(&xm, &wm, &om, f.id, k);
        checkProduct(f, x, w, out);
        // Junk between the strided outputs is left alone.
        CHECK(std::isnan(out.data[static_cast<size_t>(out.offset + 1)]));
      }
}

TEST_CASE("matmul_f32 on f32 weights, contiguous and strided", "[cpu_kernels]") {
  std::mt19937 rng(6);
  const Format& f = kFormats[0];
  for (const Kernels& ks : allKernels())
    for (int64_t colStride : {1, 3})
      for (const auto& mnk : {std::array<int64_t, 3>{1, 40, 300}, {3, 7, 17}, {20, 70, 520}}) {
        const int64_t m = mnk[0], n = mnk[1], k = mnk[2];
        INFO(ks.name << " colStride=" << colStride << " M=" << m << " N=" << n << " K=" << k);
        Matrix wmat = makeMatrix(n, k, 3, 2, colStride);
        fillRandom(wmat, rng);
        Weights w = randomWeights(f, n, k, rng);
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = 0; j < k; ++j) std::memcpy(const_cast<uint8_t*>(w.row(i)) + 4 * j, &wmat.at(i, j), 4);
        Matrix x = makeMatrix(m, k, 0, 4);
        fillRandom(x, rng);
        Matrix out = makeMatrix(m, n);
        linnet_memref2 xm = x.memref(), wm = wmat.memref(), om = out.memref();
        ks.matmulF32(&xm, &wm, &om);
        checkProduct(f, x, w, out);
      }
}

// W given as [K, N] is packed as it lies: the same panel as W [N, K]
// transposed, so the prefill path's sums are the same bits; small M (the
// decode path for [N, K]) is checked against the reference.
TEST_CASE("matmul_f32_kn on W [K, N] equals matmul_f32 on its transpose", "[cpu_kernels]") {
  std::mt19937 rng(8);
  const Format& f = kFormats[0];
  for (const Kernels& ks : allKernels())
    for (int64_t colStride : {1, 3})
      for (const auto& mnk : {std::array<int64_t, 3>{1, 40, 300}, {3, 7, 17}, {20, 70, 520}, {40, 33, 1100}}) {
        const int64_t m = mnk[0], n = mnk[1], k = mnk[2];
        INFO(ks.name << " colStride=" << colStride << " M=" << m << " N=" << n << " K=" << k);
        Matrix kn = makeMatrix(k, n, 2, 1, colStride), nk = makeMatrix(n, k);
        fillRandom(kn, rng);
        Weights w = randomWeights(f, n, k, rng);
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = 0; j < k; ++j) {
            nk.at(i, j) = kn.at(j, i);
            std::memcpy(const_cast<uint8_t*>(w.row(i)) + 4 * j, &kn.at(j, i), 4);
          }
        Matrix x = makeMatrix(m, k, 0, 4);
        fillRandom(x, rng);
        Matrix out = makeMatrix(m, n), want = makeMatrix(m, n);
        linnet_memref2 xm = x.memref(), knm = kn.memref(), nkm = nk.memref(), om = out.memref(), wm = want.memref();
        ks.matmulF32Kn(&xm, &knm, &om);
        checkProduct(f, x, w, out);
        if (m > 15) {  // the prefill path for W [N, K] too (linnet_kernels.c: DECODE_MAX_M)
          ks.matmulF32(&xm, &nkm, &wm);
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) REQUIRE(out.at(i, j) == want.at(i, j));
        }
      }
}

// x given as a transposed view (x[i][k] at k * ldx + i: a gradient's dYᵀ,
// attention's Pᵀ) is read as it lies: the prefill path's sums in the same
// order as on a contiguous copy, so the same bits where that copy takes the
// prefill path too; small M against the reference.
TEST_CASE("an f32 product reads a transposed x as it lies", "[cpu_kernels]") {
  std::mt19937 rng(9);
  const Format& f = kFormats[0];
  // Few row tiles (by panels), many (each thread packing its own), at most
  // 16 columns (by rows of out, x unpacked; 8 and 16 at a time, over two
  // K-slices): linnet_kernels.c, matmul_km.
  for (const Kernels& ks : allKernels())
    for (bool kn : {false, true})
      for (const auto& mnk : {std::array<int64_t, 3>{1, 40, 300}, {3, 7, 17}, {20, 70, 520}, {40, 33, 1100},
                              {100, 40, 300}, {70, 8, 1100}, {33, 13, 41}, {1040, 5, 9}}) {
        const int64_t m = mnk[0], n = mnk[1], k = mnk[2];
        INFO(ks.name << " kn=" << kn << " M=" << m << " N=" << n << " K=" << k);
        Matrix xt = makeMatrix(k, m, 1, 3), x = makeMatrix(m, k);
        fillRandom(xt, rng);
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < k; ++j) x.at(i, j) = xt.at(j, i);
        F32Weights w = randomF32Weights(n, k, kn, rng);
        // The view: [M, K] with strides [1, ldx].
        linnet_memref2 view = {xt.data.data(), xt.data.data(), xt.offset, {m, k}, {1, xt.rowStride}};
        Matrix out = makeMatrix(m, n), want = makeMatrix(m, n);
        linnet_memref2 xm = x.memref(), wm = w.mat.memref(), om = out.memref(), wantm = want.memref();
        (kn ? ks.matmulF32Kn : ks.matmulF32)(&view, &wm, &om);
        checkProduct(f, x, w.rows, out);
        if (m > 15 || kn) {
          (kn ? ks.matmulF32Kn : ks.matmulF32)(&xm, &wm, &wantm);
          requireSameBits(out, want);
        }
      }
}

// An x past the caches (a training head's dx = g E, x [C, Vocab]) is read
// slice by slice, every panel against a copy of the slice (linnet_kernels.c:
// matmul_prefill_by_slices): each output gets its K-slices in the same
// order, so its rows have the bits of a smaller product, which goes panel
// by panel.
TEST_CASE("an f32 product with x past the caches goes slice by slice, same bits", "[cpu_kernels]") {
  std::mt19937 rng(10);
  const Format& f = kFormats[0];
  const int64_t m = 24, few = 16, n = 40, k = 90001;  // x 8.6 MB, past the 8 MB bound; its first 16 rows within
  for (const Kernels& ks : allKernels())
    for (bool kn : {false, true}) {
      INFO(ks.name << " kn=" << kn);
      Matrix x = makeMatrix(m, k), firstRows = makeMatrix(few, k);
      fillRandom(x, rng);
      for (int64_t i = 0; i < few; ++i)
        for (int64_t j = 0; j < k; ++j) firstRows.at(i, j) = x.at(i, j);
      F32Weights w = randomF32Weights(n, k, kn, rng);
      Matrix out = makeMatrix(m, n), want = makeMatrix(few, n);
      linnet_memref2 xm = x.memref(), fm = firstRows.memref(), wm = w.mat.memref(), om = out.memref(),
                     wantm = want.memref();
      (kn ? ks.matmulF32Kn : ks.matmulF32)(&xm, &wm, &om);
      (kn ? ks.matmulF32Kn : ks.matmulF32)(&fm, &wm, &wantm);
      checkProduct(f, x, w.rows, out);
      requireSameBits(out, want);
    }
}

TEST_CASE("empty products", "[cpu_kernels]") {
  for (const Kernels& ks : allKernels()) {
    INFO(ks.name);
    // K = 0: zeros.
    Matrix x = makeMatrix(3, 0), out = makeMatrix(3, 4);
    std::vector<uint8_t> wb(1);
    linnet_memref2 wm = {wb.data(), wb.data(), 0, {4, 0}, {0, 1}};
    linnet_memref2 xm = x.memref(), om = out.memref();
    ks.matmulPacked(&xm, &wm, &om, LINNET_STORAGE_Q8_0, 0);
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 4; ++j) CHECK(out.at(i, j) == 0.0f);
    // M = 0 and N = 0 touch nothing.
    Matrix none = makeMatrix(0, 4);
    linnet_memref2 nm = none.memref();
    ks.matmulPacked(&xm, &wm, &nm, LINNET_STORAGE_Q8_0, 0);
    Matrix none2 = makeMatrix(3, 0);
    linnet_memref2 nm2 = none2.memref();
    ks.matmulPacked(&xm, &wm, &nm2, LINNET_STORAGE_Q8_0, 0);
    CHECK(std::isnan(none2.data[0]));
  }
}

#ifdef LINNET_KERNELS_TEST_OPENMP
TEST_CASE("the same bits on 1 and 2 threads", "[cpu_kernels]") {
  std::mt19937 rng(7);
  const int saved = omp_get_max_threads();
  for (const Kernels& ks : allKernels())
    for (const Format& f : kFormats)
      for (int64_t m : {1, 3, 40}) {
        INFO(ks.name << " " << f.name << " M=" << m);
        const int64_t n = 300, k = blockElements(f) == 1 ? 520 : 512;
        Weights w = randomWeights(f, n, k, rng);
        Matrix x = makeMatrix(m, k);
        fillRandom(x, rng);
        Matrix out1 = makeMatrix(m, n), out2 = makeMatrix(m, n);
        linnet_memref2 xm = x.memref(), wm = w.memref(), om1 = out1.memref(), om2 = out2.memref();
        omp_set_num_threads(1);
        ks.matmulPacked(&xm, &wm, &om1, f.id, k);
        omp_set_num_threads(2);
        ks.matmulPacked(&xm, &wm, &om2, f.id, k);
        CHECK(std::memcmp(out1.data.data(), out2.data.data(), out1.data.size() * 4) == 0);
        checkProduct(f, x, w, out2);
      }
  omp_set_num_threads(saved);
}
#endif

// ---- attention -------------------------------------------------------------

namespace {

// A strided view of T over its own buffer: axis a has stride strides[a]
// (0 = broadcast), the gaps between elements hold `fill`.
template <class T, size_t N>
struct View {
  std::vector<T> data;
  std::array<int64_t, N> sizes, strides;
  int64_t offset;
  T& at(const std::array<int64_t, N>& i) {
    int64_t p = offset;
    for (size_t a = 0; a < N; ++a) p += i[a] * strides[a];
    return data[static_cast<size_t>(p)];
  }
};

// Axes in `broadcast` (bit a for axis a) get stride 0; the others are laid
// out innermost first with inner stride `inner` and `pad` extra elements
// after each row of every outer axis.
template <class T, size_t N>
View<T, N> makeView(const std::array<int64_t, N>& sizes, T fill, int64_t offset = 0, int64_t inner = 1,
                    int64_t pad = 0, unsigned broadcast = 0) {
  View<T, N> v{{}, sizes, {}, offset};
  int64_t stride = inner, span = 1;
  for (size_t a = N; a-- > 0;) {
    if (broadcast >> a & 1) {
      v.strides[a] = 0;
      continue;
    }
    v.strides[a] = stride;
    span = stride * sizes[a];
    stride = span + pad;
  }
  v.data.assign(static_cast<size_t>(offset + stride + 1), fill);
  return v;
}

template <class T, size_t N>
void forEach(const std::array<int64_t, N>& sizes, const std::function<void(const std::array<int64_t, N>&)>& f) {
  int64_t total = 1;
  for (int64_t s : sizes) total *= s;
  std::array<int64_t, N> i{};
  for (int64_t n = 0; n < total; ++n) {
    int64_t r = n;
    for (size_t a = N; a-- > 0;) {
      i[a] = r % sizes[a];
      r /= sizes[a];
    }
    f(i);
  }
}

template <size_t N>
void fillRandom(View<float, N>& v, std::mt19937& rng, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> u(lo, hi);
  forEach<float, N>(v.sizes, [&](const std::array<int64_t, N>& i) { v.at(i) = u(rng); });
}

template <class T, size_t N>
linnet_memref4 memref4(View<T, N>& v) {
  static_assert(N == 4);
  return {v.data.data(), v.data.data(), v.offset, {v.sizes[0], v.sizes[1], v.sizes[2], v.sizes[3]},
          {v.strides[0], v.strides[1], v.strides[2], v.strides[3]}};
}
template <class T, size_t N>
linnet_memref5 memref5(View<T, N>& v) {
  static_assert(N == 5);
  return {v.data.data(),
          v.data.data(),
          v.offset,
          {v.sizes[0], v.sizes[1], v.sizes[2], v.sizes[3], v.sizes[4]},
          {v.strides[0], v.strides[1], v.strides[2], v.strides[3], v.strides[4]}};
}

using Pattern = std::function<bool(int64_t l0, int64_t l1, int64_t g, int64_t i, int64_t j)>;

struct AttnShape {
  int64_t l0, l1, g, q, k, d, e;
};

// How the views are laid out: q and out offsets, inner strides and pads,
// k/v pads and inner strides, the mask's broadcast axes.
struct AttnLayout {
  int64_t qInner = 1, qPad = 0, kInner = 1, kPad = 0, vInner = 1, vPad = 0, oInner = 1, oPad = 0;
  unsigned maskBroadcast = 0;
};

struct AttnCase {
  View<float, 5> q, out;
  View<float, 4> k, v;
  View<uint8_t, 5> mask;
  float scale;
};

AttnCase makeAttnCase(const AttnShape& s, const Pattern& visible, const AttnLayout& lay, std::mt19937& rng) {
  AttnCase c{makeView<float, 5>({s.l0, s.l1, s.g, s.q, s.d}, NAN, 3, lay.qInner, lay.qPad),
             makeView<float, 5>({s.l0, s.l1, s.g, s.q, s.e}, NAN, 5, lay.oInner, lay.oPad),
             makeView<float, 4>({s.l0, s.l1, s.k, s.d}, NAN, 1, lay.kInner, lay.kPad),
             makeView<float, 4>({s.l0, s.l1, s.k, s.e}, NAN, 2, lay.vInner, lay.vPad),
             makeView<uint8_t, 5>({s.l0, s.l1, s.g, s.q, s.k}, uint8_t{7}, 4, 1, 0, lay.maskBroadcast),
             1.0f / std::sqrt(static_cast<float>(std::max<int64_t>(s.d, 1)))};
  fillRandom(c.q, rng, -2.0f, 2.0f);
  fillRandom(c.k, rng, -2.0f, 2.0f);
  fillRandom(c.v, rng);
  forEach<uint8_t, 5>(c.mask.sizes, [&](const std::array<int64_t, 5>& i) {
    c.mask.at(i) = visible(i[0], i[1], i[2], i[3], i[4]) ? 1 : 0;
  });
  return c;
}

void runAttention(const Kernels& ks, AttnCase& c) {
  linnet_memref5 qm = memref5(c.q), mm = memref5(c.mask), om = memref5(c.out);
  linnet_memref4 km = memref4(c.k), vm = memref4(c.v);
  ks.attention(&qm, &km, &vm, &mm, &om, c.scale);
}

// Steps 1-4 of the definition, literally, over all K keys, in f32.
std::vector<float> referenceAttention(AttnCase& c) {
  const int64_t K = c.k.sizes[2], D = c.q.sizes[4], E = c.v.sizes[3];
  std::vector<float> ref;
  std::vector<float> s(static_cast<size_t>(K));
  forEach<float, 4>({c.q.sizes[0], c.q.sizes[1], c.q.sizes[2], c.q.sizes[3]}, [&](const std::array<int64_t, 4>& r) {
    float m = -INFINITY;
    for (int64_t j = 0; j < K; ++j) {
      float dot = 0.0f;
      for (int64_t d = 0; d < D; ++d) dot += c.q.at({r[0], r[1], r[2], r[3], d}) * c.k.at({r[0], r[1], j, d});
      dot = dot * c.scale;
      if (!c.mask.at({r[0], r[1], r[2], r[3], j})) dot = -3.0e38f;
      s[static_cast<size_t>(j)] = dot;
      m = std::max(m, dot);
    }
    float z = 0.0f;
    for (float& x : s) {
      x = expf(x - m);
      z += x;
    }
    for (int64_t e = 0; e < E; ++e) {
      float acc = 0.0f;
      for (int64_t j = 0; j < K; ++j) acc += s[static_cast<size_t>(j)] / z * c.v.at({r[0], r[1], j, e});
      ref.push_back(K == 0 ? 0.0f : acc);
    }
  });
  return ref;
}

// out against the reference within 1e-5 (1 + max |v|); out's gaps untouched.
void checkAttention(AttnCase& c) {
  std::vector<float> ref = referenceAttention(c);
  float vmax = 0.0f;
  for (float x : c.v.data)
    if (!std::isnan(x)) vmax = std::max(vmax, std::fabs(x));
  const float tol = 1e-5f * (1.0f + vmax);
  int64_t bad = 0;
  size_t n = 0;
  std::vector<char> inView(c.out.data.size(), 0);
  forEach<float, 5>(c.out.sizes, [&](const std::array<int64_t, 5>& i) {
    const float got = c.out.at(i), want = ref[n++];
    inView[static_cast<size_t>(&c.out.at(i) - c.out.data.data())] = 1;
    if (!(std::fabs(got - want) <= tol) && bad++ < 5)
      UNSCOPED_INFO("out[" << i[0] << "," << i[1] << "," << i[2] << "," << i[3] << "," << i[4] << "] = " << got
                           << ", expected " << want);
  });
  CHECK(bad == 0);
  int64_t touched = 0;
  for (size_t p = 0; p < inView.size(); ++p) touched += !inView[p] && !std::isnan(c.out.data[p]);
  CHECK(touched == 0);
}

bool causal(int64_t, int64_t, int64_t, int64_t i, int64_t j) { return j <= i; }

// Broadcast bits: axis 0 = L0, 1 = L1, 2 = G, 3 = Q, 4 = K.
constexpr unsigned kLeading = 0b00111;  // a [Q, K] mask

}  // namespace

TEST_CASE("attention: causal prefill", "[cpu_kernels][attention]") {
  std::mt19937 rng(11);
  for (const Kernels& ks : allKernels())
    for (int64_t g : {1, 3})
      for (int64_t n : {37, 130})
        for (unsigned bc : {0u, kLeading}) {
          INFO(ks.name << " G=" << g << " Q=K=" << n << " broadcast=" << bc);
          AttnLayout lay;
          lay.maskBroadcast = bc;
          AttnCase c = makeAttnCase({1, 2, g, n, n, 64, 64}, causal, lay, rng);
          runAttention(ks, c);
          checkAttention(c);
        }
}

TEST_CASE("attention: decode over a visible prefix of the cache", "[cpu_kernels][attention]") {
  std::mt19937 rng(12);
  for (const Kernels& ks : allKernels())
    for (int64_t k : {200, 8192})
      for (int64_t p : {int64_t{1}, int64_t{63}, int64_t{64}, int64_t{65}, int64_t{512}, k}) {
        if (p > k) continue;
        INFO(ks.name << " K=" << k << " p=" << p);
        AttnLayout lay;
        lay.maskBroadcast = kLeading | 0b01000;  // [K]
        AttnCase c = makeAttnCase({1, 2, 3, 1, k, 64, 64},
                                  [p](int64_t, int64_t, int64_t, int64_t, int64_t j) { return j < p; }, lay, rng);
        runAttention(ks, c);
        checkAttention(c);
      }
}

TEST_CASE("attention: paged rows, each in its own far-apart keys", "[cpu_kernels][attention]") {
  // decode_paged's shape: the queries are requests, each seeing the slots of
  // its own pages in one pool (a run of keys, some with holes), far apart;
  // the kernel groups such rows apart, which must not change a row's result.
  std::mt19937 rng(21);
  for (const Kernels& ks : allKernels())
    for (int64_t rows : {int64_t{2}, int64_t{4}, int64_t{5}}) {
      const int64_t pool = 4096, own = pool / rows;
      INFO(ks.name << " rows=" << rows);
      Pattern pat = [own](int64_t, int64_t, int64_t, int64_t i, int64_t j) {
        const int64_t at = j - i * own, seen = 40 + 97 * i;  // row i's positions 0 .. seen
        return at >= 0 && at <= seen && (i != 1 || at % 7 != 3);
      };
      for (int64_t g : {int64_t{1}, int64_t{4}}) {
        AttnCase c = makeAttnCase({1, 2, g, rows, pool, 64, 64}, pat, {}, rng);
        runAttention(ks, c);
        checkAttention(c);
      }
    }
}

TEST_CASE("attention: arbitrary masks, fully masked rows, odd sizes", "[cpu_kernels][attention]") {
  std::mt19937 rng(13);
  const AttnShape shapes[] = {{2, 2, 3, 5, 100, 64, 64}, {1, 2, 3, 4, 3, 5, 7}, {2, 1, 1, 9, 40, 17, 33},
                              {1, 1, 3, 20, 70, 64, 64}, {1, 1, 1, 1, 1, 1, 1},   {1, 1, 4, 30, 200, 17, 130},
                              {1, 2, 2, 3, 50, 80, 20}};
  for (const Kernels& ks : allKernels())
    for (const AttnShape& s : shapes)
      for (double density : {0.3, 0.9}) {
        INFO(ks.name << " L0=" << s.l0 << " L1=" << s.l1 << " G=" << s.g << " Q=" << s.q << " K=" << s.k
                     << " D=" << s.d << " E=" << s.e << " density=" << density);
        // A random pattern, rows with i % 4 == 3 fully masked.
        std::vector<uint8_t> bits(static_cast<size_t>(s.l0 * s.l1 * s.g * s.q * s.k));
        std::bernoulli_distribution on(density);
        for (auto& b : bits) b = on(rng);
        Pattern pat = [&](int64_t l0, int64_t l1, int64_t g, int64_t i, int64_t j) {
          if (i % 4 == 3) return false;
          return bits[static_cast<size_t>((((l0 * s.l1 + l1) * s.g + g) * s.q + i) * s.k + j)] != 0;
        };
        AttnCase c = makeAttnCase(s, pat, {}, rng);
        runAttention(ks, c);
        checkAttention(c);
      }
}

TEST_CASE("attention: every row masked is the mean of the values", "[cpu_kernels][attention]") {
  std::mt19937 rng(14);
  for (const Kernels& ks : allKernels())
    for (unsigned bc : {0u, 0b11111u}) {
      INFO(ks.name << " broadcast=" << bc);
      AttnLayout lay;
      lay.maskBroadcast = bc;
      AttnCase c = makeAttnCase({1, 2, 3, 4, 50, 64, 64}, [](auto...) { return false; }, lay, rng);
      runAttention(ks, c);
      checkAttention(c);
    }
}

TEST_CASE("attention: broadcast masks", "[cpu_kernels][attention]") {
  std::mt19937 rng(15);
  // Each pattern depends only on the axes that are not broadcast.
  struct Case {
    unsigned broadcast;
    Pattern pat;
  };
  const Case cases[] = {
      {0b00001u, [](int64_t, int64_t l1, int64_t g, int64_t i, int64_t j) { return (j + l1 + g) % 3 != 0 || j <= i; }},
      {0b00010u, [](int64_t l0, int64_t, int64_t g, int64_t i, int64_t j) { return j <= i + l0 + g; }},
      {0b00100u, [](int64_t l0, int64_t l1, int64_t, int64_t i, int64_t j) { return j <= i + l0 * 2 + l1; }},
      {0b00011u, [](int64_t, int64_t, int64_t g, int64_t i, int64_t j) { return (j * 7 + g + i) % 5 < 3; }},
      // inner stride 0: each (l0, l1, g, i) sees all keys or none
      {0b10000u, [](int64_t l0, int64_t l1, int64_t g, int64_t i, int64_t) { return (l0 + l1 + g + i) % 3 != 0; }},
      {0b10111u, [](int64_t, int64_t, int64_t, int64_t i, int64_t) { return i % 2 == 0; }},
  };
  for (const Kernels& ks : allKernels())
    for (const Case& cs : cases) {
      INFO(ks.name << " broadcast=" << cs.broadcast);
      AttnLayout lay;
      lay.maskBroadcast = cs.broadcast;
      AttnCase c = makeAttnCase({2, 2, 3, 6, 45, 64, 64}, cs.pat, lay, rng);
      runAttention(ks, c);
      checkAttention(c);
    }
}

TEST_CASE("attention: strided views", "[cpu_kernels][attention]") {
  std::mt19937 rng(16);
  AttnLayout padded;  // inner stride 1 with row gaps: the fast path
  padded.qPad = 3;
  padded.kPad = 5;
  padded.vPad = 2;
  padded.oPad = 7;
  AttnLayout strided = padded;  // inner strides > 1: the plain path
  strided.qInner = 2;
  strided.oInner = 3;
  AttnLayout kvStrided = padded;
  kvStrided.kInner = 2;
  kvStrided.vInner = 3;
  for (const Kernels& ks : allKernels())
    for (const AttnLayout& lay : {padded, strided, kvStrided})
      for (const AttnShape& s : {AttnShape{1, 2, 3, 17, 17, 64, 64}, AttnShape{2, 1, 3, 4, 3, 5, 7}}) {
        INFO(ks.name << " qInner=" << lay.qInner << " kInner=" << lay.kInner << " D=" << s.d);
        AttnCase c = makeAttnCase(s, causal, lay, rng);
        runAttention(ks, c);
        checkAttention(c);
      }
}

TEST_CASE("attention: empty sizes", "[cpu_kernels][attention]") {
  std::mt19937 rng(17);
  for (const Kernels& ks : allKernels()) {
    INFO(ks.name);
    // K = 0: zeros.
    AttnCase c = makeAttnCase({1, 2, 3, 4, 0, 8, 8}, causal, {}, rng);
    runAttention(ks, c);
    forEach<float, 5>(c.out.sizes, [&](const std::array<int64_t, 5>& i) { CHECK(c.out.at(i) == 0.0f); });
    // Q = 0 and G = 0 touch nothing.
    for (const AttnShape& s : {AttnShape{1, 2, 3, 0, 5, 8, 8}, AttnShape{1, 2, 0, 4, 5, 8, 8}}) {
      AttnCase e = makeAttnCase(s, causal, {}, rng);
      runAttention(ks, e);
      for (float x : e.out.data) CHECK(std::isnan(x));
    }
  }
}

#ifdef LINNET_KERNELS_TEST_OPENMP
TEST_CASE("attention: the same bits on 1 and 2 threads", "[cpu_kernels][attention]") {
  std::mt19937 rng(18);
  const int saved = omp_get_max_threads();
  struct Case {
    AttnShape shape;
    Pattern pat;
  };
  const Case cases[] = {
      {{1, 3, 3, 64, 64, 64, 64}, causal},
      {{1, 3, 4, 1, 1024, 64, 64}, [](int64_t, int64_t, int64_t, int64_t, int64_t j) { return j < 300; }},
      {{1, 2, 3, 40, 90, 64, 64}, [](int64_t, int64_t, int64_t g, int64_t i, int64_t j) { return (i * j + g) % 3; }},
      // One (l0, l1): the kernel splits its rows into smaller blocks on 2
      // threads than on 1.
      {{1, 1, 3, 5, 300, 64, 64}, [](int64_t, int64_t, int64_t g, int64_t i, int64_t j) { return (i + j * g) % 4; }},
      {{1, 1, 4, 1, 2048, 64, 64}, [](int64_t, int64_t, int64_t, int64_t, int64_t j) { return j < 700; }},
  };
  for (const Kernels& ks : allKernels())
    for (const Case& cs : cases) {
      INFO(ks.name << " Q=" << cs.shape.q << " K=" << cs.shape.k);
      AttnCase c = makeAttnCase(cs.shape, cs.pat, {}, rng);
      omp_set_num_threads(1);
      runAttention(ks, c);
      const std::vector<float> one = c.out.data;
      std::fill(c.out.data.begin(), c.out.data.end(), NAN);
      omp_set_num_threads(2);
      runAttention(ks, c);
      CHECK(std::memcmp(one.data(), c.out.data.data(), one.size() * 4) == 0);
      checkAttention(c);
    }
  omp_set_num_threads(saved);
}
#endif
