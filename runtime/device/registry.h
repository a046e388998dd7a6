// The devices this build has. Each driver names the backend it gives
// linnet::nest (`--backend cpu`) and the linnetc target that compiles for it.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "device/device.h"

namespace linnet::device {

struct Driver {
  std::string_view name;     // the backend: LoadOptions::backend, `linnet --backend`
  std::string_view target;   // `linnetc build --target`
  std::string_view summary;  // one line, for messages
  std::unique_ptr<Device> (*create)();
};

// In registry.cpp's order.
const std::vector<Driver>& drivers();

}  // namespace linnet::device
