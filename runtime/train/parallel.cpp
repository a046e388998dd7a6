#include "train/parallel.h"

#include <algorithm>
#include <atomic>
#include <thread>

namespace linnet::train {

std::vector<Piece> piecesOf(std::span<const size_t> sizes) {
  std::vector<Piece> out;
  for (size_t a = 0; a < sizes.size(); ++a)
    for (size_t begin = 0; begin < sizes[a]; begin += kPieceElements)
      out.push_back({a, begin, std::min(sizes[a], begin + kPieceElements)});
  return out;
}

void parallelFor(size_t count, int threads, const std::function<void(size_t)>& body) {
  const size_t cores = std::max(1u, std::thread::hardware_concurrency());
  const size_t workers = std::min(count, threads > 0 ? static_cast<size_t>(threads) : cores);
  if (workers <= 1) {
    for (size_t k = 0; k < count; ++k) body(k);
    return;
  }
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t k = next++; k < count; k = next++) body(k);
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < workers; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
}

}  // namespace linnet::train
