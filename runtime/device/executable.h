// An artifact's code loaded on a device (Device::load): its init has run,
// and each entry of its manifest can be called.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "device/buffer.h"

namespace linnet::device {

// One argument: a buffer of this device holding a contiguous C-order tensor
// of `shape` (the manifest's spec for it).
struct Argument {
  const Buffer* buffer = nullptr;
  std::span<const int64_t> shape;
};

class Executable {
 public:
  virtual ~Executable() = default;
  // Runs manifest.entries[entry] on `args`, in the ABI's order
  // (runtime/artifact/abi.h): the entry's inputs, the manifest's params, its
  // states, the entry's outputs. Returns when the outputs and states are
  // written.
  virtual void call(std::size_t entry, std::span<const Argument> args) = 0;
};

}  // namespace linnet::device
