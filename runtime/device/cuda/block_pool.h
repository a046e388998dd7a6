// Device memory given back by buffers, kept for the next buffer of the same
// size instead of returned to the driver. The compiled backend imports every
// call's inputs and outputs afresh; with the pool, a decode step gets the
// blocks the previous step had, at the same addresses, so the step's CUDA
// graph replays instead of being captured again (and no call pays for
// cuMemAlloc and cuMemFree, which synchronize). Blocks are reused by exact
// size only, the lowest address first, so the same requests get the same
// blocks whatever order they were given back in. The device drains the pool
// when the driver runs out of memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

namespace linnet::device::cuda {

class BlockPool {
 public:
  static constexpr std::size_t kAlignment = 256;
  // The size of the block that holds `bytes`: a multiple of kAlignment, at
  // least one (so every buffer has an address of its own).
  static std::size_t blockBytes(std::size_t bytes);

  // A kept block of exactly `blockBytes`, the lowest-addressed, if any.
  std::optional<std::uint64_t> take(std::size_t blockBytes);
  void keep(std::uint64_t address, std::size_t blockBytes);
  // Every kept block (address, bytes), forgotten here: the caller frees them.
  std::vector<std::pair<std::uint64_t, std::size_t>> drain();
  std::size_t keptBytes() const { return keptBytes_; }

 private:
  std::map<std::size_t, std::set<std::uint64_t>> kept_;  // by block size
  std::size_t keptBytes_ = 0;
};

}  // namespace linnet::device::cuda
