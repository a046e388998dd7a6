#include "device/cuda/random_kernel.h"

#include <algorithm>
#include <cstdint>
#include <exception>
#include <stdexcept>
#include <vector>

#include "device/cuda/context.h"
#include "device/cuda/random_kernel_abi.h"

namespace linnet::device::cuda {

namespace {

#if LINNET_RANDOM_KERNEL_PTX
constexpr const char* kPtx =
#include "random_fill.inc"
    ;
#else
constexpr const char* kPtx = nullptr;
#endif

unsigned typeCode(DType t) {
  switch (t) {
    case DType::F64: return LINNET_RANDOM_F64;
    case DType::BF16: return LINNET_RANDOM_BF16;
    case DType::F16: return LINNET_RANDOM_F16;
    default: return LINNET_RANDOM_F32;
  }
}

}  // namespace

bool RandomKernel::embedded() { return kPtx != nullptr; }

RandomKernel::~RandomKernel() {
  if (!module_) return;
  try {
    context_->makeCurrent();
  } catch (const std::exception&) {
  }
  context_->api().cuModuleUnload(module_);
}

void RandomKernel::draw(CUdeviceptr to, const RandomFill& fill) {
  const DriverApi& api = context_->api();
  if (!randomFillable(fill.dtype)) throw std::invalid_argument("cuda: random values are drawn in float types only");
  if (fill.count == 0) return;
  if (!kPtx) {
    std::vector<std::byte> host(fill.count * byteSize(fill.dtype));
    drawRandom(fill, host);
    api.check(api.cuMemcpyHtoD(to, host.data(), host.size()), "cuMemcpyHtoD");
    return;
  }
  if (!function_) {
    api.check(api.cuModuleLoadData(&module_, kPtx), "cuModuleLoadData (the random-values kernel)");
    api.check(api.cuModuleGetFunction(&function_, module_, LINNET_RANDOM_KERNEL), "cuModuleGetFunction");
  }
  unsigned long long count = fill.count, key = fill.key;
  double base = fill.base, std = fill.std;
  unsigned type = typeCode(fill.dtype);
  void* out = reinterpret_cast<void*>(to);
  void* params[] = {&out, &count, &key, &base, &std, &type};
  // A grid-stride loop: enough blocks to fill the GPU, at most one element a thread.
  constexpr unsigned kThreads = 256;
  unsigned blocks = static_cast<unsigned>(std::min<std::uint64_t>((fill.count + kThreads - 1) / kThreads, 4096));
  api.check(api.cuLaunchKernel(function_, blocks, 1, 1, kThreads, 1, 1, 0, context_->stream(), params, nullptr),
            "cuLaunchKernel (the random-values kernel)");
  api.check(api.cuStreamSynchronize(context_->stream()), "cuStreamSynchronize");
}

}  // namespace linnet::device::cuda
