// The per-op conformance suite's host-side tensors: building inputs,
// converting to and from linnet::nest::Tensor, comparing two results under
// a tolerance, and printing values. This is the only file of the suite that
// knows what a nest::Tensor looks like inside (toTensor / fromTensor and
// the artifact-key helper in ops_tensor.cpp); everything else works on
// `Values`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nest/nest.h"

namespace linnet::ops {

using Scalar = linnet::DType;

// A tensor as the suite builds and reads it: float dtypes in `f` (each value
// exactly representable in the dtype), int dtypes and bool in `i`.
struct Values {
  Scalar dtype = Scalar::F32;
  std::vector<int64_t> shape;
  std::vector<double> f;
  std::vector<int64_t> i;

  int64_t size() const;
  bool isFloat() const;
  double at(int64_t k) const { return isFloat() ? f[k] : static_cast<double>(i[k]); }
};

// The nearest value of `dtype` (round to nearest, ties to even; overflow to
// infinity), computed directly from the double: one rounding.
double roundTo(Scalar dtype, double v);
// Two's complement wrap into `dtype` (bool: != 0).
int64_t wrapTo(Scalar dtype, int64_t v);
// The spacing of `dtype`'s values at magnitude `m` (subnormal spacing below the normal range).
double ulpOf(Scalar dtype, double m);

// Values of `dtype` and `shape` from doubles (rounded) or integers (wrapped).
Values floats(Scalar dtype, std::vector<int64_t> shape, const std::vector<double>& v);
Values ints(Scalar dtype, std::vector<int64_t> shape, const std::vector<int64_t>& v);
Values zeros(Scalar dtype, std::vector<int64_t> shape);

nest::Tensor toTensor(const Values& v);
Values fromTensor(const nest::Tensor& t);
std::vector<nest::Tensor> toTensors(const std::vector<Values>& v);

// How far a float result may be from the expected one: `ulps` units in the
// last place of the dtype, measured at max(|expected|, floor). ulps = 0 is
// exact equality (0 and -0 are equal). NaN equals NaN (any sign or
// payload); an infinity must be the same infinity. Integers and bools are
// always compared exactly.
struct Tolerance {
  double ulps = 0;
  double floor = 0;
};

// Empty when `got` matches `want`; else what differs (shape, dtype, or the
// first few elements with their flat index, both values and the allowance).
std::string compare(const Values& want, const Values& got, const Tolerance& tol);

// `Tensor[2, 3; f32] [1, 2.5, nan, ...]`, at most `limit` elements.
std::string format(const Values& v, size_t limit = 24);
std::string typeName(const Values& v);

}  // namespace linnet::ops
