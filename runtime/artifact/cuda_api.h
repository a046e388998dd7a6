/* The contract between a CUDA artifact's host code (model.so, built by
   `linnetc build --target cuda`) and the runtime's CUDA device
   (runtime/device/cuda). Plain C: linnetc embeds this file in the launch shim
   it compiles into every model.so, and the runtime includes it from C++.

   model.so never links or opens libcuda. MLIR's host code calls the `mgpu*`
   functions; the shim (compiler/targets/cuda/launch_shim.c) implements them
   on the table below, which the device hands over once, right after dlopen,
   through `linnet_cuda_bind`. Before that, nothing touches the driver (the
   kernel images are only recorded by the module constructors).

   Errors: every function of the table returns 0 (or a non-null handle) on
   success. On failure the device records the first failure (the driver call
   and its cuGetErrorName) and returns nonzero (or null); the shim then does
   nothing more for the rest of the entry, and the device throws the recorded
   failure when the entry returns. So no entry ever runs past a failed call.

   Memory: `alloc` inside an entry hands out device memory valid until the
   entry returns (a per-call arena whose addresses repeat from call to call,
   so a call can be captured as a CUDA graph and replayed); outside an entry
   (during linnet_cuda_bind or init) it lives as long as the loaded library.
   `release` inside an entry hands a buffer back once no later launch uses
   it (stream order makes its reuse safe); outside an entry it may do
   nothing. The compiler's code never copies from host
   memory inside an entry (a capture could not take it); it reads device
   memory only through `read`. */
#ifndef LINNET_CUDA_API_H
#define LINNET_CUDA_API_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Raised whenever the table or its meaning changes; linnet_cuda_bind refuses
   another version, so an old artifact fails to load instead of misbehaving. */
#define LINNET_CUDA_API_VERSION 3

/* Element types of a library product. */
#define LINNET_CUDA_F32 0
#define LINNET_CUDA_BF16 1
#define LINNET_CUDA_F16 2

/* A stack of `batch` products, row-major, every matrix a view:
     c[i] = x[i] w[i]^T  (transpose_w: w[i] is [n, k])
     c[i] = x[i] w[i]    (else: w[i] is [k, n])
   x[i] is [m, k], c[i] is [m, n]. Matrix i of an operand starts
   i * stride_* elements after its pointer; its rows are ld_* elements apart.
   One element type for all three, sums in f32 (never TF32), each result
   rounded once. */
typedef struct LinnetGemm {
  uint32_t element_type; /* LINNET_CUDA_F32, _BF16 or _F16 */
  uint32_t transpose_w;
  uint64_t batch, m, n, k;
  const void* x;
  const void* w;
  void* c;
  uint64_t ld_x, ld_w, ld_c;
  uint64_t stride_x, stride_w, stride_c;
} LinnetGemm;

typedef struct LinnetCudaApi {
  int32_t version; /* LINNET_CUDA_API_VERSION */
  void* device;    /* the runtime's device, passed back as the first argument */
  /* cuModuleLoadData on a cubin or fatbin image: a CUmodule. */
  void* (*load_module)(void* device, const void* image, uint64_t bytes);
  /* cuModuleGetFunction: a CUfunction. */
  void* (*get_function)(void* device, void* module, const char* name);
  /* cuLaunchKernel on the device's stream; `params` as cuLaunchKernel's
     kernelParams (a pointer to each argument's value). */
  int32_t (*launch)(void* device, void* function, uint64_t grid_x, uint64_t grid_y, uint64_t grid_z,
                    uint64_t block_x, uint64_t block_y, uint64_t block_z, uint32_t shared_bytes, void** params);
  /* Device memory for the rest of the entry, 256-byte aligned. */
  void* (*alloc)(void* device, uint64_t bytes);
  void (*release)(void* device, void* pointer);
  /* Stream-ordered copies and fills of device memory. */
  int32_t (*copy)(void* device, void* dst, const void* src, uint64_t bytes);
  int32_t (*fill32)(void* device, void* dst, uint32_t value, uint64_t count);
  /* A library product (cuBLASLt) on the device's stream. */
  int32_t (*gemm)(void* device, const LinnetGemm* gemm);
  /* A device value the host code branches on: waits for the stream, then
     copies `bytes` from device memory to host memory. A graph cannot hold
     it, so inside a capture it fails (the device then runs the entry
     without a graph). */
  int32_t (*read)(void* device, void* host, const void* source, uint64_t bytes);
} LinnetCudaApi;

/* Exported by model.so: takes the table (kept by pointer: it must outlive the
   library), loads every kernel image the constructors recorded and looks up
   every kernel. 0 on success; nonzero when the version differs or a load
   failed (the device has recorded why). */
typedef int32_t (*LinnetCudaBindFn)(const LinnetCudaApi* api);
#define LINNET_CUDA_BIND_SYMBOL "linnet_cuda_bind"

#ifdef __cplusplus
}
#endif

#endif /* LINNET_CUDA_API_H */
