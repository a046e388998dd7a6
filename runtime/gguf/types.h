// ggml tensor types: their block layouts, dequantization to f32 exactly as
// ggml (and llama.cpp's Python package gguf.quants) computes it, and the
// f32 -> bf16 / f16 rounding used to hand tensors out in a model's dtype.
//
// Dequantized: F32, F16, BF16, F64 (rounded to nearest f32), Q4_0, Q4_1,
// Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K. Every other ggml type is
// known by size (so files holding it parse and its bytes can be read) but
// dequantizing it is an error.
#pragma once

#include "base/half.h"
#include "common/dtype.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace linnet::gguf {

// Values are ggml's type ids as stored in GGUF files.
enum class GgmlType : std::uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
  NVFP4 = 40,
  Q1_0 = 41,
};

struct TypeTraits {
  GgmlType type;
  std::string_view name;    // ggml's spelling: "Q4_K", "BF16"
  std::uint32_t blockSize;  // elements per block (1 for plain types)
  std::uint32_t typeSize;   // bytes per block
  bool dequantizable;       // dequantize() supports it
};

// nullptr for an id ggml does not define (or no longer does, e.g. 4 and 5).
const TypeTraits* typeTraits(std::uint32_t id);
const TypeTraits& typeTraits(GgmlType type);
// "Q4_K", or "unknown type 99".
std::string typeName(std::uint32_t id);
inline std::string typeName(GgmlType t) { return typeName(static_cast<std::uint32_t>(t)); }
// "F32, F16, BF16, ..." (the dequantizable ones), for messages.
std::string dequantizableTypes();

// Decodes `dst.size()` elements of `type` from `src` into f32. dst.size() must
// be a multiple of the type's block size and src exactly the bytes of those
// blocks; src needs no alignment. Throws Error for a type that is not
// dequantizable or sizes that do not fit (the caller adds file and tensor to
// its own messages; File::dequantize does).
void dequantize(GgmlType type, std::span<const std::byte> src, std::span<float> dst);

// IEEE conversions, round to nearest even. NaN stays NaN (quiet, sign kept),
// infinities stay infinities, f32 values too large for f16 become infinities,
// and f16 subnormals are produced and read exactly.
using half::f16ToF32;
using half::bf16ToF32;
using half::f32ToF16;
using half::f32ToBf16;

// Tensors are handed out in f32, bf16 or f16 (linnet::DType). The plain
// ggml types are those element types; quantized ones (Q4_K, ...) have none.
std::optional<DType> plainDType(GgmlType type);
// f32, bf16 or f16: the dtypes dequantized tensors can be handed out in.
bool isHandOutDType(DType t);

}  // namespace linnet::gguf
