// The runtime's tensor, what linnet::nest takes and returns: an element type,
// a shape, and the elements' bytes, contiguous in C order and little-endian,
// owned and 64-byte aligned. That is the layout compiled code reads and
// writes (runtime/artifact/abi.h), so calls hand the bytes over as they are.
// A copy copies the bytes: a Tensor is a value, like std::vector.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/dtype.h"

namespace linnet::nest {

using linnet::DType;

class Tensor {
 public:
  DType dtype = DType::F32;
  std::vector<int64_t> shape;  // empty: a scalar
  // A literal (`--input pos=3`): an i64 or f32 scalar that takes the dtype
  // of the parameter it is passed to.
  bool weak = false;

  Tensor();  // an f32 scalar 0
  Tensor(const Tensor& other);
  Tensor& operator=(const Tensor& other);
  Tensor(Tensor&&) noexcept = default;
  Tensor& operator=(Tensor&&) noexcept = default;

  static Tensor zeros(DType dtype, std::vector<int64_t> shape);
  // Copies `bytes`, which must hold exactly the elements of that shape.
  static Tensor fromBytes(DType dtype, std::vector<int64_t> shape, std::span<const std::byte> bytes);
  // From values converted to `dtype`: ints wrapped, floats rounded to nearest
  // even (bf16 and f16 through f32), bools 0 or 1.
  static Tensor fromInts(DType dtype, std::vector<int64_t> shape, const std::vector<int64_t>& values);
  static Tensor fromFloats(DType dtype, std::vector<int64_t> shape, const std::vector<double>& values);
  static Tensor scalarI(DType dtype, int64_t value, bool weak = false);
  static Tensor scalarF(DType dtype, double value, bool weak = false);

  int64_t size() const;  // elements
  int rank() const { return static_cast<int>(shape.size()); }
  std::size_t byteSize() const;
  bool isFloat() const { return linnet::isFloat(dtype); }
  std::byte* data() { return bytes_.get(); }
  const std::byte* data() const { return bytes_.get(); }
  std::span<std::byte> bytes() { return {data(), byteSize()}; }
  std::span<const std::byte> bytes() const { return {data(), byteSize()}; }

  // Element k converted: a float's value, an int's or bool's as a double;
  // asInt truncates floats.
  double asDouble(int64_t k) const;
  int64_t asInt(int64_t k) const;
  void set(int64_t k, double value);  // converted as fromFloats does
  void setInt(int64_t k, int64_t value);
  std::vector<double> toFloats() const;
  std::vector<int64_t> toInts() const;

  std::string describe() const;  // `Tensor[2, 3; f32]`; a scalar `Tensor[; i32]`

 private:
  struct Free {
    std::size_t bytes;  // as allocated (nest/tensor_storage.h); value-initialized to 0
    void operator()(std::byte* p) const;
  };
  void allocate();
  std::unique_ptr<std::byte[], Free> bytes_;
};

// Alignment of every Tensor's bytes: what compiled code's own allocations use.
inline constexpr std::size_t kTensorAlignment = 64;

// One element of `dtype` at `at` (little-endian), as a double or an int64,
// and back; the conversions Tensor uses.
double loadElement(DType dtype, const std::byte* at);
int64_t loadIntElement(DType dtype, const std::byte* at);
void storeElement(DType dtype, double value, std::byte* at);
void storeIntElement(DType dtype, int64_t value, std::byte* at);

}  // namespace linnet::nest
