// A LinnetGemm (artifact/cuda_api.h: row-major stacks) as the column-major
// product BLAS libraries take (cuBLASLt's cublasLtMatmul, a BLAS sgemm):
//
//   c = x w^T (or x w), row-major, is c^T = w x^T, column-major:
//   A = w (op T when w is [n, k], else N), B = x (N), m' = n, n' = m.
//
// Plain arithmetic with no driver behind it, so tests check it against a
// BLAS on any machine (tests/runtime/gemm_layout_test.cpp).
#pragma once

#include <cstdint>

#include "artifact/cuda_api.h"

namespace linnet::device::cuda {

struct ColumnMajorGemm {
  bool transposeA = false, transposeB = false;
  std::int64_t m = 0, n = 0, k = 0;  // op(A) is m x k, op(B) k x n, C m x n
  const void* a = nullptr;
  const void* b = nullptr;
  void* c = nullptr;
  std::int64_t lda = 0, ldb = 0, ldc = 0;            // as stored, before op
  std::int64_t strideA = 0, strideB = 0, strideC = 0;  // elements between matrices
  std::int64_t batch = 1;
  // Rows and columns of A and B as stored (what a layout describes).
  std::int64_t rowsA() const { return transposeA ? k : m; }
  std::int64_t colsA() const { return transposeA ? m : k; }
  std::int64_t rowsB() const { return transposeB ? n : k; }
  std::int64_t colsB() const { return transposeB ? k : n; }
};

ColumnMajorGemm columnMajor(const LinnetGemm& gemm);

}  // namespace linnet::device::cuda
