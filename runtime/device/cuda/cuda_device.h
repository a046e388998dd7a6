// The CUDA device: one NVIDIA GPU through the driver API, which is opened
// with dlopen when the device is created, never linked (driver_api.h), so
// this build runs on machines without a driver and only `--backend cuda`
// needs one. Buffers are device memory (cuMemAlloc, never managed memory);
// code is the CUDA target's model.so, whose host code launches through the
// table of artifact/cuda_api.h, on the device's one stream. docs/cuda.md
// ("Runtime: the CUDA device") has the whole picture.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "device/registry.h"

namespace linnet::device::cuda {

struct Options {
  std::string driverLibrary = "libcuda.so.1";  // LINNET_CUDA_DRIVER
  // cuBLASLt, opened at an entry's first library product: the first of
  // these (':'-separated) that loads. LINNET_CUBLASLT replaces the list.
  std::string blasLibraries = "libcublasLt.so.13:libcublasLt.so.12";
  int ordinal = 0;                             // LINNET_CUDA_DEVICE
  bool graphs = true;                          // LINNET_CUDA_GRAPHS=0 turns them off
  // LINNET_CUDA_PROFILE: where a profile of the device time goes, by kernel
  // and kernel family (profiler.h); graphs are off while profiling.
  std::string profile;
  // LINNET_CUDA_SYNC=1: the stream is waited for after every launch, copy,
  // fill and library product of an entry, so that a fault (an illegal
  // address) names the kernel that made it instead of surfacing when the
  // entry ends. For finding a failing kernel, not for speed; graphs are off.
  bool syncEach = false;
  // Where a problem that does not stop a call goes (an entry that cannot be
  // captured as a graph); unset: stderr.
  std::function<void(const std::string&)> warn;
};

// The options from the environment variables above. Throws for a
// LINNET_CUDA_DEVICE that is not a number.
Options optionsFromEnvironment();

// Opens the driver, the primary context of device `options.ordinal` and the
// stream. Throws Unavailable (driver_api.h: one line) where this machine
// cannot run CUDA, std::runtime_error for any other failure.
std::unique_ptr<Device> create(const Options& options);

// Backend "cuda", linnetc target "cuda"; created with optionsFromEnvironment().
Driver driver();

}  // namespace linnet::device::cuda
