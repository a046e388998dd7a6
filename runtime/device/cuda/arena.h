// The per-call arena behind the compiled code's `alloc` and `release`
// (artifact/cuda_api.h): device memory in chunks, each request placed first
// fit (the lowest chunk, then the lowest address with room), a release
// giving its bytes back (merged with free neighbours), and everything taken
// back at once when the entry returns. A call that makes the same requests
// and releases, in the same order, as the previous one therefore gets the
// same addresses, which is what lets a call be captured as a CUDA graph and
// replayed: the graph's kernels keep pointing at the scratch they were
// captured with. Releases come from the compiler (cuda target, "buffer
// lifetimes"): a buffer is released after the last launch that uses it, so
// the next request may reuse its bytes; the one stream orders the kernels
// that used them before the kernels that reuse them.
//
// Chunks are added when a request fits nowhere (the first of `firstChunk`
// bytes, each later one at least twice the last), never moved or freed
// before the arena is: a captured graph may still point into any of them.
// Not thread-safe: one call runs at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <vector>

namespace linnet::device::cuda {

class Arena {
 public:
  // Device memory of `bytes`, or an exception; freed with Free.
  using Allocate = std::function<std::uint64_t(std::size_t bytes)>;
  using Free = std::function<void(std::uint64_t address)>;

  static constexpr std::size_t kAlignment = 256;  // what cuMemAlloc gives and cuBLASLt assumes
  static constexpr std::size_t kFirstChunk = std::size_t(64) << 20;

  Arena(Allocate allocate, Free free, std::size_t firstChunk = kFirstChunk);
  ~Arena();
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  // `bytes` (rounded up to kAlignment; 0 counts as 1) until its release or
  // the next reset. Throws what Allocate throws; the arena stays usable.
  std::uint64_t allocate(std::size_t bytes);
  // Gives back what `allocate` returned at `address`; false (and nothing
  // changes) for an address the arena did not hand out since the last reset.
  bool release(std::uint64_t address);
  // Every allocation since the last reset is given back.
  void reset();

  struct Chunk {
    std::uint64_t address = 0;
    std::size_t bytes = 0;
  };
  const std::vector<Chunk>& chunks() const { return chunks_; }
  // The most bytes a call has had allocated at once (alignment included), for reports.
  std::size_t peakBytes() const { return peak_; }

 private:
  Allocate allocate_;
  Free freeChunk_;
  std::size_t firstChunk_;
  struct Placed {
    std::size_t chunk = 0, offset = 0, bytes = 0;
  };
  std::vector<Chunk> chunks_;
  std::vector<std::map<std::size_t, std::size_t>> holes_;  // per chunk: offset -> bytes, neighbours merged
  std::map<std::uint64_t, Placed> live_;                   // handed out since the last reset
  std::size_t used_ = 0;                                   // their bytes
  std::size_t peak_ = 0;
};

}  // namespace linnet::device::cuda
