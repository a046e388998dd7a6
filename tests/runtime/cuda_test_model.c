/* A small CUDA artifact's model.so for the CUDA device's tests
   (cuda_device_test.cpp): what the CUDA target's launch shim does, by hand,
   through the table of runtime/artifact/cuda_api.h. Every entry takes the
   ABI's descriptors (runtime/artifact/abi.h) in the order x (input, f32[n]),
   acc (state, f32[n]), y (output, f32[n]).

   The kernels are PTX, loaded by the driver's JIT on a GPU and run by the
   fake libcuda (cuda_fake_driver.cpp) on the CPU. They were made from
     extern "C" __global__ void scale(float* y, const float* x, float factor, unsigned n)
       { unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i] * factor; }
     extern "C" __global__ void add(float* y, const float* a, const float* b, unsigned n)
       { unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a[i] + b[i]; }
   with `nvcc -ptx -arch=sm_90` (CUDA 13.0), the .version lowered to 8.0 so
   drivers from CUDA 12.0 on take it (ptxas -arch=sm_90 accepts it). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cuda_api.h"

/* clang-format off */
static const char kKernels[] =
    ".version 8.0\n"
    ".target sm_90\n"
    ".address_size 64\n"
    "  // .globl  scale\n"
    ".visible .entry scale(\n"
    "  .param .u64 scale_param_0,\n"
    "  .param .u64 scale_param_1,\n"
    "  .param .f32 scale_param_2,\n"
    "  .param .u32 scale_param_3\n"
    ")\n"
    "{\n"
    "  .reg .pred   %p<2>;\n"
    "  .reg .f32   %f<4>;\n"
    "  .reg .b32   %r<6>;\n"
    "  .reg .b64   %rd<8>;\n"
    "  ld.param.u64   %rd1, [scale_param_0];\n"
    "  ld.param.u64   %rd2, [scale_param_1];\n"
    "  ld.param.f32   %f1, [scale_param_2];\n"
    "  ld.param.u32   %r2, [scale_param_3];\n"
    "  mov.u32   %r3, %ctaid.x;\n"
    "  mov.u32   %r4, %ntid.x;\n"
    "  mov.u32   %r5, %tid.x;\n"
    "  mad.lo.s32   %r1, %r3, %r4, %r5;\n"
    "  setp.ge.u32   %p1, %r1, %r2;\n"
    "  @%p1 bra   $L__BB0_2;\n"
    "  cvta.to.global.u64   %rd3, %rd2;\n"
    "  mul.wide.u32   %rd4, %r1, 4;\n"
    "  add.s64   %rd5, %rd3, %rd4;\n"
    "  ld.global.f32   %f2, [%rd5];\n"
    "  mul.f32   %f3, %f2, %f1;\n"
    "  cvta.to.global.u64   %rd6, %rd1;\n"
    "  add.s64   %rd7, %rd6, %rd4;\n"
    "  st.global.f32   [%rd7], %f3;\n"
    "$L__BB0_2:\n"
    "  ret;\n"
    "}\n"
    "  // .globl  add\n"
    ".visible .entry add(\n"
    "  .param .u64 add_param_0,\n"
    "  .param .u64 add_param_1,\n"
    "  .param .u64 add_param_2,\n"
    "  .param .u32 add_param_3\n"
    ")\n"
    "{\n"
    "  .reg .pred   %p<2>;\n"
    "  .reg .f32   %f<4>;\n"
    "  .reg .b32   %r<6>;\n"
    "  .reg .b64   %rd<11>;\n"
    "  ld.param.u64   %rd1, [add_param_0];\n"
    "  ld.param.u64   %rd2, [add_param_1];\n"
    "  ld.param.u64   %rd3, [add_param_2];\n"
    "  ld.param.u32   %r2, [add_param_3];\n"
    "  mov.u32   %r3, %ctaid.x;\n"
    "  mov.u32   %r4, %ntid.x;\n"
    "  mov.u32   %r5, %tid.x;\n"
    "  mad.lo.s32   %r1, %r3, %r4, %r5;\n"
    "  setp.ge.u32   %p1, %r1, %r2;\n"
    "  @%p1 bra   $L__BB1_2;\n"
    "  cvta.to.global.u64   %rd4, %rd2;\n"
    "  mul.wide.u32   %rd5, %r1, 4;\n"
    "  add.s64   %rd6, %rd4, %rd5;\n"
    "  cvta.to.global.u64   %rd7, %rd3;\n"
    "  add.s64   %rd8, %rd7, %rd5;\n"
    "  ld.global.f32   %f1, [%rd8];\n"
    "  ld.global.f32   %f2, [%rd6];\n"
    "  add.f32   %f3, %f2, %f1;\n"
    "  cvta.to.global.u64   %rd9, %rd1;\n"
    "  add.s64   %rd10, %rd9, %rd5;\n"
    "  st.global.f32   [%rd10], %f3;\n"
    "$L__BB1_2:\n"
    "  ret;\n"
    "}\n";
/* clang-format on */

static const LinnetCudaApi* api;
static void* module;
static void* scale_fn;
static void* add_fn;
static void* five; /* f32[kMostElements] of 5.0, made by init: it outlives every call */

enum { kMostElements = 4096 };
static float halves[kMostElements]; /* i / 2, a host constant the code copies from */

int32_t linnet_cuda_bind(const LinnetCudaApi* table) {
  if (!table || table->version != LINNET_CUDA_API_VERSION) return 1;
  api = table;
  module = api->load_module(api->device, kKernels, sizeof kKernels);
  if (!module) return 1;
  scale_fn = api->get_function(api->device, module, "scale");
  add_fn = api->get_function(api->device, module, "add");
  for (int i = 0; i < kMostElements; ++i) halves[i] = (float)i / 2;
  return scale_fn && add_fn ? 0 : 1;
}

/* A descriptor's aligned pointer and first size (abi.h's word offsets 1 and 3). */
static void* data(void* descriptor) { return (void*)(intptr_t)((int64_t*)descriptor)[1]; }
static uint32_t count(void* descriptor) { return (uint32_t)((int64_t*)descriptor)[3]; }

static void launch(void* function, uint32_t n, void** params) {
  api->launch(api->device, function, (n + 255) / 256, 1, 1, 256, 1, 1, 0, params);
}

/* Made once, after bind: memory outside any entry, kept. */
void linnet_test_init(void) {
  five = api->alloc(api->device, sizeof(float) * kMostElements);
  api->fill32(api->device, five, 0x40a00000u /* 5.0f */, kMostElements);
}

/* y = 2 x, through scratch memory of the call. */
void linnet_call_twice(void** a) {
  uint32_t n = count(a[0]);
  void* x = data(a[0]);
  void* scratch = api->alloc(api->device, sizeof(float) * n);
  float factor = 2.0f;
  void* params[] = {&scratch, &x, &factor, &n};
  launch(scale_fn, n, params);
  api->copy(api->device, data(a[2]), scratch, sizeof(float) * n);
  api->release(api->device, scratch);
}

/* acc += x (the state, in place); y = acc. */
void linnet_call_accumulate(void** a) {
  uint32_t n = count(a[0]);
  void* x = data(a[0]);
  void* acc = data(a[1]);
  void* params[] = {&acc, &acc, &x, &n};
  launch(add_fn, n, params);
  api->copy(api->device, data(a[2]), acc, sizeof(float) * n);
}

/* y = 3. */
void linnet_call_fill(void** a) { api->fill32(api->device, data(a[2]), 0x40400000u /* 3.0f */, count(a[0])); }

/* y[i] = i / 2, copied from host memory: runs, but cannot be captured. */
void linnet_call_constant(void** a) { api->copy(api->device, data(a[2]), halves, sizeof(float) * count(a[0])); }

/* y = x + 5, from the memory init made. */
void linnet_call_from_init(void** a) {
  uint32_t n = count(a[0]);
  void* x = data(a[0]);
  void* y = data(a[2]);
  void* params[] = {&y, &x, &five, &n};
  launch(add_fn, n, params);
}

/* y = 2 x[0] + 1 everywhere: x doubled by a kernel, then the first value
   read on the host (as the cuda target's code reads a key prefix's length
   to branch on) and filled in. It must wait for the kernel; a graph cannot
   hold it, so it runs plainly every call. */
void linnet_call_read_first(void** a) {
  uint32_t n = count(a[0]);
  void* x = data(a[0]);
  void* scratch = api->alloc(api->device, sizeof(float) * n);
  float factor = 2.0f, first = 0.0f;
  void* params[] = {&scratch, &x, &factor, &n};
  launch(scale_fn, n, params);
  if (api->read(api->device, &first, scratch, sizeof first) != 0) return;
  first += 1.0f;
  uint32_t bits;
  memcpy(&bits, &first, sizeof bits);
  api->fill32(api->device, data(a[2]), bits, n);
}

/* Launches a kernel that is not there: the lookup fails, then everything after it does nothing. */
void linnet_call_missing(void** a) {
  void* function = api->get_function(api->device, module, "missing");
  uint32_t n = count(a[0]);
  void* y = data(a[2]);
  void* params[] = {&y, &y, &y, &n};
  api->launch(api->device, function, 1, 1, 1, 1, 1, 1, 0, params);
  api->fill32(api->device, data(a[2]), 0x40400000u, n);
}
