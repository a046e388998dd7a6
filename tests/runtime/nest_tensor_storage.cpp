// nest/tensor_storage: a large tensor's block comes back for the next
// tensor of its size (a training step's gradients every step), zeroed as
// Tensor::zeros promises; small ones and other sizes go to malloc.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstddef>

#include "nest/tensor.h"

using linnet::DType;
using linnet::nest::Tensor;

TEST_CASE("A large tensor's storage is kept for the next of its size, and comes back zeroed") {
  const std::byte* first = nullptr;
  {
    Tensor t = Tensor::zeros(DType::F32, {1024, 1024});  // 4 MiB
    first = t.data();
    std::fill(t.bytes().begin(), t.bytes().end(), std::byte{7});
  }
  Tensor again = Tensor::zeros(DType::F32, {1024, 1024});
  CHECK(again.data() == first);
  CHECK(std::all_of(again.bytes().begin(), again.bytes().end(), [](std::byte b) { return b == std::byte{0}; }));
  Tensor other = Tensor::zeros(DType::F32, {1024, 1025});  // another size: not that block
  CHECK(other.data() != first);
}

TEST_CASE("A copy of a large tensor gets storage of its own") {
  Tensor a = Tensor::zeros(DType::F32, {512, 1024});
  a.set(5, 2.5);
  Tensor b = a;
  CHECK(b.data() != a.data());
  CHECK(b.asDouble(5) == 2.5);
}
