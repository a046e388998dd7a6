// Bytes in one device's memory, made by that device (device.h). address()
// is what the device's compiled code is given for it: a host pointer on the
// host, a device pointer on a GPU.
#pragma once

#include <cstddef>
#include <memory>

namespace linnet::device {

class Buffer {
 public:
  virtual ~Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* address() const { return address_; }
  std::size_t size() const { return size_; }

 protected:
  Buffer(void* address, std::size_t size) : address_(address), size_(size) {}

 private:
  void* address_;
  std::size_t size_;
};

using BufferPtr = std::shared_ptr<Buffer>;

}  // namespace linnet::device
