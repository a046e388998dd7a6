// The seeded random values --random-weights binds (nest::randomParam), one
// element at a time: compiled for the host and, unchanged, for the GPU
// (device/cuda/random_fill.cu), so a device that draws them itself binds the
// same bits. Each element is a function of the param's key and its index
// alone (a counter-based generator).
#pragma once

#include <cstdint>

#include "common/hash.h"

namespace linnet::random_value {

// Element `e` of a tensor keyed `key`: base + std * bell, where bell is the
// sum of the hash's four 16-bit quarters, each uniform on [0, 1), centred
// and scaled to std 1 (their sum's std is sqrt(4/12)).
LINNET_HOST_DEVICE inline double at(std::uint64_t key, std::uint64_t e, double base, double std) {
  constexpr double kSqrt3 = 1.7320508075688772;  // the double nearest sqrt(3)
  std::uint64_t h = splitmix64(key + e);
  double sum = static_cast<double>(h & 0xffff) + static_cast<double>((h >> 16) & 0xffff) +
               static_cast<double>((h >> 32) & 0xffff) + static_cast<double>(h >> 48);
  return base + std * ((sum / 65536.0 - 2.0) * kSqrt3);
}

}  // namespace linnet::random_value
