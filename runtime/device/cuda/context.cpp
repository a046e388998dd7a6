#include "device/cuda/context.h"

#include <fmt/format.h>

#include <utility>
#include <vector>

namespace linnet::device::cuda {

namespace {

constexpr const char* kNeeds = "--backend cuda needs an NVIDIA GPU and its driver";

}  // namespace

Context::Context(const Options& options)
    : api_(DriverApi::open(options.driverLibrary)), blasLibraries_(options.blasLibraries) {
  const DriverApi& api = *api_;
  CUresult init = api.cuInit(0);
  if (init == CUDA_ERROR_STUB_LIBRARY)
    throw Unavailable(fmt::format("no CUDA driver: {} is the CUDA toolkit's stub library, not a driver; {}",
                                  options.driverLibrary, kNeeds));
  if (init == CUDA_ERROR_NO_DEVICE)
    throw Unavailable(fmt::format("no CUDA device: {}; {}", api.describe(init, "cuInit"), kNeeds));
  api.check(init, "cuInit");
  int count = 0;
  api.check(api.cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (count == 0) throw Unavailable(fmt::format("no CUDA device: the driver sees no GPU; {}", kNeeds));
  if (options.ordinal < 0 || options.ordinal >= count)
    throw std::runtime_error(
        fmt::format("cuda: there is no device {} (LINNET_CUDA_DEVICE): this machine has {}", options.ordinal, count));
  api.check(api.cuDeviceGet(&device_, options.ordinal), "cuDeviceGet");
  char name[256] = {};
  int major = 0, minor = 0;
  api.check(api.cuDeviceGetName(name, sizeof(name) - 1, device_), "cuDeviceGetName");
  api.check(api.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device_),
            "cuDeviceGetAttribute");
  api.check(api.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device_),
            "cuDeviceGetAttribute");
  description_ = fmt::format("device {} ({}, compute capability {}.{})", options.ordinal, name, major, minor);

  api.check(api.cuDevicePrimaryCtxRetain(&context_, device_), "cuDevicePrimaryCtxRetain");
  try {
    makeCurrent();
    api.check(api.cuStreamCreate(&stream_, 0), "cuStreamCreate");
  } catch (...) {
    api.cuDevicePrimaryCtxRelease(device_);
    throw;
  }
  // Chunks come from allocate(), so running out of memory drains the pool first.
  arena_.emplace([this](std::size_t bytes) { return allocate(bytes); },
                 [this](std::uint64_t address) { api_->cuMemFree(address); });
  if (!options.profile.empty()) profiler_ = std::make_unique<Profiler>(api_, options.profile);
}

Context::~Context() {
  // Nothing can be reported from here; the driver's answers are ignored.
  const DriverApi& api = *api_;
  api.cuCtxSetCurrent(context_);
  api.cuStreamSynchronize(stream_);
  profiler_.reset();
  blas_.reset();
  arena_.reset();
  freePool();
  api.cuStreamDestroy(stream_);
  api.cuDevicePrimaryCtxRelease(device_);
}

BlasLt& Context::blas() {
  if (!blas_) blas_ = std::make_unique<BlasLt>(*api_, blasLibraries_);
  return *blas_;
}

void Context::makeCurrent() const { api_->check(api_->cuCtxSetCurrent(context_), "cuCtxSetCurrent"); }

CUdeviceptr Context::takeBlock(std::size_t bytes) {
  std::size_t block = BlockPool::blockBytes(bytes);
  {
    std::lock_guard<std::mutex> lock(poolMutex_);
    if (std::optional<std::uint64_t> kept = pool_.take(block)) return *kept;
  }
  return allocate(block);
}

void Context::giveBack(CUdeviceptr address, std::size_t bytes) {
  std::lock_guard<std::mutex> lock(poolMutex_);
  pool_.keep(address, BlockPool::blockBytes(bytes));
}

CUdeviceptr Context::allocate(std::size_t bytes) {
  CUdeviceptr address = 0;
  CUresult result = api_->cuMemAlloc(&address, bytes);
  if (result == CUDA_ERROR_OUT_OF_MEMORY) {
    freePool();
    result = api_->cuMemAlloc(&address, bytes);
  }
  if (result != CUDA_SUCCESS)
    throw std::runtime_error(fmt::format("cuda: {}, allocating {} on {}", api_->describe(result, "cuMemAlloc"),
                                         bytes < (1 << 20) ? fmt::format("{} bytes", bytes)
                                                           : fmt::format("{:.1f} MiB", double(bytes) / (1 << 20)),
                                         description_));
  return address;
}

void Context::freePool() {
  std::vector<std::pair<std::uint64_t, std::size_t>> blocks;
  {
    std::lock_guard<std::mutex> lock(poolMutex_);
    blocks = pool_.drain();
  }
  for (const auto& [address, bytes] : blocks) api_->cuMemFree(address);
}

}  // namespace linnet::device::cuda
