#include "device/cuda/block_pool.h"

#include <algorithm>

namespace linnet::device::cuda {

std::size_t BlockPool::blockBytes(std::size_t bytes) {
  return (std::max<std::size_t>(bytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
}

std::optional<std::uint64_t> BlockPool::take(std::size_t blockBytes) {
  auto it = kept_.find(blockBytes);
  if (it == kept_.end()) return std::nullopt;
  std::uint64_t address = *it->second.begin();
  it->second.erase(it->second.begin());
  if (it->second.empty()) kept_.erase(it);
  keptBytes_ -= blockBytes;
  return address;
}

void BlockPool::keep(std::uint64_t address, std::size_t blockBytes) {
  if (kept_[blockBytes].insert(address).second) keptBytes_ += blockBytes;
}

std::vector<std::pair<std::uint64_t, std::size_t>> BlockPool::drain() {
  std::vector<std::pair<std::uint64_t, std::size_t>> out;
  for (const auto& [bytes, addresses] : kept_)
    for (std::uint64_t a : addresses) out.emplace_back(a, bytes);
  kept_.clear();
  keptBytes_ = 0;
  return out;
}

}  // namespace linnet::device::cuda
