// --random-weights' values (nest::randomParam): a function of (seed, path,
// element) alone, scaled like trained weights, the same however many cores
// drew them, and the same drawn into a device's buffer.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "base/half.h"
#include "device/host/host.h"
#include "nest/params.h"

using linnet::DType;
using linnet::nest::ParamInfo;
using linnet::nest::randomParam;
using linnet::nest::Tensor;

namespace {

struct Moments {
  double mean = 0, std = 0, maxAbs = 0;
};

Moments moments(const Tensor& t) {
  Moments m;
  for (int64_t e = 0; e < t.size(); ++e) m.mean += t.asDouble(e);
  m.mean /= static_cast<double>(t.size());
  for (int64_t e = 0; e < t.size(); ++e) {
    double d = t.asDouble(e) - m.mean;
    m.std += d * d;
    m.maxAbs = std::max(m.maxAbs, std::abs(d));
  }
  m.std = std::sqrt(m.std / static_cast<double>(t.size()));
  return m;
}

bool sameBytes(const Tensor& a, const Tensor& b) {
  return a.byteSize() == b.byteSize() && std::memcmp(a.data(), b.data(), a.byteSize()) == 0;
}

}  // namespace

TEST_CASE("random params are scaled like trained weights", "[random_params]") {
  // 3 Mi values: drawn by several threads where there are cores.
  Tensor w = randomParam(ParamInfo{"w", {1536, 2048}, DType::F32, std::nullopt}, 7);
  Moments m = moments(w);
  CHECK(std::abs(m.mean) < 1e-4);
  CHECK(std::abs(m.std - 0.02) < 2e-4);
  // Four uniforms summed: bounded by 2 sqrt(3) standard deviations.
  CHECK(m.maxAbs <= 0.02 * 2 * std::sqrt(3.0) + 1e-6);
  CHECK(m.maxAbs > 0.02 * 2.5);

  Tensor norm = randomParam(ParamInfo{"norm", {4096}, DType::F32, std::nullopt}, 7);
  Moments n = moments(norm);
  CHECK(std::abs(n.mean - 1.0) < 2e-3);
  CHECK(std::abs(n.std - 0.02) < 2e-3);

  Tensor ids = randomParam(ParamInfo{"ids", {16}, DType::I32, std::nullopt}, 7);
  for (int64_t e = 0; e < ids.size(); ++e) CHECK(ids.asInt(e) == 0);
}

TEST_CASE("random params depend on the seed, the path and the element only", "[random_params]") {
  ParamInfo big{"w", {1024, 3000}, DType::F32, std::nullopt};
  Tensor a = randomParam(big, 1);
  CHECK(sameBytes(a, randomParam(big, 1)));
  CHECK_FALSE(sameBytes(a, randomParam(big, 2)));
  CHECK_FALSE(sameBytes(a, randomParam(ParamInfo{"v", {1024, 3000}, DType::F32, std::nullopt}, 1)));
  // A smaller tensor (one thread) is the bigger one's first elements.
  Tensor small = randomParam(ParamInfo{"w", {7, 5}, DType::F32, std::nullopt}, 1);
  CHECK(std::memcmp(small.data(), a.data(), small.byteSize()) == 0);
  // Other dtypes are the f32 values rounded.
  Tensor b = randomParam(ParamInfo{"w", {1024, 3000}, DType::BF16, std::nullopt}, 1);
  Tensor h = randomParam(ParamInfo{"w", {1024, 3000}, DType::F16, std::nullopt}, 1);
  const float* f = reinterpret_cast<const float*>(a.data());
  const uint16_t* bb = reinterpret_cast<const uint16_t*>(b.data());
  const uint16_t* hb = reinterpret_cast<const uint16_t*>(h.data());
  for (int64_t e : {int64_t{0}, int64_t{1}, int64_t{1} << 20, a.size() - 1}) {
    CHECK(bb[e] == linnet::half::f32ToBf16(f[e]));
    CHECK(hb[e] == linnet::half::f32ToF16(f[e]));
  }
}

TEST_CASE("a device draws random params into its buffers with the same bits", "[random_params]") {
  // The host device draws in place; the CUDA device's kernel is held to the
  // same bits by cuda_fake_device_test.cpp and, on a GPU, cuda_gpu_test.cpp.
  std::unique_ptr<linnet::device::Device> device = linnet::device::host::driver().create();
  for (DType t : {DType::F32, DType::BF16, DType::F16, DType::F64}) {
    ParamInfo p{"layers.3.w", {40, 30}, t, std::nullopt};
    Tensor want = randomParam(p, 11);
    std::size_t size = linnet::byteSize(t), offset = 8 * size;
    linnet::device::BufferPtr b = device->allocate(want.byteSize() + 16 * size);
    device->fillRandom(*b, offset, linnet::nest::randomFill(p, 11));
    const std::byte* got = static_cast<const std::byte*>(b->address());
    CHECK(std::memcmp(got + offset, want.data(), want.byteSize()) == 0);
    for (std::size_t i = 0; i < offset; ++i) CHECK(got[i] == std::byte{0});
    for (std::size_t i = offset + want.byteSize(); i < b->size(); ++i) CHECK(got[i] == std::byte{0});
    CHECK_THROWS_AS(device->fillRandom(*b, offset + 9 * size, linnet::nest::randomFill(p, 11)), std::out_of_range);
  }
}
