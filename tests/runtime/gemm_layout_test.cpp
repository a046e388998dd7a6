// The CUDA device's mapping of a row-major LinnetGemm onto the column-major
// product cuBLASLt runs (device/cuda/gemm_layout.h), checked on the CPU
// against a BLAS we did not write: OpenBLAS's cblas_sgemm takes the same
// column-major arguments (transposes, m, n, k, leading dimensions) that the
// device gives cublasLtMatmul, one call per matrix of the stack. The
// expected values are the row-major definition, summed in double.
#include <catch2/catch.hpp>
#include <cblas.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "device/cuda/gemm_layout.h"

using linnet::device::cuda::columnMajor;
using linnet::device::cuda::ColumnMajorGemm;

namespace {

struct Case {
  bool transposeW;
  std::uint64_t batch, m, n, k;
  std::uint64_t padX, padW, padC;  // extra elements at the end of each row
  std::uint64_t gapX, gapW, gapC;  // extra elements between matrices
};

void checkCase(const Case& c) {
  std::uint64_t wRows = c.transposeW ? c.n : c.k, wCols = c.transposeW ? c.k : c.n;
  std::uint64_t ldX = c.k + c.padX, ldW = wCols + c.padW, ldC = c.n + c.padC;
  std::uint64_t strideX = c.m * ldX + c.gapX, strideW = wRows * ldW + c.gapW, strideC = c.m * ldC + c.gapC;
  std::mt19937 rng(static_cast<unsigned>(c.m * 131 + c.n * 17 + c.k + c.batch));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(c.batch * strideX), w(c.batch * strideW), out(c.batch * strideC, NAN);
  for (float& v : x) v = u(rng);
  for (float& v : w) v = u(rng);

  LinnetGemm g{};
  g.element_type = LINNET_CUDA_F32;
  g.transpose_w = c.transposeW;
  g.batch = c.batch;
  g.m = c.m;
  g.n = c.n;
  g.k = c.k;
  g.x = x.data();
  g.w = w.data();
  g.c = out.data();
  g.ld_x = ldX;
  g.ld_w = ldW;
  g.ld_c = ldC;
  g.stride_x = strideX;
  g.stride_w = strideW;
  g.stride_c = strideC;
  ColumnMajorGemm p = columnMajor(g);
  REQUIRE(p.batch == static_cast<std::int64_t>(c.batch));
  for (std::int64_t i = 0; i < p.batch; ++i)
    cblas_sgemm(CblasColMajor, p.transposeA ? CblasTrans : CblasNoTrans, p.transposeB ? CblasTrans : CblasNoTrans,
                static_cast<int>(p.m), static_cast<int>(p.n), static_cast<int>(p.k), 1.0f,
                static_cast<const float*>(p.a) + i * p.strideA, static_cast<int>(p.lda),
                static_cast<const float*>(p.b) + i * p.strideB, static_cast<int>(p.ldb), 0.0f,
                static_cast<float*>(p.c) + i * p.strideC, static_cast<int>(p.ldc));

  for (std::uint64_t b = 0; b < c.batch; ++b)
    for (std::uint64_t i = 0; i < c.m; ++i)
      for (std::uint64_t j = 0; j < c.n; ++j) {
        double want = 0;
        for (std::uint64_t k = 0; k < c.k; ++k) {
          std::uint64_t at = c.transposeW ? j * ldW + k : k * ldW + j;
          want += double(x[b * strideX + i * ldX + k]) * double(w[b * strideW + at]);
        }
        INFO("matrix " << b << ", row " << i << ", column " << j);
        REQUIRE(std::abs(out[b * strideC + i * ldC + j] - want) <= 1e-5 * (1.0 + std::abs(want)) * double(c.k));
      }
  // The padding between rows and matrices is not written.
  std::size_t written = 0;
  for (float v : out) written += !std::isnan(v);
  REQUIRE(written == c.batch * c.m * c.n);
}

}  // namespace

TEST_CASE("a row-major product mapped to column-major BLAS arguments", "[gemm_layout]") {
  // A prefill product with a weight [n, k] (transpose_w), one with w as
  // [k, n], attention's batched scores and values, rows and matrices with
  // gaps (a layer's slice of a stacked weight), m != n != k throughout.
  const Case cases[] = {
      {true, 1, 20, 7, 13, 0, 0, 0, 0, 0, 0},  {false, 1, 17, 9, 5, 0, 0, 0, 0, 0, 0},
      {true, 3, 16, 11, 8, 0, 0, 0, 0, 0, 0},  {false, 3, 18, 6, 12, 0, 0, 0, 0, 0, 0},
      {true, 2, 19, 5, 10, 3, 2, 1, 7, 11, 4}, {false, 2, 21, 4, 9, 1, 5, 2, 3, 0, 6},
  };
  for (const Case& c : cases) {
    INFO("transpose_w " << c.transposeW << ", batch " << c.batch << ", " << c.m << " x " << c.n << " x " << c.k);
    checkCase(c);
  }
}
