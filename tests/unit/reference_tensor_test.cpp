// The reference backend's rounding and kernels, on values checked by hand
// against NumPy's float16 and bfloat16's definition.
#include <catch2/catch.hpp>

#include <cmath>

#include "targets/reference/tensor.h"

using namespace linnet::reference;

TEST_CASE("f16 rounding is IEEE half, ties to even", "[reference]") {
  CHECK(roundTo(Scalar::F16, 1.0 / 3.0) == 0.333251953125);
  CHECK(roundTo(Scalar::F16, 65504.0) == 65504.0);
  CHECK(roundTo(Scalar::F16, 65519.0) == 65504.0);
  CHECK(std::isinf(roundTo(Scalar::F16, 65520.0)));
  CHECK(roundTo(Scalar::F16, std::ldexp(1.0, -24)) == std::ldexp(1.0, -24));  // smallest subnormal
  CHECK(roundTo(Scalar::F16, std::ldexp(1.0, -25)) == 0.0);                   // a tie: to even (0)
  CHECK(roundTo(Scalar::F16, 3 * std::ldexp(1.0, -25)) == std::ldexp(1.0, -23));
  CHECK(roundTo(Scalar::F16, 2049.0) == 2048.0);  // a tie between 2048 and 2050: to even
  CHECK(roundTo(Scalar::F16, 2051.0) == 2052.0);
  CHECK(roundTo(Scalar::F16, -0.1) == -0.0999755859375);
}

TEST_CASE("bf16 rounding keeps 8 significant bits, ties to even", "[reference]") {
  CHECK(roundTo(Scalar::BF16, 1.0 / 3.0) == 0.333984375);
  CHECK(roundTo(Scalar::BF16, 257.0) == 256.0);  // a tie: to even
  CHECK(roundTo(Scalar::BF16, 259.0) == 260.0);
  CHECK(roundTo(Scalar::F32, 0.1) == static_cast<double>(0.1f));
}

TEST_CASE("integer arithmetic wraps and shifts are logical", "[reference]") {
  Tensor big = Tensor::scalarI(Scalar::I64, INT64_MAX);
  Tensor one = Tensor::scalarI(Scalar::I64, 1);
  CHECK(binary(linnet::sema::BinaryKind::Add, big, one).i[0] == INT64_MIN);
  Tensor minus = Tensor::scalarI(Scalar::I64, -1);
  CHECK(binary(linnet::sema::BinaryKind::Shr, minus, Tensor::scalarI(Scalar::I64, 60)).i[0] == 15);
  Tensor small = Tensor::scalarI(Scalar::I32, INT32_MAX);
  CHECK(binary(linnet::sema::BinaryKind::Mul, small, Tensor::scalarI(Scalar::I32, 2)).i[0] == -2);
  CHECK(binary(linnet::sema::BinaryKind::Div, one, Tensor::scalarI(Scalar::I64, 0)).i[0] == 0);  // division by zero gives 0
}

TEST_CASE("broadcasting, matmul and advanced indexing", "[reference]") {
  Tensor a = Tensor::zeros(Scalar::F32, {2, 3});
  for (int k = 0; k < 6; ++k) a.f[k] = k;
  Tensor col = Tensor::zeros(Scalar::F32, {2, 1});
  col.f = {10, 20};
  Tensor sum = binary(linnet::sema::BinaryKind::Add, a, col);
  CHECK(sum.f == std::vector<double>{10, 11, 12, 23, 24, 25});
  Tensor w = Tensor::zeros(Scalar::F32, {3, 2});
  w.f = {1, 0, 0, 1, 1, 1};
  CHECK(matmul(a, w).f == std::vector<double>{2, 3, 8, 9});
  Tensor rows = Tensor::zeros(Scalar::I64, {3});
  rows.i = {1, 0, 7};  // 7 clamps to the last row
  CHECK(gather(a, rows).f == std::vector<double>{3, 4, 5, 0, 1, 2, 3, 4, 5});
  CHECK(reduceAxis(linnet::sema::ReduceKind::IndexOfMax, a, 1, false).i == std::vector<int64_t>{2, 2});
}
