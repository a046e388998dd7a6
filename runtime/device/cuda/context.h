// One GPU as the CUDA device uses it, shared by the device, its buffers and
// its executables (each holds it, so whichever goes last frees it): the
// driver's functions, the primary context of the chosen GPU, the one stream
// all work goes to, the pool of buffer blocks and the per-call arena.
//
// The stream is a blocking one: the synchronous copies of write() and read()
// run on the legacy default stream, which waits for it, so they see every
// earlier launch without an explicit synchronize.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "device/cuda/arena.h"
#include "device/cuda/blas_lt.h"
#include "device/cuda/block_pool.h"
#include "device/cuda/cuda_device.h"
#include "device/cuda/driver_api.h"
#include "device/cuda/profiler.h"

namespace linnet::device::cuda {

class Context {
 public:
  explicit Context(const Options& options);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const DriverApi& api() const { return *api_; }
  CUstream stream() const { return stream_; }
  // The driver's current context is per thread; every entry point of the
  // device calls this first, so any thread may use it (one at a time).
  void makeCurrent() const;
  // "device 0 (NVIDIA H200, compute capability 9.0)", for messages.
  const std::string& description() const { return description_; }

  // A block of BlockPool::blockBytes(bytes): a kept one, else cuMemAlloc
  // (after draining the pool if the driver is out of memory). Not zeroed.
  CUdeviceptr takeBlock(std::size_t bytes);
  void giveBack(CUdeviceptr address, std::size_t bytes);
  Arena& arena() { return *arena_; }
  // cuBLASLt on this context, opened at the first call (throws as BlasLt does).
  BlasLt& blas();
  // The profile of Options::profile; null when not profiling.
  Profiler* profiler() { return profiler_.get(); }

 private:
  CUdeviceptr allocate(std::size_t bytes);
  void freePool();

  std::shared_ptr<const DriverApi> api_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUstream stream_ = nullptr;
  std::string description_;
  std::mutex poolMutex_;  // buffers may be dropped on any thread
  BlockPool pool_;
  std::optional<Arena> arena_;  // emptied before the context is released
  std::string blasLibraries_;
  std::unique_ptr<BlasLt> blas_;  // released before the context
  std::unique_ptr<Profiler> profiler_;  // written and released before the context
};

}  // namespace linnet::device::cuda
