// The CUDA driver API, reached through dlopen only. Nothing here includes
// cuda.h or links libcuda: the few types the device needs are declared below
// (as cuda.h has them: CUresult an int, handles opaque pointers, device
// addresses 64-bit), so the runtime builds without the toolkit and `linnet`
// starts on a machine without a driver, where opening the table fails with
// one line instead of the loader refusing to start the program.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

namespace linnet::device::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = std::uint64_t;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUgraph = struct CUgraph_st*;
using CUgraphExec = struct CUgraphExec_st*;
using CUevent = struct CUevent_st*;

// The values of cuda.h's enums that the device uses.
inline constexpr CUresult CUDA_SUCCESS = 0;
inline constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;
inline constexpr CUresult CUDA_ERROR_STUB_LIBRARY = 34;
inline constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
inline constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
inline constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
inline constexpr int CU_STREAM_CAPTURE_MODE_RELAXED = 2;

// This machine cannot run CUDA at all: no driver library, only the toolkit's
// stub, or no device. The message is one line that says so.
struct Unavailable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// One entry of driver_symbols.def.
struct DriverSymbol {
  std::string_view name;    // cuMemAlloc
  std::string_view symbol;  // cuMemAlloc_v2
};
std::span<const DriverSymbol> driverSymbols();

// The driver's functions, resolved from one library.
class DriverApi {
 public:
  // dlopen(library), then every function of driver_symbols.def. Throws
  // Unavailable when the library cannot be loaded, std::runtime_error
  // naming the first symbol it lacks (a driver older than this build needs).
  static std::shared_ptr<const DriverApi> open(const std::string& library);

#define LINNET_CUDA_FUNCTION(name, symbol, parameters) CUresult(*name) parameters = nullptr;
#include "device/cuda/driver_symbols.def"
#undef LINNET_CUDA_FUNCTION

  const std::string& library() const { return library_; }
  // "cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)".
  std::string describe(CUresult result, std::string_view call) const;
  // Throws std::runtime_error("cuda: " + describe(result, call)) unless
  // result is CUDA_SUCCESS.
  void check(CUresult result, std::string_view call) const;

 private:
  DriverApi() = default;
  std::string library_;
};

}  // namespace linnet::device::cuda
