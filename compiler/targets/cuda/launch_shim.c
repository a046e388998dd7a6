/* The CUDA target's launch shim, compiled into every model.so it builds:
   the `mgpu*` functions that MLIR's host code (gpu-to-llvm) calls,
   implemented on the table the runtime's CUDA device hands over through
   linnet_cuda_bind (runtime/artifact/cuda_api.h). model.so itself never
   opens the driver, so it loads on a machine without one.

   Kernel images are embedded in model.so; MLIR loads each from a module
   constructor, which runs at dlopen, before the device has bound the table.
   So mgpuModuleLoad only records the image, and linnet_cuda_bind loads them
   all. Functions are looked up at each launch site and cached here. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cuda_api.h"

#define LINNET_MAX_MODULES 4096
#define LINNET_FUNCTION_SLOTS 8192 /* a power of two, over twice the kernels */

typedef struct {
  const void* image;
  uint64_t bytes;
  void* module; /* the CUmodule, once bound */
} Module;

typedef struct {
  const Module* module;
  const char* name; /* a constant of the host code: keyed by address */
  void* function;
} FunctionSlot;

static const LinnetCudaApi* api;
static Module modules[LINNET_MAX_MODULES];
static int module_count;
static int too_many_modules;
static FunctionSlot functions[LINNET_FUNCTION_SLOTS];
/* The one stream the device launches on: MLIR's per-launch streams are this
   token, and synchronizing is the device's job when the entry returns. */
static char the_stream;

void* mgpuModuleLoad(void* image, size_t bytes) {
  if (module_count == LINNET_MAX_MODULES) {
    too_many_modules = 1;
    return NULL;
  }
  Module* m = &modules[module_count++];
  m->image = image;
  m->bytes = bytes;
  m->module = NULL;
  return m;
}

void mgpuModuleUnload(void* module) { (void)module; /* the context's teardown unloads */ }

int32_t linnet_cuda_bind(const LinnetCudaApi* table) {
  if (!table || table->version != LINNET_CUDA_API_VERSION || too_many_modules) return 1;
  api = table;
  for (int i = 0; i < module_count; ++i) {
    modules[i].module = api->load_module(api->device, modules[i].image, modules[i].bytes);
    if (!modules[i].module) return 1;
  }
  return 0;
}

void* mgpuModuleGetFunction(void* module, const char* name) {
  const Module* m = (const Module*)module;
  if (!api || !m || !m->module) return NULL;
  uintptr_t h = ((uintptr_t)m >> 4) * 31u + ((uintptr_t)name >> 3);
  for (uintptr_t i = 0; i < LINNET_FUNCTION_SLOTS; ++i) {
    FunctionSlot* s = &functions[(h + i) & (LINNET_FUNCTION_SLOTS - 1)];
    if (s->module == m && s->name == name) return s->function;
    if (!s->module) {
      void* f = api->get_function(api->device, m->module, name);
      if (!f) return NULL;
      s->module = m;
      s->name = name;
      s->function = f;
      return f;
    }
  }
  return NULL;
}

void mgpuLaunchKernel(void* function, intptr_t gx, intptr_t gy, intptr_t gz, intptr_t bx, intptr_t by, intptr_t bz,
                      int32_t shared_bytes, void* stream, void** params, void** extra, size_t param_count) {
  (void)stream;
  (void)extra;
  (void)param_count;
  /* A failed lookup was recorded by the device; the entry ends in its error. */
  if (!api || !function) return;
  api->launch(api->device, function, (uint64_t)gx, (uint64_t)gy, (uint64_t)gz, (uint64_t)bx, (uint64_t)by,
              (uint64_t)bz, (uint32_t)shared_bytes, params);
}

void* mgpuStreamCreate(void) { return &the_stream; }
void mgpuStreamDestroy(void* stream) { (void)stream; }
void mgpuStreamSynchronize(void* stream) { (void)stream; }

void* mgpuMemAlloc(uint64_t bytes, void* stream, int8_t host_shared) {
  (void)stream;
  (void)host_shared;
  return api ? api->alloc(api->device, bytes) : NULL;
}

void mgpuMemFree(void* pointer, void* stream) {
  (void)stream;
  if (api) api->release(api->device, pointer);
}

void mgpuMemcpy(void* dst, void* src, size_t bytes, void* stream) {
  (void)stream;
  if (api && bytes) api->copy(api->device, dst, src, bytes);
}

/* A library product (library_gemm.c, compiled after this file) through the device. */
static void linnet_run_gemm(const LinnetGemm* gemm) {
  if (api) api->gemm(api->device, gemm);
}

/* A device value the host code branches on (host_read.c, compiled after
   this file) through the device. */
static void linnet_run_read(void* host, const void* device, uint64_t bytes) {
  if (api) api->read(api->device, host, device, bytes);
}

void mgpuMemset32(void* dst, uint32_t value, size_t count, void* stream) {
  (void)stream;
  if (api && count) api->fill32(api->device, dst, value, count);
}
