#include "device/cuda/event_timer.h"

namespace linnet::device::cuda {

EventTimer::EventTimer(const DriverApi& api, CUstream stream) : api_(api), stream_(stream) {
  api_.check(api_.cuEventCreate(&start_, 0), "cuEventCreate");
  CUresult made = api_.cuEventCreate(&end_, 0);
  if (made != CUDA_SUCCESS) api_.cuEventDestroy(start_);
  api_.check(made, "cuEventCreate");
}

EventTimer::~EventTimer() {
  api_.cuEventDestroy(start_);
  api_.cuEventDestroy(end_);
}

void EventTimer::start() { api_.check(api_.cuEventRecord(start_, stream_), "cuEventRecord"); }

float EventTimer::stop() {
  api_.check(api_.cuEventRecord(end_, stream_), "cuEventRecord");
  api_.check(api_.cuEventSynchronize(end_), "cuEventSynchronize");
  float ms = 0;
  api_.check(api_.cuEventElapsedTime(&ms, start_, end_), "cuEventElapsedTime");
  return ms;
}

}  // namespace linnet::device::cuda
