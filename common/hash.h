// Hashes that are the same on every build and machine (std::hash is not),
// for keys kept on disk (the artifact cache), content keys (the server's
// page cache) and seeded random values (nest::randomParam).
#pragma once

#include <cstdint>
#include <string_view>

// splitmix64 is also compiled for the GPU (runtime/device/cuda/random_fill.cu).
#if defined(__CUDACC__)
#define LINNET_HOST_DEVICE __host__ __device__
#else
#define LINNET_HOST_DEVICE
#endif

namespace linnet {

inline constexpr std::uint64_t kFnvOffset = 0xcbf29ce484222325ull;

// FNV-1a, 64-bit, over `bytes`, continuing from `h`.
inline std::uint64_t fnv1a(std::string_view bytes, std::uint64_t h = kFnvOffset) {
  for (unsigned char c : bytes) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// FNV-1a over a number's 8 bytes, least significant first.
inline std::uint64_t fnv1a(std::uint64_t value, std::uint64_t h) {
  for (int b = 0; b < 8; ++b) h = (h ^ ((value >> (8 * b)) & 0xff)) * 0x100000001b3ull;
  return h;
}

// splitmix64's finalizer: a bijection on 64 bits that mixes every input bit
// into every output bit, so consecutive inputs give outputs that pass as
// independent uniforms.
LINNET_HOST_DEVICE inline std::uint64_t splitmix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace linnet
