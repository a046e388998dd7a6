// The device drivers of this build: a new device adds its driver here, one
// line, and its folder to device/CMakeLists.txt.
#include "device/registry.h"

#include "device/host/host.h"

namespace linnet::device {

const std::vector<Driver>& drivers() {
  static const std::vector<Driver> all = {host::driver()};
  return all;
}

}  // namespace linnet::device
