// Seeded random values drawn on the GPU (Device::fillRandom): the kernel of
// random_fill.cu, whose PTX the build embeds when it finds nvcc; its module
// is loaded on the first draw and kept. Without the PTX (a build with no
// nvcc), values are drawn on the host and copied over, the same bits.
#pragma once

#include <cstddef>
#include <memory>

#include "base/random_fill.h"
#include "device/cuda/driver_api.h"

namespace linnet::device::cuda {

class Context;

class RandomKernel {
 public:
  explicit RandomKernel(std::shared_ptr<Context> context) : context_(std::move(context)) {}
  ~RandomKernel();
  RandomKernel(const RandomKernel&) = delete;
  RandomKernel& operator=(const RandomKernel&) = delete;

  // `fill` into device memory at `to`, on the device's stream, then waits
  // for it. Throws the failed driver call.
  void draw(CUdeviceptr to, const RandomFill& fill);
  // Whether this build carries the kernel (else draw copies host values).
  static bool embedded();

 private:
  std::shared_ptr<Context> context_;
  CUmodule module_ = nullptr;
  CUfunction function_ = nullptr;
};

}  // namespace linnet::device::cuda
