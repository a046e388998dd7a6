// Tensors of the reference backend and the kernels over them. Values are
// computed in double (floats) or int64 (ints, bool) and rounded to their
// dtype after every operation, which is the language's definition of a
// bf16/f16/f32 operation (docs/language.md §7).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "sema/primitives.h"
#include "sema/types.h"

namespace linnet::reference {

using sema::Scalar;

// Raised for a program that cannot run (a runtime index out of every range
// the language defines, an unsupported form); the message says where.
struct EvalError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Tensor {
  Scalar dtype = Scalar::F32;
  // A literal or a dimension used as a value: takes the other operand's dtype.
  bool weak = false;
  std::vector<int64_t> shape;
  std::vector<double> f;   // float dtypes
  std::vector<int64_t> i;  // int dtypes and bool

  static Tensor zeros(Scalar dtype, std::vector<int64_t> shape);
  static Tensor scalarF(Scalar dtype, double v, bool weak = false);
  static Tensor scalarI(Scalar dtype, int64_t v, bool weak = false);

  bool isFloat() const { return sema::isFloat(dtype); }
  int64_t size() const;
  int rank() const { return static_cast<int>(shape.size()); }
  double asDouble(int64_t k) const { return isFloat() ? f[k] : static_cast<double>(i[k]); }
  int64_t asInt(int64_t k) const { return isFloat() ? static_cast<int64_t>(f[k]) : i[k]; }
  std::string describe() const;  // `Tensor[2, 3; f32]`
};

double roundTo(Scalar dtype, double v);

// While one is alive on a thread, float values there are not rounded to
// their dtype: an f32 program evaluated in float64, which a
// finite-difference check of a gradient needs (the language has no f64).
struct WideFloats {
  WideFloats();
  ~WideFloats();
  WideFloats(const WideFloats&) = delete;
  WideFloats& operator=(const WideFloats&) = delete;
};
int64_t wrapTo(Scalar dtype, int64_t v);

std::vector<int64_t> broadcastShapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b);
// The flat index into a tensor of `shape` for output coordinate `coord` under broadcasting.
int64_t broadcastIndex(const std::vector<int64_t>& shape, const std::vector<int64_t>& outShape,
                       const std::vector<int64_t>& coord);

// Element types of a binary operation: the strong side wins, weak ints
// become floats next to floats; both weak: float if either is.
Scalar joinDType(const Tensor& a, const Tensor& b, bool& weak);

Tensor cast(const Tensor& x, Scalar to);
Tensor unary(sema::UnaryKind op, const Tensor& x);
Tensor binary(sema::BinaryKind op, const Tensor& a, const Tensor& b);
Tensor select(const Tensor& c, const Tensor& a, const Tensor& b);
Tensor reshape(const Tensor& x, std::vector<int64_t> shape);
Tensor permute(const Tensor& x, const std::vector<int64_t>& perm);
Tensor concat(const std::vector<Tensor>& xs, int axis);
Tensor iota(Scalar dtype, int64_t n);
Tensor fill(Scalar dtype, std::vector<int64_t> shape, const Tensor& value);
Tensor reduceAxis(sema::ReduceKind op, const Tensor& x, int axis, bool keepdims);
Tensor reduceLeading(sema::ReduceKind op, const Tensor& x, int count);  // binder reductions
Tensor matmul(const Tensor& a, const Tensor& b);
// matmul(a, permute(w, [1, 0])) without forming the transpose: a [..L, K], w [N, K].
Tensor matmulTransposed(const Tensor& a, const Tensor& w);
Tensor gather(const Tensor& table, const Tensor& indices);
// A table of `shape` [V, ..] of zeros with row k of `rows` [indices.., ..]
// added at row clamp(indices[k], 0, V - 1): gather's transpose. Each sum in
// double, rounded once.
Tensor scatterRows(const Tensor& indices, const Tensor& rows, const std::vector<int64_t>& shape);
// x[idx0, idx1, ...] with every subscript a tensor (broadcast together) or a
// scalar; runtime indices are clamped into range.
Tensor advancedIndex(const Tensor& x, const std::vector<Tensor>& idx);
// x[lo:hi, k, ...]: each item a slice (keep) or a scalar index (drop).
struct BasicItem {
  bool slice = false;
  int64_t lo = 0, hi = 0;  // slice
  int64_t index = 0;       // index
};
Tensor basicIndex(const Tensor& x, const std::vector<BasicItem>& items);
// `dest` with `x` written from position `start` along `axis` (x's other
// dimensions are dest's); `start` a scalar, or row r's start at start[r];
// positions outside dest are dropped.
Tensor writeSlice(const Tensor& dest, const Tensor& x, const Tensor& start, int axis);
// `dest` with x's point p (its position p along `axis`; x has one row) at
// row rows[p], position positions[p]; in order; points outside dropped.
Tensor writePoints(const Tensor& dest, const Tensor& x, const Tensor& rows, const Tensor& positions, int axis);
Tensor broadcastTo(const Tensor& x, const std::vector<int64_t>& shape);

}  // namespace linnet::reference
