// Storage for Tensor's bytes. A large block freed is kept for the next
// tensor of the same size instead of going back to the system: a training
// step or a prefill makes the same large tensors on every call (a SmolLM2
// step's gradients are 540 MB), and fresh pages cost a fault and a clearing
// each, a tenth of that step. At most LINNET_TENSOR_CACHE_MB (default 1024)
// megabytes are kept; 0 keeps none.
#pragma once

#include <cstddef>

namespace linnet::nest {

// `bytes` (a multiple of 64, > 0) aligned to 64; a kept block of that size
// when there is one. Throws std::bad_alloc.
void* takeStorage(std::size_t bytes);
// A block from takeStorage of that size, kept or freed.
void giveStorage(void* block, std::size_t bytes) noexcept;

}  // namespace linnet::nest
