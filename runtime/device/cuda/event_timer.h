// Device time between two points of a stream, by a pair of events that is
// destroyed on every path (cuBLASLt's candidate timing, the copy bandwidth).
#pragma once

#include "device/cuda/driver_api.h"

namespace linnet::device::cuda {

class EventTimer {
 public:
  // Creates both events; throws as DriverApi::check does.
  EventTimer(const DriverApi& api, CUstream stream);
  ~EventTimer();
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;

  // Records the start on the stream.
  void start();
  // Records the end, waits for it, and returns the milliseconds since the
  // last start.
  float stop();

 private:
  const DriverApi& api_;
  CUstream stream_;
  CUevent start_ = nullptr, end_ = nullptr;
};

}  // namespace linnet::device::cuda
