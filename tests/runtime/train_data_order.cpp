// The training rows' order: a permutation, fixed by (seed, epoch) on every
// machine, different across epochs and seeds.
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>

#include "train/data_order.h"

using linnet::train::epochOrder;

TEST_CASE("Each epoch visits every row once") {
  for (uint64_t rows : {0, 1, 2, 7, 1000}) {
    std::vector<uint64_t> order = epochOrder(rows, 42, 3);
    std::vector<uint64_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    std::vector<uint64_t> all(rows);
    std::iota(all.begin(), all.end(), uint64_t{0});
    CHECK(sorted == all);
  }
}

TEST_CASE("The order is fixed by the seed and the epoch") {
  // From tests/train/data_order_reference.py, the same algorithm written
  // again in Python. A change here changes every run's batches.
  CHECK(epochOrder(10, 0, 0) == std::vector<uint64_t>{0, 1, 4, 6, 3, 9, 8, 7, 2, 5});
  CHECK(epochOrder(12, 7, 5) == std::vector<uint64_t>{9, 4, 5, 6, 8, 11, 0, 2, 10, 7, 1, 3});
  CHECK(epochOrder(10, 0, 0) == epochOrder(10, 0, 0));
  CHECK(epochOrder(1000, 0, 0) != epochOrder(1000, 0, 1));
  CHECK(epochOrder(1000, 0, 0) != epochOrder(1000, 1, 0));
}

TEST_CASE("Every position is reached: no row stays first") {
  // Over 2000 epochs of 4 rows each row leads about 500 times.
  std::vector<int> first(4, 0);
  for (uint64_t e = 0; e < 2000; ++e) ++first[epochOrder(4, 9, e)[0]];
  for (int n : first) CHECK((n > 400 && n < 600));
}
