// The `attention` primitive on the reference backend.
#pragma once

#include "targets/reference/tensor.h"

namespace linnet::reference {

// q [..L, G, Q, D], k [..L, K, D], v [..L, K, E], scale an f32 scalar, mask
// bool broadcasting to [..L, G, Q, K]: [..L, G, Q, E].
Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& scale, const Tensor& mask);

}  // namespace linnet::reference
