// Half-precision floats (IEEE binary16 and bfloat16) to and from f32, with
// round-to-nearest-even, NaN kept quiet and overflow to infinity. Shared by
// every reader of checkpoint bytes (safetensors, GGUF, .npy).
#pragma once

#include <cstdint>

namespace linnet::half {

float bf16ToF32(std::uint16_t bits);
std::uint16_t f32ToBf16(float value);
float f16ToF32(std::uint16_t bits);
std::uint16_t f32ToF16(float value);

}  // namespace linnet::half
