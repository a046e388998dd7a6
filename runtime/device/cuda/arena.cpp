#include "device/cuda/arena.h"

#include <algorithm>
#include <utility>

namespace linnet::device::cuda {

Arena::Arena(Allocate allocate, Free free, std::size_t firstChunk)
    : allocate_(std::move(allocate)), free_(std::move(free)), firstChunk_(std::max(firstChunk, kAlignment)) {}

Arena::~Arena() {
  for (const Chunk& c : chunks_) free_(c.address);
}

std::uint64_t Arena::allocate(std::size_t bytes) {
  std::size_t need = (std::max<std::size_t>(bytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
  while (current_ < chunks_.size() && chunks_[current_].bytes - offset_ < need) {
    ++current_;
    offset_ = 0;
  }
  if (current_ == chunks_.size()) {
    std::size_t size = chunks_.empty() ? firstChunk_ : 2 * chunks_.back().bytes;
    size = (std::max(size, need) + kAlignment - 1) / kAlignment * kAlignment;
    std::uint64_t address = allocate_(size);  // may throw: nothing has changed yet
    chunks_.push_back({address, size});
    offset_ = 0;
  }
  std::uint64_t address = chunks_[current_].address + offset_;
  offset_ += need;
  used_ += need;
  peak_ = std::max(peak_, used_);
  return address;
}

void Arena::reset() {
  current_ = 0;
  offset_ = 0;
  used_ = 0;
}

}  // namespace linnet::device::cuda
