// The device drivers of this build: a new device adds its driver here, one
// line, and its folder to device/CMakeLists.txt.
#include "device/registry.h"

#include "device/cuda/cuda_device.h"
#include "device/host/host.h"

namespace linnet::device {

const std::vector<Driver>& drivers() {
  // The host first: the first compiled backend is the default (nest/backends.cpp).
  static const std::vector<Driver> all = {host::driver(), cuda::driver(), host::emulatedCudaDriver()};
  return all;
}

}  // namespace linnet::device
