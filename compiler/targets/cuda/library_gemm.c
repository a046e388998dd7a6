/* linnet_cuda_gemm_<t>: what the cuda target's host code calls for a product it
   left to a library (compiler/targets/cuda/library_products.h). Compiled into
   model.so after the text of cuda_api.h and of a definition of
   linnet_run_gemm: the launch shim's (the device's cuBLASLt, through the
   table) or the CPU emulation's (emulated_gemm.c).

   Each operand comes as MLIR's unranked memref (a rank and a pointer to the
   ranked descriptor): a stack of matrices [batch, rows, cols] whose rows are
   packed and whose batch stride and offset are any (a layer's slice of a
   stacked weight). x is [batch, m, k], w is [batch, n, k] (transpose_w) or
   [batch, k, n], c is [batch, m, n]; a batch of 1 in w beside more in x
   does not occur (the compiler folds a 2-D weight's rows into m). */
#include <stdint.h>

typedef struct {
  void* allocated;
  void* aligned;
  int64_t offset;
  int64_t sizes[3];
  int64_t strides[3];
} LinnetMatrixStack;

static void linnet_run_gemm(const LinnetGemm* gemm);

static const char* linnet_stack_start(const LinnetMatrixStack* s, uint32_t element_type) {
  int64_t bytes = element_type == LINNET_CUDA_F32 ? 4 : 2;
  return (const char*)s->aligned + s->offset * bytes;
}

static void linnet_gemm_of_stacks(const LinnetMatrixStack* x, const LinnetMatrixStack* w,
                                  const LinnetMatrixStack* c, int32_t element_type, int32_t transpose_w) {
  LinnetGemm g;
  g.element_type = (uint32_t)element_type;
  g.transpose_w = (uint32_t)transpose_w;
  g.batch = (uint64_t)c->sizes[0];
  g.m = (uint64_t)c->sizes[1];
  g.n = (uint64_t)c->sizes[2];
  g.k = (uint64_t)x->sizes[2];
  g.x = linnet_stack_start(x, g.element_type);
  g.w = linnet_stack_start(w, g.element_type);
  g.c = (void*)linnet_stack_start(c, g.element_type);
  g.ld_x = (uint64_t)x->strides[1];
  g.ld_w = (uint64_t)w->strides[1];
  g.ld_c = (uint64_t)c->strides[1];
  g.stride_x = (uint64_t)x->strides[0];
  g.stride_w = (uint64_t)w->strides[0];
  g.stride_c = (uint64_t)c->strides[0];
  linnet_run_gemm(&g);
}

/* One entry per element type; each stack's rank is 3 (the compiler's). */
#define LINNET_GEMM_ENTRY(suffix, code)                                                              \
  void linnet_cuda_gemm_##suffix(int64_t rank_x, const LinnetMatrixStack* x, int64_t rank_w,         \
                                 const LinnetMatrixStack* w, int64_t rank_c, const LinnetMatrixStack* c, \
                                 int32_t transpose_w) {                                              \
    (void)rank_x;                                                                                    \
    (void)rank_w;                                                                                    \
    (void)rank_c;                                                                                    \
    linnet_gemm_of_stacks(x, w, c, code, transpose_w);                                               \
  }
LINNET_GEMM_ENTRY(f32, LINNET_CUDA_F32)
LINNET_GEMM_ENTRY(bf16, LINNET_CUDA_BF16)
LINNET_GEMM_ENTRY(f16, LINNET_CUDA_F16)
