// The per-call arena behind the compiled code's `alloc` (artifact/cuda_api.h):
// device memory in chunks, handed out by bumping an offset and taken back all
// at once when the entry returns. A call that makes the same requests as the
// previous one therefore gets the same addresses, which is what lets a call
// be captured as a CUDA graph and replayed: the graph's kernels keep pointing
// at the scratch they were captured with.
//
// Chunks are added when a call needs more (the first of `firstChunk` bytes,
// each later one at least twice the last), never moved or freed before the
// arena is: a captured graph may still point into any of them. A request
// that does not fit in the current chunk moves on to the next that fits (or
// a new one) and never back, so the walk, and the addresses, depend only on
// the requests. Not thread-safe: one call runs at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
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

  // `bytes` (rounded up to kAlignment; 0 counts as 1) until the next reset.
  // Throws what Allocate throws; the arena stays usable.
  std::uint64_t allocate(std::size_t bytes);
  // Every allocation since the last reset is given back.
  void reset();

  struct Chunk {
    std::uint64_t address = 0;
    std::size_t bytes = 0;
  };
  const std::vector<Chunk>& chunks() const { return chunks_; }
  // The most bytes any call has had allocated (alignment included), for reports.
  std::size_t peakBytes() const { return peak_; }

 private:
  Allocate allocate_;
  Free free_;
  std::size_t firstChunk_;
  std::vector<Chunk> chunks_;
  std::size_t current_ = 0;  // the chunk being filled
  std::size_t offset_ = 0;   // in chunks_[current_]
  std::size_t used_ = 0;     // bytes handed out since the last reset
  std::size_t peak_ = 0;
};

}  // namespace linnet::device::cuda
