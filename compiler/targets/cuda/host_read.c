/* linnet_cuda_read_<t>: the cuda target's host code reading one device value
   it branches on (compiler/targets/cuda/host_reads.h). Compiled into
   model.so after the text of cuda_api.h and of a definition of
   linnet_run_read: the launch shim's (the device waits for its stream and
   copies the value back, and refuses inside a graph capture) or the CPU
   emulation's (a load: its device memory is the host's).

   The value comes as MLIR's unranked memref of rank 0 (a rank and a pointer
   to the descriptor). After a failed read it is 0; the device has recorded
   the failure, does nothing more in the entry and reports it when the entry
   returns. */
#include <stdint.h>

typedef struct {
  void* allocated;
  void* aligned;
  int64_t offset;
} LinnetScalarRef;

static void linnet_run_read(void* host, const void* device, uint64_t bytes);

#define LINNET_READ_ENTRY(suffix, type)                                          \
  type linnet_cuda_read_##suffix(int64_t rank, const LinnetScalarRef* s) {       \
    type value = 0;                                                              \
    (void)rank;                                                                  \
    linnet_run_read(&value, (const type*)s->aligned + s->offset, sizeof value);  \
    return value;                                                                \
  }
LINNET_READ_ENTRY(i64, int64_t)
LINNET_READ_ENTRY(i32, int32_t)
LINNET_READ_ENTRY(f32, float)
