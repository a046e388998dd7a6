/* The controls of the fake libcuda (cuda_fake_driver.cpp), which a test
   reaches with dlopen + dlsym on the same file the CUDA device opened
   (LINNET_CUDA_DRIVER), so both see one instance. */
#pragma once

#ifdef __cplusplus
extern "C" {
#endif

typedef struct FakeCudaCounters {
  long kernels_run;    /* launches executed, directly or by a graph */
  long random_fills;   /* the runtime's random-values kernel, counted apart (not an artifact's) */
  long captures;       /* cuStreamBeginCapture that started one */
  long graph_launches; /* cuGraphLaunch that ran */
  long copies, fills;  /* cuMemcpyAsync, cuMemsetD32Async executed */
  long allocations, frees, live_allocations;
  long modules_loaded, modules_unloaded;
  long graphs_live, execs_live, streams_live, contexts_retained;
} FakeCudaCounters;

/* Counters, injected failures and the device count back to the start (1 GPU). */
void fake_cuda_reset(void);
void fake_cuda_counters(FakeCudaCounters* out);
/* The calls of `function` (its exported symbol, e.g. "cuLaunchKernel") after
   `after` more successful ones return `result`, `times` times in a row. */
void fake_cuda_fail(const char* function, int result, int after, int times);
void fake_cuda_set_device_count(int count);

#ifdef __cplusplus
}
#endif
