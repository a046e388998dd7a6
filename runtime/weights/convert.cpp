#include "weights/convert.h"

#include <fmt/format.h>

#include <bit>
#include <cstring>

#include "weights/error.h"

static_assert(std::endian::native == std::endian::little,
              "linnet_weights reads little-endian files in place; big-endian hosts are unsupported");

namespace linnet::weights {

bool canConvert(DType from, DType to) {
  if (from == to) return true;
  auto f = [](DType t) { return t == DType::F32 || t == DType::BF16 || t == DType::F16; };
  return f(from) && f(to);
}

namespace {
float load(DType t, const std::byte* p) {
  if (t == DType::F32) {
    float v;
    std::memcpy(&v, p, 4);
    return v;
  }
  std::uint16_t h;
  std::memcpy(&h, p, 2);
  return t == DType::BF16 ? bf16ToF32(h) : f16ToF32(h);
}
void store(DType t, float v, std::byte* p) {
  if (t == DType::F32) {
    std::memcpy(p, &v, 4);
    return;
  }
  std::uint16_t h = t == DType::BF16 ? f32ToBf16(v) : f32ToF16(v);
  std::memcpy(p, &h, 2);
}
}  // namespace

void convertElements(DType from, std::span<const std::byte> src, DType to, std::span<std::byte> dst) {
  if (!canConvert(from, to))
    throw Error(fmt::format("cannot convert {} to {}: only f32, bf16 and f16 convert among themselves",
                            linnet::name(from), linnet::name(to)));
  std::size_t fs = linnet::byteSize(from), ts = linnet::byteSize(to);
  if (src.size() % fs != 0 || dst.size() / ts != src.size() / fs || dst.size() % ts != 0)
    throw Error(fmt::format("convertElements: {} bytes of {} do not fit {} bytes of {}", src.size(),
                            linnet::name(from), dst.size(), linnet::name(to)));
  if (from == to) {
    if (!src.empty()) std::memcpy(dst.data(), src.data(), src.size());
    return;
  }
  std::size_t n = src.size() / fs;
  for (std::size_t i = 0; i < n; ++i) store(to, load(from, src.data() + i * fs), dst.data() + i * ts);
}

}  // namespace linnet::weights
