// The kernel behind CudaDevice::fillRandom (random_kernel.h): --random-weights
// drawn on the GPU, with the host's own element function (base/random_value.h)
// and IEEE round-to-nearest-even conversions, so the bits are the host's
// (drawRandom). Compiled to PTX for compute_90 at build time (nvcc) and
// embedded in the runtime; the driver compiles it when the device first
// draws. A grid-stride loop: any grid covers any count.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "base/random_value.h"
#include "device/cuda/random_kernel_abi.h"

extern "C" __global__ void linnet_random_fill(void* out, unsigned long long count, unsigned long long key, double base,
                                              double std, unsigned int type) {
  unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long e = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x; e < count;
       e += stride) {
    double v = linnet::random_value::at(key, e, base, std);
    switch (type) {
      case LINNET_RANDOM_F64: static_cast<double*>(out)[e] = v; break;
      case LINNET_RANDOM_F32: static_cast<float*>(out)[e] = __double2float_rn(v); break;
      case LINNET_RANDOM_BF16: static_cast<__nv_bfloat16*>(out)[e] = __float2bfloat16_rn(__double2float_rn(v)); break;
      default: static_cast<__half*>(out)[e] = __float2half_rn(__double2float_rn(v));
    }
  }
}
