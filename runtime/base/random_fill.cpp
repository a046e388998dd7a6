#include "base/random_fill.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

#include "base/half.h"
#include "base/random_value.h"

namespace linnet {

namespace {

template <typename Store>
void fillParallel(int64_t n, Store store) {
  const int64_t chunk = int64_t{1} << 20;
  unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  int64_t threads = std::min<int64_t>(cores, (n + chunk - 1) / chunk);
  if (threads <= 1) {
    for (int64_t e = 0; e < n; ++e) store(e);
    return;
  }
  std::atomic<int64_t> next{0};
  std::vector<std::thread> pool;
  for (int64_t t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (int64_t start; (start = next.fetch_add(chunk)) < n;)
        for (int64_t e = start, end = std::min(n, start + chunk); e < end; ++e) store(e);
    });
  for (auto& th : pool) th.join();
}

template <typename T>
void put(std::byte* out, int64_t e, T value) {
  std::memcpy(out + e * static_cast<int64_t>(sizeof(T)), &value, sizeof(T));
}

}  // namespace

bool randomFillable(DType dtype) {
  return dtype == DType::F32 || dtype == DType::F64 || dtype == DType::BF16 || dtype == DType::F16;
}

void drawRandom(const RandomFill& fill, std::span<std::byte> out) {
  if (!randomFillable(fill.dtype) || out.size() != fill.count * byteSize(fill.dtype))
    throw std::invalid_argument("drawRandom: a float dtype and count * its size of bytes");
  auto value = [&](int64_t e) { return random_value::at(fill.key, static_cast<uint64_t>(e), fill.base, fill.std); };
  std::byte* data = out.data();
  int64_t n = static_cast<int64_t>(fill.count);
  switch (fill.dtype) {
    case DType::F32: fillParallel(n, [&](int64_t e) { put(data, e, static_cast<float>(value(e))); }); break;
    case DType::F64: fillParallel(n, [&](int64_t e) { put(data, e, value(e)); }); break;
    case DType::BF16:
      fillParallel(n, [&](int64_t e) { put(data, e, half::f32ToBf16(static_cast<float>(value(e)))); });
      break;
    default:  // F16
      fillParallel(n, [&](int64_t e) { put(data, e, half::f32ToF16(static_cast<float>(value(e)))); });
  }
}

}  // namespace linnet
