// The argument ABI of compiled entries: what code generators emit (the CPU
// target's C shim) and what devices call (the host driver). One place, so
// the compiler and the runtime agree.
//
// - Entry `E` of a manifest is one C function, `void <symbol>(void** args)`
//   with symbol = callSymbol(E's function): one signature whatever the arity.
// - args[i] points to the i-th argument's memref descriptor. Arguments come
//   in this order: the entry's inputs, the manifest's params, its states,
//   the entry's outputs (ArgumentOrder). Inputs and params are read, states
//   are updated in place, outputs are written. Each state and each output
//   is a buffer of its own, shared with no other argument (code generators
//   rely on it: targets/cuda/buffer_aliases.h); read-only arguments may
//   share one (a tied head's weight).
// - A descriptor is MLIR's ranked memref of the C interface, int64 words:
//   {allocated, aligned, offset, sizes[rank], strides[rank]}, offset and
//   strides counted in elements. The runtime passes contiguous C-order
//   buffers: offset 0, strides the suffix products of the sizes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace linnet::artifact {

enum class ArgumentOrder { Inputs, Params, States, Outputs };

// The C symbol of the uniform entry point for a generated function.
std::string callSymbol(std::string_view function);

// Word offsets in a descriptor.
inline constexpr int kDescAllocated = 0, kDescAligned = 1, kDescOffset = 2, kDescSizes = 3;
inline constexpr int descStrides(int rank) { return kDescSizes + rank; }
inline constexpr int descWords(int rank) { return kDescSizes + 2 * rank; }

// The descriptor of a contiguous, C-order buffer at `data`.
std::vector<int64_t> descriptor(void* data, std::span<const int64_t> shape);

// The layout above as C macros (LINNET_DESC_ALIGNED, ..._OFFSET,
// ..._SIZES(rank), ..._STRIDES(rank)), for generated C code.
std::string cDescriptorLayout();

// C source defining each entry's uniform symbol, `void <symbol>(void** a)`,
// as a call of `_mlir_ciface_<functions[i]>` (MLIR's C interface) with the
// descriptors in the ABI's order; `prologue` is C run first in each.
struct Manifest;
std::string cEntryPoints(const Manifest& manifest, const std::vector<std::string>& functions,
                         std::string_view prologue = "");

}  // namespace linnet::artifact
