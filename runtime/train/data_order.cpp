#include "train/data_order.h"

#include <numeric>
#include <utility>

namespace linnet::train {

namespace {

// SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number
// generators", 2014): small, fully specified, good enough to shuffle.
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, bound), bound > 0: values past the last whole multiple
  // of bound are drawn again.
  uint64_t below(uint64_t bound) {
    uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
    uint64_t x;
    do x = next();
    while (x >= limit);
    return x % bound;
  }
};

}  // namespace

std::vector<uint64_t> epochOrder(uint64_t rows, uint64_t seed, uint64_t epoch) {
  std::vector<uint64_t> order(rows);
  std::iota(order.begin(), order.end(), uint64_t{0});
  SplitMix64 mix{seed};
  SplitMix64 rng{mix.next() ^ (epoch * 0xd1b54a32d192ed03ull)};
  for (uint64_t i = rows; i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
  return order;
}

}  // namespace linnet::train
