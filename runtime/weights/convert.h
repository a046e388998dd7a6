// Floating-point element conversions between f32, bf16 and f16.
//
// Rounding is IEEE round-to-nearest-even everywhere; NaN stays NaN (quiet,
// sign kept), infinities stay infinities, values too large for f16 become
// infinities, and f16 subnormals are produced and read exactly. bf16 <-> f16
// goes through f32, which holds both exactly, so it rounds only once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "base/half.h"
#include "weights/dtype.h"

namespace linnet::weights {

using half::bf16ToF32;
using half::f32ToBf16;
using half::f16ToF32;
using half::f32ToF16;

// Whether convertElements supports from -> to (f32, bf16, f16 among
// themselves, and any dtype to itself).
bool canConvert(DType from, DType to);

// Converts `count` little-endian elements of `from` in `src` into `to` in
// `dst`. src and dst need no alignment and must not overlap; their sizes must
// be count * byteSize(...). Throws Error when the pair is unsupported or the
// sizes are wrong.
void convertElements(DType from, std::span<const std::byte> src, DType to, std::span<std::byte> dst);

}  // namespace linnet::weights
