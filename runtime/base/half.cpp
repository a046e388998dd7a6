#include "base/half.h"

#include <bit>

namespace linnet::half {

float bf16ToF32(std::uint16_t bits) { return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16); }

std::uint16_t f32ToBf16(float value) {
  std::uint32_t u = std::bit_cast<std::uint32_t>(value);
  if ((u & 0x7fffffffu) > 0x7f800000u)  // NaN: keep sign, force quiet
    return static_cast<std::uint16_t>((u >> 16) | 0x0040u);
  std::uint32_t lsb = (u >> 16) & 1u;
  u += 0x7fffu + lsb;  // ties to even; overflow past the max finite rounds to inf
  return static_cast<std::uint16_t>(u >> 16);
}

float f16ToF32(std::uint16_t h) {
  std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  std::uint32_t exp = (h >> 10) & 0x1fu;
  std::uint32_t mant = h & 0x3ffu;
  std::uint32_t out;
  if (exp == 0x1f) {
    out = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {
    out = sign | ((exp + 112u) << 23) | (mant << 13);
  } else if (mant == 0) {
    out = sign;
  } else {  // subnormal: value = mant * 2^-24, exact in f32
    float v = static_cast<float>(mant) * 0x1p-24f;
    out = sign | std::bit_cast<std::uint32_t>(v);
  }
  return std::bit_cast<float>(out);
}

std::uint16_t f32ToF16(float value) {
  std::uint32_t u = std::bit_cast<std::uint32_t>(value);
  std::uint16_t sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  std::uint32_t absu = u & 0x7fffffffu;
  if (absu > 0x7f800000u)  // NaN
    return static_cast<std::uint16_t>(sign | 0x7e00u | ((absu >> 13) & 0x3ffu));
  if (absu >= 0x477ff000u)  // >= 65520 rounds to inf (and inf itself)
    return static_cast<std::uint16_t>(sign | 0x7c00u);
  if (absu >= 0x38800000u) {  // normal in f16 (>= 2^-14)
    std::uint32_t lsb = (absu >> 13) & 1u;
    std::uint32_t r = absu + 0xfffu + lsb;
    return static_cast<std::uint16_t>(sign | ((r - 0x38000000u) >> 13));
  }
  // Subnormal or zero in f16: round absu's value to a multiple of 2^-24.
  if (absu < 0x33000000u)  // < 2^-25: rounds to zero (exactly 2^-25 ties to even 0)
    return sign;
  std::uint32_t exp = absu >> 23;            // biased f32 exponent, 102..112
  std::uint32_t mant = (absu & 0x7fffffu) | 0x800000u;
  std::uint32_t shift = 126u - exp;          // value = mant * 2^(exp-150); want units of 2^-24
  std::uint32_t q = mant >> shift;
  std::uint32_t rem = mant & ((1u << shift) - 1u);
  std::uint32_t half = 1u << (shift - 1u);
  if (rem > half || (rem == half && (q & 1u))) ++q;
  return static_cast<std::uint16_t>(sign | q);  // q == 0x400 becomes the smallest normal
}

}  // namespace linnet::half
