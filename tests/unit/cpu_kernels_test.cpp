// The CPU weight-product kernels (compiler/targets/cpu/kernels): unpack and
// gather_rows against linnet::gguf::dequantize bit for bit, the products
// against a double-precision x . dequant(W)^T, strided views, and the same
// bits on 1 and 2 OpenMP threads. Each case runs on the build's kernels
// (AVX-512 where the build machine has it) and, where CMake builds it, on a
// second copy compiled without AVX-512 (the portable C path).
#include <catch2/catch.hpp>

#include <array>
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

#ifdef LINNET_KERNELS_TEST_OPENMP
#include <omp.h>
#endif

#ifdef LINNET_KERNELS_TEST_PORTABLE
extern "C" {
void linnet_portable_mlir_ciface_linnet_kernel_matmul_packed(linnet_memref2*, linnet_memref2*, linnet_memref2*,
                                                             int64_t, int64_t);
void linnet_portable_mlir_ciface_linnet_kernel_matmul_f32(linnet_memref2*, linnet_memref2*, linnet_memref2*);
void linnet_portable_mlir_ciface_linnet_kernel_gather_rows(linnet_memref2*, linnet_memref1*, linnet_memref2*,
                                                           int64_t, int64_t);
void linnet_portable_mlir_ciface_linnet_kernel_unpack(linnet_memref2*, linnet_memref2*, int64_t, int64_t);
}
#endif

namespace {

using linnet::gguf::GgmlType;

struct Kernels {
  const char* name;
  void (*matmulPacked)(linnet_memref2*, linnet_memref2*, linnet_memref2*, int64_t, int64_t);
  void (*matmulF32)(linnet_memref2*, linnet_memref2*, linnet_memref2*);
  void (*gatherRows)(linnet_memref2*, linnet_memref1*, linnet_memref2*, int64_t, int64_t);
  void (*unpack)(linnet_memref2*, linnet_memref2*, int64_t, int64_t);
};

std::vector<Kernels> allKernels() {
  std::vector<Kernels> ks = {{"native", _mlir_ciface_linnet_kernel_matmul_packed,
                              _mlir_ciface_linnet_kernel_matmul_f32, _mlir_ciface_linnet_kernel_gather_rows,
                              _mlir_ciface_linnet_kernel_unpack}};
#ifdef LINNET_KERNELS_TEST_PORTABLE
  ks.push_back({"portable", linnet_portable_mlir_ciface_linnet_kernel_matmul_packed,
                linnet_portable_mlir_ciface_linnet_kernel_matmul_f32,
                linnet_portable_mlir_ciface_linnet_kernel_gather_rows, linnet_portable_mlir_ciface_linnet_kernel_unpack});
#endif
  return ks;
}

struct Format {
  int64_t id;
  const char* name;
  GgmlType ggml;
};

const Format kFormats[] = {
    {LINNET_STORAGE_F32, "f32", GgmlType::F32},    {LINNET_STORAGE_F16, "f16", GgmlType::F16},
    {LINNET_STORAGE_BF16, "bf16", GgmlType::BF16}, {LINNET_STORAGE_Q8_0, "q8_0", GgmlType::Q8_0},
    {LINNET_STORAGE_Q4_0, "q4_0", GgmlType::Q4_0}, {LINNET_STORAGE_Q4_1, "q4_1", GgmlType::Q4_1},
    {LINNET_STORAGE_Q4_K, "q4_k", GgmlType::Q4_K}, {LINNET_STORAGE_Q5_K, "q5_k", GgmlType::Q5_K},
    {LINNET_STORAGE_Q6_K, "q6_k", GgmlType::Q6_K},
};

int64_t blockElements(const Format& f) { return linnet_storage_block_elements[f.id]; }
int64_t blockBytes(const Format& f) { return linnet_storage_block_bytes[f.id]; }
int64_t rowBytes(const Format& f, int64_t k) { return linnet_storage_row_bytes(f.id, k); }

void putU16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }

// A finite f16 scale of either sign, magnitude in [2^-12, 2^-2].
uint16_t randomScale(std::mt19937& rng) {
  std::uniform_real_distribution<float> mag(-12.0f, -2.0f);
  float v = std::exp2(mag(rng));
  if (rng() & 1) v = -v;
  return linnet::gguf::f32ToF16(v);
}

// One random, valid block of `f` (every byte random, scales finite).
void randomBlock(const Format& f, std::mt19937& rng, uint8_t* b) {
  const int64_t bytes = blockBytes(f);
  for (int64_t i = 0; i < bytes; ++i) b[i] = static_cast<uint8_t>(rng());
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  switch (f.id) {
    case LINNET_STORAGE_F32: {
      float v = u(rng);
      std::memcpy(b, &v, 4);
      break;
    }
    case LINNET_STORAGE_F16: putU16(b, linnet::gguf::f32ToF16(u(rng))); break;
    case LINNET_STORAGE_BF16: putU16(b, linnet::gguf::f32ToBf16(u(rng))); break;
    case LINNET_STORAGE_Q8_0:
    case LINNET_STORAGE_Q4_0: putU16(b, randomScale(rng)); break;
    case LINNET_STORAGE_Q4_1:
    case LINNET_STORAGE_Q4_K:
    case LINNET_STORAGE_Q5_K:
      putU16(b, randomScale(rng));
      putU16(b + 2, randomScale(rng));
      break;
    case LINNET_STORAGE_Q6_K: putU16(b + 208, randomScale(rng)); break;
    default: FAIL("no random block for format " << f.name);
  }
}

// W [N, K] in format f, row i at `offset + i * rowStride` bytes of a buffer
// (rowStride >= RowBytes; the gaps hold junk).
struct Weights {
  std::vector<uint8_t> bytes;
  int64_t n, k, offset, rowStride;
  const uint8_t* row(int64_t i) const { return bytes.data() + offset + i * rowStride; }
  linnet_memref2 memref() {
    return {bytes.data(), bytes.data(), offset, {n, rowStride}, {rowStride, 1}};
  }
};

Weights randomWeights(const Format& f, int64_t n, int64_t k, std::mt19937& rng, int64_t offset = 0,
                      int64_t pad = 0) {
  const int64_t rb = rowBytes(f, k);
  Weights w{std::vector<uint8_t>(static_cast<size_t>(offset + n * (rb + pad) + 1)), n, k, offset, rb + pad};
  for (auto& b : w.bytes) b = static_cast<uint8_t>(rng());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < k / blockElements(f); ++j)
      randomBlock(f, rng, const_cast<uint8_t*>(w.row(i)) + j * blockBytes(f));
  return w;
}

// The reference: linnet::gguf::dequantize of one row.
std::vector<float> referenceRow(const Format& f, const Weights& w, int64_t i) {
  std::vector<float> out(static_cast<size_t>(w.k));
  const auto* src = reinterpret_cast<const std::byte*>(w.row(i));
  linnet::gguf::dequantize(f.ggml, std::span<const std::byte>(src, static_cast<size_t>(rowBytes(f, w.k))), out);
  return out;
}

// An f32 matrix [rows, cols] at `offset` with strides (rowStride, colStride).
struct Matrix {
  std::vector<float> data;
  int64_t rows, cols, offset, rowStride, colStride;
  float& at(int64_t i, int64_t j) { return data[static_cast<size_t>(offset + i * rowStride + j * colStride)]; }
  linnet_memref2 memref() { return {data.data(), data.data(), offset, {rows, cols}, {rowStride, colStride}}; }
};

Matrix makeMatrix(int64_t rows, int64_t cols, int64_t offset = 0, int64_t rowPad = 0, int64_t colStride = 1,
                  float fill = NAN) {
  const int64_t rowStride = cols * colStride + rowPad;
  Matrix m{std::vector<float>(static_cast<size_t>(offset + rows * rowStride + 1), fill), rows, cols, offset,
           rowStride, colStride};
  return m;
}

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
