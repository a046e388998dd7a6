#include "nest/tensor.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

#include "base/half.h"
#include "nest/tensor_storage.h"

namespace linnet::nest {

namespace {

template <class T>
T load(const std::byte* at) {
  T v;
  std::memcpy(&v, at, sizeof v);
  return v;
}

template <class T>
void store(std::byte* at, T v) {
  std::memcpy(at, &v, sizeof v);
}

}  // namespace

double loadElement(DType dtype, const std::byte* at) {
  switch (dtype) {
    case DType::F32: return load<float>(at);
    case DType::F64: return load<double>(at);
    case DType::BF16: return half::bf16ToF32(load<uint16_t>(at));
    case DType::F16: return half::f16ToF32(load<uint16_t>(at));
    default: return static_cast<double>(loadIntElement(dtype, at));
  }
}

int64_t loadIntElement(DType dtype, const std::byte* at) {
  switch (dtype) {
    case DType::I32: return load<int32_t>(at);
    case DType::I64: return load<int64_t>(at);
    case DType::I16: return load<int16_t>(at);
    case DType::I8: return load<int8_t>(at);
    case DType::U8: return load<uint8_t>(at);
    case DType::Bool: return load<uint8_t>(at) != 0;
    default: return static_cast<int64_t>(loadElement(dtype, at));
  }
}

void storeElement(DType dtype, double value, std::byte* at) {
  switch (dtype) {
    case DType::F32: return store(at, static_cast<float>(value));
    case DType::F64: return store(at, value);
    case DType::BF16: return store(at, half::f32ToBf16(static_cast<float>(value)));
    case DType::F16: return store(at, half::f32ToF16(static_cast<float>(value)));
    default: return storeIntElement(dtype, static_cast<int64_t>(value), at);
  }
}

void storeIntElement(DType dtype, int64_t value, std::byte* at) {
  switch (dtype) {
    // Wrapped as the language wraps integers (two's complement).
    case DType::I32: return store(at, static_cast<int32_t>(static_cast<uint32_t>(value)));
    case DType::I64: return store(at, value);
    case DType::I16: return store(at, static_cast<int16_t>(static_cast<uint16_t>(value)));
    case DType::I8: return store(at, static_cast<int8_t>(static_cast<uint8_t>(value)));
    case DType::U8: return store(at, static_cast<uint8_t>(value));
    case DType::Bool: return store(at, static_cast<uint8_t>(value != 0));
    default: return storeElement(dtype, static_cast<double>(value), at);
  }
}

void Tensor::Free::operator()(std::byte* p) const { giveStorage(p, bytes); }

void Tensor::allocate() {
  std::size_t n = std::max<std::size_t>(byteSize(), 1);
  std::size_t rounded = (n + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
  bytes_ = std::unique_ptr<std::byte[], Free>(static_cast<std::byte*>(takeStorage(rounded)), Free{rounded});
}

Tensor::Tensor() {
  allocate();
  std::memset(data(), 0, byteSize());
}

Tensor::Tensor(const Tensor& other) : dtype(other.dtype), shape(other.shape), weak(other.weak) {
  allocate();
  std::memcpy(data(), other.data(), byteSize());
}

Tensor& Tensor::operator=(const Tensor& other) {
  if (this != &other) *this = Tensor(other);
  return *this;
}

Tensor Tensor::zeros(DType dtype, std::vector<int64_t> shape) {
  Tensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  for (int64_t d : t.shape)
    if (d < 0) throw std::invalid_argument(fmt::format("a tensor of shape [{}]", fmt::join(t.shape, ", ")));
  t.allocate();
  std::memset(t.data(), 0, t.byteSize());
  return t;
}

Tensor Tensor::fromBytes(DType dtype, std::vector<int64_t> shape, std::span<const std::byte> bytes) {
  Tensor t = zeros(dtype, std::move(shape));
  if (bytes.size() != t.byteSize())
    throw std::invalid_argument(fmt::format("{} needs {} bytes, not {}", t.describe(), t.byteSize(), bytes.size()));
  if (!bytes.empty()) std::memcpy(t.data(), bytes.data(), bytes.size());
  return t;
}

Tensor Tensor::fromInts(DType dtype, std::vector<int64_t> shape, const std::vector<int64_t>& values) {
  Tensor t = zeros(dtype, std::move(shape));
  if (static_cast<int64_t>(values.size()) != t.size())
    throw std::invalid_argument(fmt::format("{} has {} elements, not {}", t.describe(), t.size(), values.size()));
  for (int64_t k = 0; k < t.size(); ++k) t.setInt(k, values[k]);
  return t;
}

Tensor Tensor::fromFloats(DType dtype, std::vector<int64_t> shape, const std::vector<double>& values) {
  Tensor t = zeros(dtype, std::move(shape));
  if (static_cast<int64_t>(values.size()) != t.size())
    throw std::invalid_argument(fmt::format("{} has {} elements, not {}", t.describe(), t.size(), values.size()));
  for (int64_t k = 0; k < t.size(); ++k) t.set(k, values[k]);
  return t;
}

Tensor Tensor::scalarI(DType dtype, int64_t value, bool weak) {
  Tensor t = fromInts(dtype, {}, {value});
  t.weak = weak;
  return t;
}

Tensor Tensor::scalarF(DType dtype, double value, bool weak) {
  Tensor t = fromFloats(dtype, {}, {value});
  t.weak = weak;
  return t;
}

int64_t Tensor::size() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::size_t Tensor::byteSize() const { return static_cast<std::size_t>(size()) * linnet::byteSize(dtype); }

double Tensor::asDouble(int64_t k) const { return loadElement(dtype, data() + k * linnet::byteSize(dtype)); }
int64_t Tensor::asInt(int64_t k) const { return loadIntElement(dtype, data() + k * linnet::byteSize(dtype)); }
void Tensor::set(int64_t k, double value) { storeElement(dtype, value, data() + k * linnet::byteSize(dtype)); }
void Tensor::setInt(int64_t k, int64_t value) { storeIntElement(dtype, value, data() + k * linnet::byteSize(dtype)); }

std::vector<double> Tensor::toFloats() const {
  std::vector<double> out(static_cast<std::size_t>(size()));
  for (int64_t k = 0; k < size(); ++k) out[k] = asDouble(k);
  return out;
}

std::vector<int64_t> Tensor::toInts() const {
  std::vector<int64_t> out(static_cast<std::size_t>(size()));
  for (int64_t k = 0; k < size(); ++k) out[k] = asInt(k);
  return out;
}

std::string Tensor::describe() const {
  return fmt::format("Tensor[{}; {}]", fmt::join(shape, ", "), linnet::name(dtype));
}

}  // namespace linnet::nest
