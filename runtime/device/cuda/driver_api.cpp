#include "device/cuda/driver_api.h"

#include <dlfcn.h>
#include <fmt/format.h>

namespace linnet::device::cuda {

namespace {

constexpr DriverSymbol kSymbols[] = {
#define LINNET_CUDA_FUNCTION(name, symbol, parameters) {#name, #symbol},
#include "device/cuda/driver_symbols.def"
#undef LINNET_CUDA_FUNCTION
};

}  // namespace

std::span<const DriverSymbol> driverSymbols() { return kSymbols; }

std::shared_ptr<const DriverApi> DriverApi::open(const std::string& library) {
  // Never closed: the driver keeps threads and state for the process, and
  // unloading it under them is not supported.
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    throw Unavailable(fmt::format(
        "no CUDA driver: cannot load {} ({}); --backend cuda needs an NVIDIA GPU and its driver", library, dlerror()));
  std::shared_ptr<DriverApi> api(new DriverApi());
  api->library_ = library;
  auto resolve = [&](std::string_view symbol) {
    void* address = dlsym(handle, std::string(symbol).c_str());
    if (!address)
      throw std::runtime_error(
          fmt::format("cuda: {} has no function {}: the driver is older than this build needs", library, symbol));
    return address;
  };
#define LINNET_CUDA_FUNCTION(name, symbol, parameters)                                                                 \
  api->name = reinterpret_cast<decltype(api->name)>(resolve(#symbol));
#include "device/cuda/driver_symbols.def"
#undef LINNET_CUDA_FUNCTION
  return api;
}

std::string DriverApi::describe(CUresult result, std::string_view call) const {
  const char* name = nullptr;
  const char* text = nullptr;
  // The toolkit's stub library fails these too: then the number is all there is.
  if (cuGetErrorName(result, &name) != CUDA_SUCCESS || !name)
    return fmt::format("{} failed: CUresult {}", call, result);
  if (cuGetErrorString(result, &text) != CUDA_SUCCESS || !text) return fmt::format("{} failed: {}", call, name);
  return fmt::format("{} failed: {} ({})", call, name, text);
}

void DriverApi::check(CUresult result, std::string_view call) const {
  if (result != CUDA_SUCCESS) throw std::runtime_error("cuda: " + describe(result, call));
}

}  // namespace linnet::device::cuda
