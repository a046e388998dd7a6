// The bytes of a model's params, for every backend: from a checkpoint
// (safetensors, an index, or GGUF) through the package's bindings.json with
// all the checks of weights::bind, or seeded random values for benchmarks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/random_fill.h"
#include "common/storage.h"
#include "nest/nest.h"

namespace linnet::nest {

// One param's elements (C order, little-endian, in its dtype), kept alive by
// `owner` (the checkpoint's mapping or a copy). May be unaligned.
struct ParamBytes {
  std::span<const std::byte> bytes;
  std::shared_ptr<const void> owner;
  // The checkpoint's own storage of an f32 weight, when it holds one that
  // compiled code can read as is (a GGUF's Q4_1 rows, say): whole rows in
  // `storage`, kept alive by `storedOwner`. Unset for plain tensors.
  std::optional<Storage> storage;
  std::span<const std::byte> stored;
  std::shared_ptr<const void> storedOwner;
};

// For each of `params`, in order. Throws Error with the CLI's messages (no
// weights given, binding problems listed together, an unreadable file). A
// GGUF's shape metadata (block count, widths, heads) is first compared with
// the model's dimension generics `dims` (nest/conventions.h).
std::vector<ParamBytes> bindParams(const std::string& package, const std::vector<ParamInfo>& params,
                                   const std::map<std::string, int64_t>& dims, const LoadOptions& options);

// Whether --random-weights values may be drawn one param at a time where
// they are used (by a device, by an exporter) instead of through
// bindParams: not when an adapter has to be merged into them.
bool drawsRandomApart(const LoadOptions& options);

// The values --random-weights binds for `param`, seeded by `seed`, rounded
// to its dtype. Each element is a function of (seed, the param's path, the
// element) alone, a counter-based generator: every backend and export,
// whatever order it lists params in, binds the same values, and tensors are
// drawn on every core (an 8B model's 8 billion values take seconds, not
// minutes). Scaled like trained weights: bell-shaped (the sum of four
// uniforms) with std 0.02, 1-D params (norm scales) near 1; integer params
// zero.
Tensor randomParam(const ParamInfo& param, uint64_t seed);
// Those values as a device draws them (Device::fillRandom): for a float
// param; any other is zero.
RandomFill randomFill(const ParamInfo& param, uint64_t seed);

// A one-line progress bar on stderr while params are bound, only when
// stderr is a terminal (logs and pipes get nothing).
class Progress {
 public:
  Progress(const char* what, size_t total);
  void step();

 private:
  const char* what_;
  size_t total_, done_ = 0;
  bool on_;
};

}  // namespace linnet::nest
