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
  // Whether its target's code reads a param in the checkpoint's own storage
  // (a GGUF's q4_1 rows, a bf16 checkpoint of an f32 model): otherwise the
  // runtime hands it the plain elements the binding dequantized.
  bool storageFormats = false;
};

// In registry.cpp's order.
const std::vector<Driver>& drivers();

}  // namespace linnet::device
