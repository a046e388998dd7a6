#include "export/quantize.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

#include "base/half.h"

// Bit-exact with the references only when each product and sum is rounded on
// its own: forbid fusing a*b+c into one fma where the target has it.
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace linnet::exporter {

using gguf::GgmlType;

namespace {

constexpr int QK = 32;
constexpr int QK_K = 256;
constexpr float GROUP_MAX_EPS = 1e-15f;

void putHalf(std::byte* at, float v) {
  std::uint16_t h = half::f32ToF16(v);
  std::memcpy(at, &h, 2);
}
float halfAt(const std::byte* at) {
  std::uint16_t h;
  std::memcpy(&h, at, 2);
  return half::f16ToF32(h);
}

// numpy's float -> uint8 for the values these quantizers produce (0 .. 31.5
// before truncation); anything else (NaN, from a scale that overflowed) is
// pinned into range instead of being undefined behaviour.
int truncToLevel(float v, int most) {
  if (!(v >= 0.0f)) return 0;
  if (v >= static_cast<float>(most)) return most;
  return static_cast<int>(v);  // trunc toward zero
}

// --- 32-value blocks, as gguf.quants computes them (numpy, float32) --------

// The first value of largest magnitude, with its sign (numpy's argmax of
// abs, then take_along_axis).
float signedMax(const float* x) {
  int at = 0;
  float best = std::fabs(x[0]);
  for (int j = 1; j < QK; ++j)
    if (std::fabs(x[j]) > best) best = std::fabs(x[j]), at = j;
  return x[at];
}

// np_roundf: round half away from zero.
float roundHalfAway(float n) {
  float a = std::fabs(n);
  float floored = std::floor(a);
  float b = floored + std::floor(2 * (a - floored));
  return n < 0 ? -b : (n > 0 ? b : 0.0f * b);
}

void q8_0Block(const float* x, std::byte* out) {
  float amax = 0.0f;
  for (int j = 0; j < QK; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127;
  const float id = d == 0 ? 0.0f : 1 / d;
  putHalf(out, d);
  for (int j = 0; j < QK; ++j) {
    float q = roundHalfAway(x[j] * id);
    int v = std::isnan(q) ? 0 : static_cast<int>(std::clamp(q, -128.0f, 127.0f));
    out[2 + j] = static_cast<std::byte>(static_cast<std::int8_t>(v));
  }
}

void q4_0Block(const float* x, std::byte* out) {
  const float d = signedMax(x) / -8;
  const float id = d == 0 ? 0.0f : 1 / d;
  putHalf(out, d);
  int q[QK];
  for (int j = 0; j < QK; ++j) q[j] = std::min(15, truncToLevel(x[j] * id + 8.5f, 255));
  for (int j = 0; j < QK / 2; ++j) out[2 + j] = static_cast<std::byte>(q[j] | (q[j + QK / 2] << 4));
}

void q5_0Block(const float* x, std::byte* out) {
  const float d = signedMax(x) / -16;
  const float id = d == 0 ? 0.0f : 1 / d;
  putHalf(out, d);
  int q[QK];
  for (int j = 0; j < QK; ++j) q[j] = std::min(31, truncToLevel(x[j] * id + 16.5f, 255));
  std::uint32_t qh = 0;
  for (int j = 0; j < QK; ++j) qh |= static_cast<std::uint32_t>(q[j] >> 4) << j;
  for (int k = 0; k < 4; ++k) out[2 + k] = static_cast<std::byte>(qh >> (8 * k));
  for (int j = 0; j < QK / 2; ++j)
    out[6 + j] = static_cast<std::byte>(((q[j] & 0x0F) | (q[j + QK / 2] << 4)) & 0xFF);
}

// --- K-quants, transcribed from ggml-quants.c (quantize_row_*_ref) --------

inline int nearest_int(float fval) {
  float val = fval + 12582912.f;
  int i;
  std::memcpy(&i, &val, sizeof(int));
  return (i & 0x007fffff) - 0x00400000;
}

float make_qx_quants(int n, int nmax, const float* x, std::int8_t* L, int rmse_type, const float* qw) {
  float max = 0;
  float amax = 0;
  for (int i = 0; i < n; ++i) {
    float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < GROUP_MAX_EPS) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.f;
  }
  float iscale = -nmax / max;
  if (rmse_type == 0) {
    for (int i = 0; i < n; ++i) {
      int l = nearest_int(iscale * x[i]);
      L[i] = static_cast<std::int8_t>(nmax + std::max(-nmax, std::min(nmax - 1, l)));
    }
    return 1 / iscale;
  }
  bool return_early = false;
  if (rmse_type < 0) {
    rmse_type = -rmse_type;
    return_early = true;
  }
  auto weight = [&](int i) {
    return qw              ? qw[i]
           : rmse_type == 1 ? x[i] * x[i]
           : rmse_type == 2 ? 1
           : rmse_type == 3 ? std::fabs(x[i])
                            : std::sqrt(std::fabs(x[i]));
  };
  float sumlx = 0;
  float suml2 = 0;
  for (int i = 0; i < n; ++i) {
    int l = nearest_int(iscale * x[i]);
    l = std::max(-nmax, std::min(nmax - 1, l));
    L[i] = static_cast<std::int8_t>(l + nmax);
    float w = weight(i);
    sumlx += w * x[i] * l;
    suml2 += w * l * l;
  }
  float scale = suml2 ? sumlx / suml2 : 0.0f;
  if (return_early) return suml2 > 0 ? 0.5f * (scale + 1 / iscale) : 1 / iscale;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(nmax + 0.1f * is) / max;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; ++i) {
      int l = nearest_int(iscale * x[i]);
      l = std::max(-nmax, std::min(nmax - 1, l));
      float w = weight(i);
      sumlx += w * x[i] * l;
      suml2 += w * l * l;
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i) {
        int l = nearest_int(iscale * x[i]);
        L[i] = static_cast<std::int8_t>(nmax + std::max(-nmax, std::min(nmax - 1, l)));
      }
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, std::uint8_t* L, float* the_min,
                       std::uint8_t* Laux, float rmin, float rdelta, int nstep, bool use_mad) {
  float min = x[0];
  float max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    float w = weights[i];
    sum_w += w;
    sum_x += w * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    *the_min = -min;
    return 0.f;
  }
  float iscale = nmax / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    int l = nearest_int(iscale * (x[i] - min));
    L[i] = static_cast<std::uint8_t>(std::max(0, std::min(nmax, l)));
    float diff = scale * L[i] + min - x[i];
    diff = use_mad ? std::fabs(diff) : diff * diff;
    float w = weights[i];
    best_error += w * diff;
  }
  if (nstep < 1) {
    *the_min = -min;
    return scale;
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * is + nmax) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      int l = nearest_int(iscale * (x[i] - min));
      l = std::max(0, std::min(nmax, l));
      Laux[i] = static_cast<std::uint8_t>(l);
      float w = weights[i];
      sum_l += w * l;
      sum_l2 += w * l * l;
      sum_xl += w * l * x[i];
    }
    float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float cur_error = 0;
      for (int i = 0; i < n; ++i) {
        float diff = this_scale * Laux[i] + this_min - x[i];
        diff = use_mad ? std::fabs(diff) : diff * diff;
        float w = weights[i];
        cur_error += w * diff;
      }
      if (cur_error < best_error) {
        for (int i = 0; i < n; ++i) L[i] = Laux[i];
        best_error = cur_error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *the_min = -min;
  return scale;
}

void get_scale_min_k4(int j, const std::uint8_t* q, std::uint8_t* d, std::uint8_t* m) {
  if (j < 4) {
    *d = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *d = static_cast<std::uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *m = static_cast<std::uint8_t>((q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4));
  }
}

// block_q4_K: f16 d, f16 dmin, u8 scales[12], u8 qs[128].
void q4_KBlock(const float* x, std::byte* out) {
  std::uint8_t L[QK_K];
  std::uint8_t Laux[32];
  float weights[32];
  float mins[QK_K / 32];
  float scales[QK_K / 32];
  std::uint8_t sc12[12] = {};

  float max_scale = 0;
  float max_min = 0;
  for (int j = 0; j < QK_K / 32; ++j) {
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
    float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(x[32 * j + l]);
    scales[j] = make_qkx2_quants(32, 15, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, -1.f, 0.1f, 20, false);
    float scale = scales[j];
    if (scale > max_scale) max_scale = scale;
    float min = mins[j];
    if (min > max_min) max_min = min;
  }

  float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  for (int j = 0; j < QK_K / 32; ++j) {
    std::uint8_t ls = static_cast<std::uint8_t>(nearest_int(inv_scale * scales[j]));
    std::uint8_t lm = static_cast<std::uint8_t>(nearest_int(inv_min * mins[j]));
    ls = std::min<std::uint8_t>(63, ls);
    lm = std::min<std::uint8_t>(63, lm);
    if (j < 4) {
      sc12[j] = ls;
      sc12[j + 4] = lm;
    } else {
      sc12[j + 4] = static_cast<std::uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
      sc12[j - 4] |= static_cast<std::uint8_t>((ls >> 4) << 6);
      sc12[j - 0] |= static_cast<std::uint8_t>((lm >> 4) << 6);
    }
  }
  putHalf(out, max_scale / 63.f);
  putHalf(out + 2, max_min / 63.f);
  std::memcpy(out + 4, sc12, 12);
  const float dAll = halfAt(out), dminAll = halfAt(out + 2);

  std::uint8_t sc, m;
  for (int j = 0; j < QK_K / 32; ++j) {
    get_scale_min_k4(j, sc12, &sc, &m);
    const float d = dAll * sc;
    if (!d) continue;
    const float dm = dminAll * m;
    for (int ii = 0; ii < 32; ++ii) {
      int l = nearest_int((x[32 * j + ii] + dm) / d);
      l = std::max(0, std::min(15, l));
      L[32 * j + ii] = static_cast<std::uint8_t>(l);
    }
  }

  std::byte* q = out + 16;
  for (int j = 0; j < QK_K; j += 64) {
    for (int l = 0; l < 32; ++l) q[l] = static_cast<std::byte>(L[j + l] | (L[j + l + 32] << 4));
    q += 32;
  }
}

// block_q6_K: u8 ql[128], u8 qh[64], i8 scales[16], f16 d.
void q6_KBlock(const float* x, std::byte* out) {
  std::int8_t L[QK_K];
  float scales[QK_K / 16];
  std::byte* ql = out;
  std::byte* qh = out + QK_K / 2;
  std::byte* sc = out + QK_K / 2 + QK_K / 4;
  std::byte* dAt = sc + QK_K / 16;

  float max_scale = 0;
  float max_abs_scale = 0;
  for (int ib = 0; ib < QK_K / 16; ++ib) {
    const float scale = make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib, 1, nullptr);
    scales[ib] = scale;
    const float abs_scale = std::fabs(scale);
    if (abs_scale > max_abs_scale) {
      max_abs_scale = abs_scale;
      max_scale = scale;
    }
  }
  if (max_abs_scale < GROUP_MAX_EPS) {
    std::memset(out, 0, 210);
    putHalf(dAt, 0.f);
    return;
  }

  float iscale = -128.f / max_scale;
  putHalf(dAt, 1 / iscale);
  std::int8_t scaleQ[QK_K / 16];
  for (int ib = 0; ib < QK_K / 16; ++ib) {
    scaleQ[ib] = static_cast<std::int8_t>(std::min(127, nearest_int(iscale * scales[ib])));
    sc[ib] = static_cast<std::byte>(scaleQ[ib]);
  }
  const float dAll = halfAt(dAt);
  for (int j = 0; j < QK_K / 16; ++j) {
    float d = dAll * scaleQ[j];
    if (!d) continue;
    for (int ii = 0; ii < 16; ++ii) {
      int l = nearest_int(x[16 * j + ii] / d);
      l = std::max(-32, std::min(31, l));
      L[16 * j + ii] = static_cast<std::int8_t>(l + 32);
    }
  }

  for (int j = 0; j < QK_K; j += 128) {
    for (int l = 0; l < 32; ++l) {
      const std::uint8_t q1 = L[j + l + 0] & 0xF;
      const std::uint8_t q2 = L[j + l + 32] & 0xF;
      const std::uint8_t q3 = L[j + l + 64] & 0xF;
      const std::uint8_t q4 = L[j + l + 96] & 0xF;
      ql[l + 0] = static_cast<std::byte>(q1 | (q3 << 4));
      ql[l + 32] = static_cast<std::byte>(q2 | (q4 << 4));
      qh[l] = static_cast<std::byte>((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) | ((L[j + l + 64] >> 4) << 4) |
                                     ((L[j + l + 96] >> 4) << 6));
    }
    ql += 64;
    qh += 32;
  }
}

using BlockFn = void (*)(const float*, std::byte*);

BlockFn blockFn(GgmlType t) {
  switch (t) {
    case GgmlType::Q8_0: return q8_0Block;
    case GgmlType::Q4_0: return q4_0Block;
    case GgmlType::Q5_0: return q5_0Block;
    case GgmlType::Q4_K: return q4_KBlock;
    case GgmlType::Q6_K: return q6_KBlock;
    default: return nullptr;
  }
}

// Rows [first, last) of `values` into their place in `out`.
void encodeRange(GgmlType type, std::span<const float> values, std::int64_t rowLength, std::span<std::byte> out,
                 std::int64_t first, std::int64_t last) {
  const std::size_t n = static_cast<std::size_t>(rowLength);
  const std::size_t bytes = rowBytes(type, rowLength);
  for (std::int64_t r = first; r < last; ++r) {
    const float* x = values.data() + static_cast<std::size_t>(r) * n;
    std::byte* y = out.data() + static_cast<std::size_t>(r) * bytes;
    switch (type) {
      case GgmlType::F32: std::memcpy(y, x, n * 4); break;
      case GgmlType::F16:
        for (std::size_t k = 0; k < n; ++k) putHalf(y + 2 * k, x[k]);
        break;
      case GgmlType::BF16:
        for (std::size_t k = 0; k < n; ++k) {
          std::uint16_t h = half::f32ToBf16(x[k]);
          std::memcpy(y + 2 * k, &h, 2);
        }
        break;
      default: {
        const gguf::TypeTraits& tr = gguf::typeTraits(type);
        BlockFn fn = blockFn(type);
        for (std::size_t b = 0; b < n / tr.blockSize; ++b) fn(x + b * tr.blockSize, y + b * tr.typeSize);
      }
    }
  }
}

}  // namespace

bool canEncode(GgmlType type) {
  return type == GgmlType::F32 || type == GgmlType::F16 || type == GgmlType::BF16 || blockFn(type) != nullptr;
}

std::string encodableTypes() { return "F32, F16, BF16, Q8_0, Q4_0, Q5_0, Q4_K, Q6_K"; }

std::size_t rowBytes(GgmlType type, std::int64_t rowLength) {
  const gguf::TypeTraits& t = gguf::typeTraits(type);
  return static_cast<std::size_t>(rowLength) / t.blockSize * t.typeSize;
}

void encodeRows(GgmlType type, std::span<const float> values, std::int64_t rowLength, std::span<std::byte> out,
                int threads) {
  if (!canEncode(type)) throw std::invalid_argument(fmt::format("cannot encode {}", gguf::typeName(type)));
  const gguf::TypeTraits& t = gguf::typeTraits(type);
  if (rowLength <= 0 || rowLength % t.blockSize != 0 || values.size() % static_cast<std::size_t>(rowLength) != 0)
    throw std::invalid_argument(fmt::format("{} values in rows of {} do not fit {}'s blocks of {}", values.size(),
                                            rowLength, t.name, t.blockSize));
  const std::int64_t rows = static_cast<std::int64_t>(values.size()) / rowLength;
  if (out.size() != static_cast<std::size_t>(rows) * rowBytes(type, rowLength))
    throw std::invalid_argument(fmt::format("{} rows of {} {} need {} bytes, not {}", rows, rowLength, t.name,
                                            static_cast<std::size_t>(rows) * rowBytes(type, rowLength), out.size()));
  // Threads only where a thread gets enough work to pay for itself.
  const std::int64_t work = rows * rowLength;
  int n = std::max(1, std::min<int>(threads, static_cast<int>(std::min<std::int64_t>(rows, work / (1 << 16) + 1))));
  if (n == 1) return encodeRange(type, values, rowLength, out, 0, rows);
  std::vector<std::thread> pool;
  for (int k = 0; k < n; ++k)
    pool.emplace_back(encodeRange, type, values, rowLength, out, rows * k / n, rows * (k + 1) / n);
  for (std::thread& th : pool) th.join();
}

}  // namespace linnet::exporter
