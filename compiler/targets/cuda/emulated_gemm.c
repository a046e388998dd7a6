/* The library product on the CPU (the cuda-emulated target): what cuBLASLt
   computes on the GPU, summed in f32 in order of k and rounded once to the
   element type (nearest, ties to even), so the emulation checks everything
   around the call (the operands' views, the descriptors, the lifetimes)
   against the reference backend. Compiled after cuda_api.h's text, with the
   CPU kernels' headers on the include path (cpu::compileSharedObject): their
   f16 and bf16 loads are these too. */
#include <stdint.h>
#include <string.h>

#include "linnet_kernels_common.h"

static float linnet_load(const void* p, uint64_t i, uint32_t type) {
  if (type == LINNET_CUDA_F32) return ((const float*)p)[i];
  uint16_t h = ((const uint16_t*)p)[i];
  return type == LINNET_CUDA_F16 ? f16_to_f32(h) : bf16_to_f32(h);
}

static void linnet_store(void* p, uint64_t i, uint32_t type, float v) {
  if (type == LINNET_CUDA_F32) {
    ((float*)p)[i] = v;
  } else if (type == LINNET_CUDA_F16) {
    ((_Float16*)p)[i] = (_Float16)v;
  } else {
    uint32_t bits;
    memcpy(&bits, &v, 4);
    if ((bits & 0x7fffffffu) > 0x7f800000u) bits |= 0x00400000u; /* a NaN stays a (quiet) NaN */
    else bits += 0x7fffu + ((bits >> 16) & 1u);
    ((uint16_t*)p)[i] = (uint16_t)(bits >> 16);
  }
}

static void linnet_run_gemm(const LinnetGemm* g) {
  for (uint64_t b = 0; b < g->batch; ++b)
    for (uint64_t i = 0; i < g->m; ++i)
      for (uint64_t j = 0; j < g->n; ++j) {
        float sum = 0.0f;
        for (uint64_t k = 0; k < g->k; ++k) {
          uint64_t at = g->transpose_w ? j * g->ld_w + k : k * g->ld_w + j;
          sum += linnet_load(g->x, b * g->stride_x + i * g->ld_x + k, g->element_type) *
                 linnet_load(g->w, b * g->stride_w + at, g->element_type);
        }
        linnet_store(g->c, b * g->stride_c + i * g->ld_c + j, g->element_type, sum);
      }
}

/* The host code's read of a device value (host_read.c): the emulation's
   device memory is the host's. */
static void linnet_run_read(void* host, const void* device, uint64_t bytes) { memcpy(host, device, bytes); }
