#include "gguf/types.h"

#include <fmt/format.h>

#include <bit>
#include <cstring>

#include "gguf/error.h"

// Results must equal ggml's bit for bit: every product and sum is rounded on
// its own, as in ggml's reference C and numpy. Forbid fusing a*b+c into one
// fma where the target has it.
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

static_assert(std::endian::native == std::endian::little,
              "linnet_gguf reads little-endian files in place; big-endian hosts are unsupported");

namespace linnet::gguf {

namespace {

constexpr std::uint32_t QK_K = 256;

constexpr TypeTraits kTypes[] = {
    {GgmlType::F32, "F32", 1, 4, true},
    {GgmlType::F16, "F16", 1, 2, true},
    {GgmlType::Q4_0, "Q4_0", 32, 2 + 16, true},
    {GgmlType::Q4_1, "Q4_1", 32, 2 + 2 + 16, true},
    {GgmlType::Q5_0, "Q5_0", 32, 2 + 4 + 16, true},
    {GgmlType::Q5_1, "Q5_1", 32, 2 + 2 + 4 + 16, true},
    {GgmlType::Q8_0, "Q8_0", 32, 2 + 32, true},
    {GgmlType::Q8_1, "Q8_1", 32, 4 + 4 + 32, false},
    {GgmlType::Q2_K, "Q2_K", QK_K, 2 + 2 + QK_K / 16 + QK_K / 4, true},
    {GgmlType::Q3_K, "Q3_K", QK_K, 2 + QK_K / 4 + QK_K / 8 + 12, true},
    {GgmlType::Q4_K, "Q4_K", QK_K, 2 + 2 + QK_K / 2 + 12, true},
    {GgmlType::Q5_K, "Q5_K", QK_K, 2 + 2 + QK_K / 2 + QK_K / 8 + 12, true},
    {GgmlType::Q6_K, "Q6_K", QK_K, 2 + QK_K / 2 + QK_K / 4 + QK_K / 16, true},
    {GgmlType::Q8_K, "Q8_K", QK_K, 4 + QK_K + QK_K / 8, false},
    {GgmlType::IQ2_XXS, "IQ2_XXS", QK_K, 2 + QK_K / 4, false},
    {GgmlType::IQ2_XS, "IQ2_XS", QK_K, 2 + QK_K / 4 + QK_K / 32, false},
    {GgmlType::IQ3_XXS, "IQ3_XXS", QK_K, 2 + QK_K / 4 + QK_K / 8, false},
    {GgmlType::IQ1_S, "IQ1_S", QK_K, 2 + QK_K / 8 + QK_K / 16, false},
    {GgmlType::IQ4_NL, "IQ4_NL", 32, 2 + 16, false},
    {GgmlType::IQ3_S, "IQ3_S", QK_K, 2 + QK_K / 4 + QK_K / 8 + QK_K / 32 + 4, false},
    {GgmlType::IQ2_S, "IQ2_S", QK_K, 2 + QK_K / 4 + QK_K / 16, false},
    {GgmlType::IQ4_XS, "IQ4_XS", QK_K, 2 + 2 + QK_K / 2 + QK_K / 64, false},
    {GgmlType::I8, "I8", 1, 1, false},
    {GgmlType::I16, "I16", 1, 2, false},
    {GgmlType::I32, "I32", 1, 4, false},
    {GgmlType::I64, "I64", 1, 8, false},
    {GgmlType::F64, "F64", 1, 8, true},
    {GgmlType::IQ1_M, "IQ1_M", QK_K, QK_K / 8 + QK_K / 16 + QK_K / 32, false},
    {GgmlType::BF16, "BF16", 1, 2, true},
    {GgmlType::TQ1_0, "TQ1_0", QK_K, 2 + 4 * 13, false},
    {GgmlType::TQ2_0, "TQ2_0", QK_K, 2 + 64, false},
    {GgmlType::MXFP4, "MXFP4", 32, 1 + 16, false},
    {GgmlType::NVFP4, "NVFP4", 64, 4 + 32, false},
    {GgmlType::Q1_0, "Q1_0", 128, 2 + 16, false},
};

inline std::uint16_t u16At(const std::uint8_t* p) {
  std::uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
inline float halfAt(const std::uint8_t* p) { return f16ToF32(u16At(p)); }

// One function per type: decode `nb` blocks from x into y, following ggml's
// dequantize_row_* (ggml-quants.c) operation for operation.

void deqQ4_0(const std::uint8_t* x, std::size_t nb, float* y) {
  for (std::size_t i = 0; i < nb; ++i, x += 18, y += 32) {
    const float d = halfAt(x);
    const std::uint8_t* qs = x + 2;
    for (int j = 0; j < 16; ++j) {
      const int x0 = (qs[j] & 0x0F) - 8;
      const int x1 = (qs[j] >> 4) - 8;
      y[j] = static_cast<float>(x0) * d;
      y[j + 16] = static_cast<float>(x1) * d;
    }
  }
}

void deqQ4_1(const std::uint8_t* x, std::size_t nb, float* y) {
  for (std::size_t i = 0; i < nb; ++i, x += 20, y += 32) {
    const float d = halfAt(x);
    const float m = halfAt(x + 2);
    const std::uint8_t* qs = x + 4;
    for (int j = 0; j < 16; ++j) {
      const int x0 = qs[j] & 0x0F;
      const int x1 = qs[j] >> 4;
      y[j] = static_cast<float>(x0) * d + m;
      y[j + 16] = static_cast<float>(x1) * d + m;
    }
  }
}

void deqQ5_0(const std::uint8_t* x, std::size_t nb, float* y) {
  for (std::size_t i = 0; i < nb; ++i, x += 22, y += 32) {
    const float d = halfAt(x);
    std::uint32_t qh;
    std::memcpy(&qh, x + 2, 4);
    const std::uint8_t* qs = x + 6;
    for (int j = 0; j < 16; ++j) {
      const std::uint8_t xh0 = static_cast<std::uint8_t>(((qh >> (j + 0)) << 4) & 0x10);
      const std::uint8_t xh1 = static_cast<std::uint8_t>((qh >> (j + 12)) & 0x10);
      const int x0 = ((qs[j] & 0x0F) | xh0) - 16;
      const int x1 = ((qs[j] >> 4) | xh1) - 16;
      y[j] = static_cast<float>(x0) * d;
      y[j + 16] = static_cast<float>(x1) * d;
    }
  }
}

void deqQ5_1(const std::uint8_t* x, std::size_t nb, float* y) {
  for (std::size_t i = 0; i < nb; ++i, x += 24, y += 32) {
    const float d = halfAt(x);
    const float m = halfAt(x + 2);
    std::uint32_t qh;
    std::memcpy(&qh, x + 4, 4);
    const std::uint8_t* qs = x + 8;
    for (int j = 0; j < 16; ++j) {
      const std::uint8_t xh0 = static_cast<std::uint8_t>(((qh >> (j + 0)) << 4) & 0x10);
      const std::uint8_t xh1 = static_cast<std::uint8_t>((qh >> (j + 12)) & 0x10);
      const int x0 = (qs[j] & 0x0F) | xh0;
      const int x1 = (qs[j] >> 4) | xh1;
      y[j] = static_cast<float>(x0) * d + m;
      y[j + 16] = static_cast<float>(x1) * d + m;
    }
  }
}

void deqQ8_0(const std::uint8_t* x, std::size_t nb, float* y) {
  for (std::size_t i = 0; i < nb; ++i, x += 34, y += 32) {
    const float d = halfAt(x);
    for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(static_cast<std::int8_t>(x[2 + j])) * d;
  }
}

// block_q2_K: scales[16] (low nibble: scale, high nibble: min), qs[64]
// (2-bit quants), d, dmin.
void deqQ2_K(const std::uint8_t* x, std::size_t nb, float* y) {
  for (std::size_t i = 0; i < nb; ++i, x += 84) {
    const std::uint8_t* scales = x;
    const std::uint8_t* q = x + 16;
    const float d = halfAt(x + 80);
    const float min = halfAt(x + 82);
    int is = 0;
    for (std::uint32_t n = 0; n < QK_K; n += 128) {
      int shift = 0;
      for (int j = 0; j < 4; ++j) {
        std::uint8_t sc = scales[is++];
        float dl = d * static_cast<float>(sc & 0xF);
        float ml = min * static_cast<float>(sc >> 4);
        for (int l = 0; l < 16; ++l) *y++ = dl * static_cast<float>((q[l] >> shift) & 3) - ml;
        sc = scales[is++];
        dl = d * static_cast<float>(sc & 0xF);
        ml = min * static_cast<float>(sc >> 4);
        for (int l = 0; l < 16; ++l) *y++ = dl * static_cast<float>((q[l + 16] >> shift) & 3) - ml;
        shift += 2;
      }
      q += 32;
    }
  }
}

// block_q3_K: hmask[32] (high bit, set = no offset), qs[64] (low 2 bits),
// scales[12] (16 6-bit scales, biased by 32), d.
void deqQ3_K(const std::uint8_t* x, std::size_t nb, float* y) {
  constexpr std::uint32_t kmask1 = 0x03030303, kmask2 = 0x0f0f0f0f;
  for (std::size_t i = 0; i < nb; ++i, x += 110) {
    const std::uint8_t* hm = x;
    const std::uint8_t* q = x + 32;
    const float dAll = halfAt(x + 108);
    std::uint32_t aux[4];
    std::memcpy(aux, x + 96, 12);
    const std::uint32_t tmp = aux[2];
    aux[2] = ((aux[0] >> 4) & kmask2) | (((tmp >> 4) & kmask1) << 4);
    aux[3] = ((aux[1] >> 4) & kmask2) | (((tmp >> 6) & kmask1) << 4);
    aux[0] = (aux[0] & kmask2) | (((tmp >> 0) & kmask1) << 4);
    aux[1] = (aux[1] & kmask2) | (((tmp >> 2) & kmask1) << 4);
    std::int8_t scales[16];
    std::memcpy(scales, aux, 16);
    int is = 0;
    std::uint8_t m = 1;
    for (std::uint32_t n = 0; n < QK_K; n += 128) {
      int shift = 0;
      for (int j = 0; j < 4; ++j) {
        float dl = dAll * static_cast<float>(scales[is++] - 32);
        for (int l = 0; l < 16; ++l)
          *y++ = dl * static_cast<float>(((q[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4));
        dl = dAll * static_cast<float>(scales[is++] - 32);
        for (int l = 0; l < 16; ++l)
          *y++ = dl * static_cast<float>(((q[l + 16] >> shift) & 3) - ((hm[l + 16] & m) ? 0 : 4));
        shift += 2;
        m = static_cast<std::uint8_t>(m << 1);
      }
      q += 32;
    }
  }
}

// The 8 (scale, min) pairs of Q4_K/Q5_K, 6 bits each, packed in 12 bytes:
// bytes 0-3 hold scales 0-3 in their low 6 bits, bytes 4-7 mins 0-3; scales
// and mins 4-7 take their low 4 bits from the nibbles of bytes 8-11 and their
// high 2 bits from the top 2 bits of bytes 0-3 (scales) and 4-7 (mins).
inline void scaleMinK4(int j, const std::uint8_t* q, std::uint8_t& d, std::uint8_t& m) {
  if (j < 4) {
    d = q[j] & 63;
    m = q[j + 4] & 63;
  } else {
    d = static_cast<std::uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    m = static_cast<std::uint8_t>((q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4));
  }
}

// block_q4_K: d, dmin, scales[12], qs[128]: 4 groups of 64 values, each a
// low-nibble sub-block of 32 and a high-nibble sub-block of 32.
void deqQ4_K(const std::uint8_t* x, std::size_t nb, float* y) {
  for (std::size_t i = 0; i < nb; ++i, x += 144) {
    const float d = halfAt(x);
    const float min = halfAt(x + 2);
    const std::uint8_t* scales = x + 4;
    const std::uint8_t* q = x + 16;
    int is = 0;
    for (std::uint32_t j = 0; j < QK_K; j += 64) {
      std::uint8_t sc, m;
      scaleMinK4(is + 0, scales, sc, m);
      const float d1 = d * static_cast<float>(sc);
      const float m1 = min * static_cast<float>(m);
      scaleMinK4(is + 1, scales, sc, m);
      const float d2 = d * static_cast<float>(sc);
      const float m2 = min * static_cast<float>(m);
      for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] & 0xF) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
      q += 32;
      is += 2;
    }
  }
}

// block_q5_K: d, dmin, scales[12], qh[32] (5th bits), qs[128].
void deqQ5_K(const std::uint8_t* x, std::size_t nb, float* y) {
  for (std::size_t i = 0; i < nb; ++i, x += 176) {
    const float d = halfAt(x);
    const float min = halfAt(x + 2);
    const std::uint8_t* scales = x + 4;
    const std::uint8_t* qh = x + 16;
    const std::uint8_t* ql = x + 48;
    int is = 0;
    unsigned u1 = 1, u2 = 2;
    for (std::uint32_t j = 0; j < QK_K; j += 64) {
      std::uint8_t sc, m;
      scaleMinK4(is + 0, scales, sc, m);
      const float d1 = d * static_cast<float>(sc);
      const float m1 = min * static_cast<float>(m);
      scaleMinK4(is + 1, scales, sc, m);
      const float d2 = d * static_cast<float>(sc);
      const float m2 = min * static_cast<float>(m);
      for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>((ql[l] & 0xF) + ((qh[l] & u1) ? 16 : 0)) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>((ql[l] >> 4) + ((qh[l] & u2) ? 16 : 0)) - m2;
      ql += 32;
      is += 2;
      u1 <<= 2;
      u2 <<= 2;
    }
  }
}

// block_q6_K: ql[128] (low 4 bits), qh[64] (high 2 bits), scales[16]
// (int8, one per 16 values), d. Each half of 128 values takes 64 bytes of
// ql and 32 of qh: value l + 32k (k = 0..3) is low nibble (k = 0, 1) or high
// nibble (k = 2, 3) of ql[l + 32 (k & 1)] with bits 2k..2k+1 of qh[l].
void deqQ6_K(const std::uint8_t* x, std::size_t nb, float* y) {
  for (std::size_t i = 0; i < nb; ++i, x += 210) {
    const std::uint8_t* ql = x;
    const std::uint8_t* qh = x + 128;
    const std::int8_t* sc = reinterpret_cast<const std::int8_t*>(x + 192);
    const float d = halfAt(x + 208);
    for (std::uint32_t n = 0; n < QK_K; n += 128) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = static_cast<std::int8_t>((ql[l + 0] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = static_cast<std::int8_t>((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = static_cast<std::int8_t>((ql[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = static_cast<std::int8_t>((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l + 0] = d * static_cast<float>(sc[is + 0]) * static_cast<float>(q1);
        y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
        y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
        y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
      }
      y += 128;
      ql += 64;
      qh += 32;
      sc += 8;
    }
  }
}

}  // namespace

const TypeTraits* typeTraits(std::uint32_t id) {
  for (const TypeTraits& t : kTypes)
    if (static_cast<std::uint32_t>(t.type) == id) return &t;
  return nullptr;
}

const TypeTraits& typeTraits(GgmlType type) {
  const TypeTraits* t = typeTraits(static_cast<std::uint32_t>(type));
  if (!t) throw Error(fmt::format("unknown ggml type {}", static_cast<std::uint32_t>(type)));
  return *t;
}

std::string typeName(std::uint32_t id) {
  const TypeTraits* t = typeTraits(id);
  return t ? std::string(t->name) : fmt::format("unknown type {}", id);
}

std::string dequantizableTypes() {
  std::string s;
  for (const TypeTraits& t : kTypes) {
    if (!t.dequantizable) continue;
    if (!s.empty()) s += ", ";
    s += t.name;
  }
  return s;
}

void dequantize(GgmlType type, std::span<const std::byte> src, std::span<float> dst) {
  const TypeTraits& t = typeTraits(type);
  if (!t.dequantizable)
    throw Error(fmt::format("dequantizing {} is not supported (supported: {})", t.name, dequantizableTypes()));
  if (dst.size() % t.blockSize != 0)
    throw Error(fmt::format("{} values of {} are not whole blocks of {}", dst.size(), t.name, t.blockSize));
  const std::size_t nb = dst.size() / t.blockSize;
  if (src.size() / t.typeSize != nb || src.size() % t.typeSize != 0)
    throw Error(fmt::format("{} bytes of {} do not hold {} values ({} blocks of {} bytes)", src.size(), t.name,
                            dst.size(), nb, t.typeSize));
  if (nb == 0) return;
  const auto* x = reinterpret_cast<const std::uint8_t*>(src.data());
  float* y = dst.data();
  switch (type) {
    case GgmlType::F32:
      std::memcpy(y, x, nb * 4);
      return;
    case GgmlType::F16:
      for (std::size_t i = 0; i < nb; ++i) y[i] = f16ToF32(u16At(x + 2 * i));
      return;
    case GgmlType::BF16:
      for (std::size_t i = 0; i < nb; ++i) y[i] = bf16ToF32(u16At(x + 2 * i));
      return;
    case GgmlType::F64:
      for (std::size_t i = 0; i < nb; ++i) {
        double v;
        std::memcpy(&v, x + 8 * i, 8);
        y[i] = static_cast<float>(v);
      }
      return;
    case GgmlType::Q4_0: return deqQ4_0(x, nb, y);
    case GgmlType::Q4_1: return deqQ4_1(x, nb, y);
    case GgmlType::Q5_0: return deqQ5_0(x, nb, y);
    case GgmlType::Q5_1: return deqQ5_1(x, nb, y);
    case GgmlType::Q8_0: return deqQ8_0(x, nb, y);
    case GgmlType::Q2_K: return deqQ2_K(x, nb, y);
    case GgmlType::Q3_K: return deqQ3_K(x, nb, y);
    case GgmlType::Q4_K: return deqQ4_K(x, nb, y);
    case GgmlType::Q5_K: return deqQ5_K(x, nb, y);
    case GgmlType::Q6_K: return deqQ6_K(x, nb, y);
    default: break;
  }
  throw Error(fmt::format("dequantizing {} is not supported", t.name));
}

std::optional<DType> plainDType(GgmlType type) {
  switch (type) {
    case GgmlType::F32: return DType::F32;
    case GgmlType::F16: return DType::F16;
    case GgmlType::BF16: return DType::BF16;
    case GgmlType::F64: return DType::F64;
    case GgmlType::I8: return DType::I8;
    case GgmlType::I16: return DType::I16;
    case GgmlType::I32: return DType::I32;
    case GgmlType::I64: return DType::I64;
    default: return std::nullopt;
  }
}

bool isHandOutDType(DType t) { return t == DType::F32 || t == DType::BF16 || t == DType::F16; }

}  // namespace linnet::gguf
