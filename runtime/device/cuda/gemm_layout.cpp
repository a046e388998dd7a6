#include "device/cuda/gemm_layout.h"

namespace linnet::device::cuda {

ColumnMajorGemm columnMajor(const LinnetGemm& g) {
  ColumnMajorGemm p;
  // Row-major x [m, k] with rows ld_x apart is column-major x^T [k, m].
  p.transposeA = g.transpose_w != 0;  // w [n, k] row-major is w^T [k, n] column-major: op T gives [n, k]
  p.transposeB = false;
  p.m = static_cast<std::int64_t>(g.n);
  p.n = static_cast<std::int64_t>(g.m);
  p.k = static_cast<std::int64_t>(g.k);
  p.a = g.w;
  p.b = g.x;
  p.c = g.c;
  p.lda = static_cast<std::int64_t>(g.ld_w);
  p.ldb = static_cast<std::int64_t>(g.ld_x);
  p.ldc = static_cast<std::int64_t>(g.ld_c);
  p.strideA = static_cast<std::int64_t>(g.stride_w);
  p.strideB = static_cast<std::int64_t>(g.stride_x);
  p.strideC = static_cast<std::int64_t>(g.stride_c);
  p.batch = static_cast<std::int64_t>(g.batch);
  return p;
}

}  // namespace linnet::device::cuda
