// The `attention` primitive on the reference backend.
#pragma once

#include "targets/reference/tensor.h"

namespace linnet::reference {

// What a masked score becomes: finite, so a row that sees no key is a
// uniform softmax rather than NaN (std.nn.attention's MASKED).
inline constexpr double kMasked = -3.0e38;

// q [..L, G, Q, D], k [..L, K, D], v [..L, K, E], scale an f32 scalar, mask
// bool broadcasting to [..L, G, Q, K]: [..L, G, Q, E].
Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& scale, const Tensor& mask);

}  // namespace linnet::reference
