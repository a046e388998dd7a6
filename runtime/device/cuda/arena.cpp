#include "device/cuda/arena.h"

#include <algorithm>
#include <iterator>
#include <utility>

namespace linnet::device::cuda {

Arena::Arena(Allocate allocate, Free free, std::size_t firstChunk)
    : allocate_(std::move(allocate)), freeChunk_(std::move(free)), firstChunk_(std::max(firstChunk, kAlignment)) {}

Arena::~Arena() {
  for (const Chunk& c : chunks_) freeChunk_(c.address);
}

std::uint64_t Arena::allocate(std::size_t bytes) {
  std::size_t need = (std::max<std::size_t>(bytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
  // First fit: the lowest chunk, then the lowest offset with room.
  std::size_t chunk = 0, offset = 0;
  bool found = false;
  for (std::size_t c = 0; c < chunks_.size() && !found; ++c)
    for (const auto& [at, size] : holes_[c])
      if (size >= need) {
        chunk = c;
        offset = at;
        found = true;
        break;
      }
  if (!found) {
    std::size_t size = chunks_.empty() ? firstChunk_ : 2 * chunks_.back().bytes;
    size = (std::max(size, need) + kAlignment - 1) / kAlignment * kAlignment;
    std::uint64_t address = allocate_(size);  // may throw: nothing has changed yet
    chunks_.push_back({address, size});
    holes_.push_back({{0, size}});
    chunk = chunks_.size() - 1;
    offset = 0;
  }
  auto& holes = holes_[chunk];
  auto hole = holes.find(offset);
  std::size_t rest = hole->second - need;
  holes.erase(hole);
  if (rest > 0) holes.emplace(offset + need, rest);
  std::uint64_t address = chunks_[chunk].address + offset;
  live_[address] = {chunk, offset, need};
  used_ += need;
  peak_ = std::max(peak_, used_);
  return address;
}

bool Arena::release(std::uint64_t address) {
  auto it = live_.find(address);
  if (it == live_.end()) return false;
  Placed p = it->second;
  live_.erase(it);
  used_ -= p.bytes;
  auto& holes = holes_[p.chunk];
  auto next = holes.lower_bound(p.offset);
  std::size_t offset = p.offset, size = p.bytes;
  if (next != holes.end() && next->first == offset + size) {  // merge with the hole after
    size += next->second;
    next = holes.erase(next);
  }
  if (next != holes.begin()) {  // and with the one before
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      prev->second += size;
      return true;
    }
  }
  holes.emplace(offset, size);
  return true;
}

void Arena::reset() {
  for (std::size_t c = 0; c < chunks_.size(); ++c) holes_[c] = {{0, chunks_[c].bytes}};
  live_.clear();
  used_ = 0;
}

}  // namespace linnet::device::cuda
