// The table a CUDA artifact's host code launches through
// (artifact/cuda_api.h), for one loaded model.so. Each function calls the
// driver (or cuBLASLt, for a library product), on the device's stream for
// launches, copies, fills and products. The first
// failure is recorded (the call and its cuGetErrorName), and from then on
// every function fails without calling the driver, so no entry runs past a
// failed call; the executable takes the failure when the entry returns and
// throws it.
//
// `alloc` inside an entry comes from the per-call arena (arena.h), reset
// when the entry returns. Outside an entry (during linnet_cuda_bind or the
// manifest's init) there is no call to outlive, so it is device memory of
// its own that lives as long as the table, for whatever the code keeps.
// Modules loaded through the table are unloaded with it.
//
// When the context profiles (profiler.h), each launch, copy, fill and
// product inside an entry is bracketed by the profiler's events; with
// `syncEach` (LINNET_CUDA_SYNC=1) the stream is waited for after each, and
// a failure there names the operation (a kernel by name and family).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "artifact/cuda_api.h"
#include "device/cuda/context.h"

namespace linnet::device::cuda {

class LaunchTable {
 public:
  // `families`: each kernel's family by name (the manifest's), for profiles.
  LaunchTable(std::shared_ptr<Context> context, std::map<std::string, std::string> families, bool syncEach = false);
  ~LaunchTable();
  LaunchTable(const LaunchTable&) = delete;
  LaunchTable& operator=(const LaunchTable&) = delete;

  // What linnet_cuda_bind is given; its `device` is this table.
  const LinnetCudaApi* api() const { return &api_; }

  // Around each call of an entry: the arena is reset at both ends.
  // `capturing`: the stream records a CUDA graph, so `read` is refused.
  void beginEntry(bool capturing = false);
  void endEntry();
  // Whether the code read a device value on the host (cuda_api.h's `read`)
  // since beginEntry: in a capture, the read was refused and the capture
  // is of no use.
  bool readOnHost() const { return readOnHost_; }
  // Whether operations are bracketed by profiling events: inside an entry,
  // when the context profiles.
  Profiler* profiling() const { return inEntry_ ? context_->profiler() : nullptr; }
  // The recorded failure, if any, cleared: the table works again.
  std::optional<std::string> takeFailure();

 private:
  static LaunchTable& self(void* device) { return *static_cast<LaunchTable*>(device); }
  // Records `message` unless a failure is recorded already.
  void fail(std::string message);
  // Whether `result` succeeded; records the failure of `call` if not.
  bool ok(CUresult result, const char* call);
  // After an operation inside an entry went onto the stream: the profile's
  // closing event (`name`, `family`), then with syncEach_ the wait, whose
  // failure is recorded as what() failing. False when it failed.
  template <typename Describe>
  bool queued(Profiler* profiler, const std::string& name, const std::string& family, Describe what);

  static void* loadModule(void* device, const void* image, uint64_t bytes) noexcept;
  static void* getFunction(void* device, void* module, const char* name) noexcept;
  static int32_t launch(void* device, void* function, uint64_t grid_x, uint64_t grid_y, uint64_t grid_z,
                        uint64_t block_x, uint64_t block_y, uint64_t block_z, uint32_t shared_bytes,
                        void** params) noexcept;
  static void* alloc(void* device, uint64_t bytes) noexcept;
  static void release(void* device, void* pointer) noexcept;
  static int32_t copy(void* device, void* dst, const void* src, uint64_t bytes) noexcept;
  static int32_t fill32(void* device, void* dst, uint32_t value, uint64_t count) noexcept;
  static int32_t gemm(void* device, const LinnetGemm* gemm) noexcept;
  static int32_t read(void* device, void* host, const void* source, uint64_t bytes) noexcept;

  std::shared_ptr<Context> context_;
  LinnetCudaApi api_{};
  std::optional<std::string> failure_;
  bool inEntry_ = false;
  bool capturing_ = false;
  bool readOnHost_ = false;
  bool syncEach_ = false;
  std::vector<CUmodule> modules_;
  std::vector<CUdeviceptr> kept_;  // alloc outside an entry
  std::map<std::string, std::string> families_;  // by kernel name
  std::map<CUfunction, std::pair<std::string, std::string>> functions_;  // name and family
};

}  // namespace linnet::device::cuda
