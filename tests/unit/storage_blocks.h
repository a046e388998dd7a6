// Random weights in every storage format, for the CPU kernels' tests
// (cpu_kernels_test.cpp, cpu_fast_kernels_test.cpp): the formats with their
// ggml types, one random valid block (every byte random, scales finite),
// strided [N, K] weights, a row dequantized by linnet::gguf, and strided f32
// matrices.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <span>
#include <vector>

#include "compiler/targets/cpu/kernels/linnet_kernels.h"
#include "gguf/types.h"

namespace linnet::storage_test {

using gguf::GgmlType;

struct Format {
  int64_t id;
  const char* name;
  GgmlType ggml;
  bool integer;  // the fast numerics have an integer path for it
};

inline const Format kFormats[] = {
    {LINNET_STORAGE_F32, "f32", GgmlType::F32, false},    {LINNET_STORAGE_F16, "f16", GgmlType::F16, false},
    {LINNET_STORAGE_BF16, "bf16", GgmlType::BF16, false}, {LINNET_STORAGE_Q8_0, "q8_0", GgmlType::Q8_0, true},
    {LINNET_STORAGE_Q4_0, "q4_0", GgmlType::Q4_0, true},  {LINNET_STORAGE_Q4_1, "q4_1", GgmlType::Q4_1, true},
    {LINNET_STORAGE_Q4_K, "q4_k", GgmlType::Q4_K, true},  {LINNET_STORAGE_Q5_K, "q5_k", GgmlType::Q5_K, true},
    {LINNET_STORAGE_Q6_K, "q6_k", GgmlType::Q6_K, true},
    {LINNET_STORAGE_Q5_0, "q5_0", GgmlType::Q5_0, true},  {LINNET_STORAGE_Q5_1, "q5_1", GgmlType::Q5_1, true},
};

inline int64_t blockElements(const Format& f) { return linnet_storage_block_elements[f.id]; }
inline int64_t blockBytes(const Format& f) { return linnet_storage_block_bytes[f.id]; }
inline int64_t rowBytes(const Format& f, int64_t k) { return linnet_storage_row_bytes(f.id, k); }

inline void putU16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }

// A finite f16 scale of either sign, magnitude in [2^-12, 2^-2].
inline uint16_t randomScale(std::mt19937& rng) {
  std::uniform_real_distribution<float> mag(-12.0f, -2.0f);
  float v = std::exp2(mag(rng));
  if (rng() & 1) v = -v;
  return gguf::f32ToF16(v);
}

// One random, valid block of `f` (every byte random, scales finite).
inline void randomBlock(const Format& f, std::mt19937& rng, uint8_t* b) {
  for (int64_t i = 0; i < blockBytes(f); ++i) b[i] = static_cast<uint8_t>(rng());
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  switch (f.id) {
    case LINNET_STORAGE_F32: {
      float v = u(rng);
      std::memcpy(b, &v, 4);
      break;
    }
    case LINNET_STORAGE_F16: putU16(b, gguf::f32ToF16(u(rng))); break;
    case LINNET_STORAGE_BF16: putU16(b, gguf::f32ToBf16(u(rng))); break;
    case LINNET_STORAGE_Q8_0:
    case LINNET_STORAGE_Q4_0:
    case LINNET_STORAGE_Q5_0: putU16(b, randomScale(rng)); break;
    case LINNET_STORAGE_Q4_1:
    case LINNET_STORAGE_Q5_1:
    case LINNET_STORAGE_Q4_K:
    case LINNET_STORAGE_Q5_K:
      putU16(b, randomScale(rng));
      putU16(b + 2, randomScale(rng));
      break;
    case LINNET_STORAGE_Q6_K: putU16(b + 208, randomScale(rng)); break;
    default: FAIL("no random block for format " << f.name);
  }
}

// W [N, K] in format f, row i at `offset + i * rowStride` bytes of a buffer
// (rowStride >= rowBytes; the gaps hold junk).
struct Weights {
  std::vector<uint8_t> bytes;
  int64_t n, k, offset, rowStride;
  const uint8_t* row(int64_t i) const { return bytes.data() + offset + i * rowStride; }
  linnet_memref2 memref() { return {bytes.data(), bytes.data(), offset, {n, rowStride}, {rowStride, 1}}; }
};

inline Weights randomWeights(const Format& f, int64_t n, int64_t k, std::mt19937& rng, int64_t offset = 0,
                             int64_t pad = 0) {
  const int64_t rb = rowBytes(f, k);
  Weights w{std::vector<uint8_t>(static_cast<size_t>(offset + n * (rb + pad) + 1)), n, k, offset, rb + pad};
  for (auto& b : w.bytes) b = static_cast<uint8_t>(rng());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < k / blockElements(f); ++j)
      randomBlock(f, rng, const_cast<uint8_t*>(w.row(i)) + j * blockBytes(f));
  return w;
}

// One row of `k` values in format `f`, dequantized by linnet::gguf (the reference).
inline std::vector<float> dequantRow(const Format& f, const uint8_t* row, int64_t k) {
  std::vector<float> out(static_cast<size_t>(k));
  const auto* src = reinterpret_cast<const std::byte*>(row);
  gguf::dequantize(f.ggml, std::span<const std::byte>(src, static_cast<size_t>(rowBytes(f, k))), out);
  return out;
}

// An f32 matrix [rows, cols] at `offset` with strides (rowStride, colStride).
struct Matrix {
  std::vector<float> data;
  int64_t rows, cols, offset, rowStride, colStride;
  float& at(int64_t i, int64_t j) { return data[static_cast<size_t>(offset + i * rowStride + j * colStride)]; }
  linnet_memref2 memref() { return {data.data(), data.data(), offset, {rows, cols}, {rowStride, colStride}}; }
};

inline Matrix makeMatrix(int64_t rows, int64_t cols, int64_t offset = 0, int64_t rowPad = 0, int64_t colStride = 1,
                         float fill = NAN) {
  const int64_t rowStride = cols * colStride + rowPad;
  return {std::vector<float>(static_cast<size_t>(offset + rows * rowStride + 1), fill), rows, cols, offset,
          rowStride, colStride};
}

}  // namespace linnet::storage_test
