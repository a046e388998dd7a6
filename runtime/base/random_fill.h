// A run of seeded random values (random_value.h) as a device stores them:
// nest::randomParam describes each param's, and a device draws them into
// its own memory (device::Device::fillRandom), on the host with
// drawRandom or, for a GPU, with a kernel of its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "common/dtype.h"

namespace linnet {

struct RandomFill {
  DType dtype = DType::F32;  // f32, f64, bf16 or f16 (randomFillable)
  std::uint64_t count = 0;   // elements
  std::uint64_t key = 0;     // the tensor's key (nest::randomParam: seed and path)
  double base = 0, std = 0;  // element e is base + std * bell(key, e), rounded to dtype once
};

// Whether drawRandom takes `dtype`: the float types.
bool randomFillable(DType dtype);

// The fill's `count` elements into `out` (count * byteSize(dtype) bytes),
// rounded to nearest even, on every core.
void drawRandom(const RandomFill& fill, std::span<std::byte> out);

}  // namespace linnet
