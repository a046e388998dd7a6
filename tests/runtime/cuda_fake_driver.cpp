// A fake libcuda for testing the CUDA device without a GPU: the exported
// symbols of runtime/device/cuda/driver_symbols.def, on host memory. Device
// addresses are host addresses moved far out of the address space (so code
// that dereferences one on the host crashes instead of passing), and every
// copy, fill and kernel checks that it stays inside live allocations. The
// stream runs work at once; stream capture records it instead, a graph
// replays the record, and kernel parameters are copied at launch, as the
// driver does. The kernels are those of cuda_test_model.c and the runtime's
// random values (device/cuda/random_fill.cu), run on the CPU.
// Failures can be injected per function (cuda_fake_driver.h).
// FAKE_CUDA_ANY_KERNEL=1 accepts any other kernel as one that does nothing;
// FAKE_CUDA_REPORT=1 prints the counters at exit.
#include "cuda_fake_driver.h"

#include "base/half.h"
#include "base/random_value.h"
#include "device/cuda/driver_api.h"
#include "device/cuda/random_kernel_abi.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

using namespace linnet::device::cuda;

// The device's own declarations (driver_symbols.def): each definition below
// must have exactly their types, or it would not compile (as C functions of
// one name) and the sanitizer build would see calls through a pointer of
// another function type.
extern "C" {
#define LINNET_CUDA_FUNCTION(name, symbol, parameters) CUresult symbol parameters;
#include "device/cuda/driver_symbols.def"
#undef LINNET_CUDA_FUNCTION
}

namespace {

using Op = std::function<int()>;

constexpr int kSuccess = 0, kInvalidValue = 1, kInvalidDevice = 101, kInvalidHandle = 400, kNotFound = 500,
              kIllegalAddress = 700, kCaptureUnsupported = 900, kCaptureInvalidated = 901, kCaptureImplicit = 906;
constexpr std::uint64_t kBias = std::uint64_t(1) << 52;

struct Graph {
  std::vector<Op> ops;
};

struct State {
  FakeCudaCounters counters{};
  std::map<std::uint64_t, std::size_t> live;  // device address -> bytes
  struct Failure {
    int after, result, times;
  };
  std::map<std::string, Failure> failures;  // by symbol
  int deviceCount = 1;
  bool capturing = false, captureBroken = false;
  std::vector<Op> captured;
};

State& state() {
  static State s;
  return s;
}

// The injected result for this call of `symbol`, or success.
int injected(const char* symbol) {
  auto it = state().failures.find(symbol);
  if (it == state().failures.end()) return kSuccess;
  if (it->second.after-- > 0) return kSuccess;
  int result = it->second.result;
  if (--it->second.times == 0) state().failures.erase(it);
  return result;
}

// A failure while capturing invalidates the capture, as the driver's do.
int during(int result) {
  if (result != kSuccess && state().capturing) state().captureBroken = true;
  return result;
}

// The host memory behind [address, address + bytes), when it is all inside one live allocation.
void* host(std::uint64_t address, std::size_t bytes) {
  auto& live = state().live;
  auto it = live.upper_bound(address);
  if (it == live.begin()) return nullptr;
  --it;
  if (address + bytes > it->first + it->second) return nullptr;
  return reinterpret_cast<void*>(address - kBias);
}

// Stream work: recorded while capturing, else run now.
int enqueue(Op op) {
  if (state().capturing) {
    state().captured.push_back(std::move(op));
    return kSuccess;
  }
  return op();
}

// The test model's kernels, one "thread" per index below grid x block.
struct Kernel {
  const char* name;
  std::function<Op(void** params, std::uint64_t threads)> bind;  // copies the parameters
};

template <typename T>
T param(void** params, int i) {
  T value;
  std::memcpy(&value, params[i], sizeof(T));
  return value;
}

const Kernel kKernels[] = {
    {"scale",
     [](void** p, std::uint64_t threads) -> Op {
       auto y = param<std::uint64_t>(p, 0), x = param<std::uint64_t>(p, 1);
       auto factor = param<float>(p, 2);
       auto n = std::min<std::uint64_t>(param<unsigned>(p, 3), threads);
       return [=] {
         auto* out = static_cast<float*>(host(y, 4 * n));
         auto* in = static_cast<const float*>(host(x, 4 * n));
         if (n && (!out || !in)) return kIllegalAddress;
         for (std::uint64_t i = 0; i < n; ++i) out[i] = in[i] * factor;
         ++state().counters.kernels_run;
         return kSuccess;
       };
     }},
    {"add",
     [](void** p, std::uint64_t threads) -> Op {
       auto y = param<std::uint64_t>(p, 0), a = param<std::uint64_t>(p, 1), b = param<std::uint64_t>(p, 2);
       auto n = std::min<std::uint64_t>(param<unsigned>(p, 3), threads);
       return [=] {
         auto* out = static_cast<float*>(host(y, 4 * n));
         auto* left = static_cast<const float*>(host(a, 4 * n));
         auto* right = static_cast<const float*>(host(b, 4 * n));
         if (n && (!out || !left || !right)) return kIllegalAddress;
         for (std::uint64_t i = 0; i < n; ++i) out[i] = left[i] + right[i];
         ++state().counters.kernels_run;
         return kSuccess;
       };
     }},
};

// The runtime's random-values kernel (device/cuda/random_fill.cu), with the
// host's element function and conversions: what the GPU must match.
Op randomFill(void** p, std::uint64_t threads) {
  auto out = param<std::uint64_t>(p, 0), count = param<std::uint64_t>(p, 1), key = param<std::uint64_t>(p, 2);
  auto base = param<double>(p, 3), std = param<double>(p, 4);
  auto type = param<unsigned>(p, 5);
  std::uint64_t size = type == LINNET_RANDOM_F64 ? 8 : type == LINNET_RANDOM_F32 ? 4 : 2;
  return [=] {
    auto* bytes = static_cast<unsigned char*>(host(out, size * count));
    if (count && !bytes) return kIllegalAddress;
    if (threads == 0) return kInvalidValue;
    for (std::uint64_t e = 0; e < count; ++e) {
      double v = linnet::random_value::at(key, e, base, std);
      float f = static_cast<float>(v);
      std::uint16_t h = type == LINNET_RANDOM_BF16 ? linnet::half::f32ToBf16(f) : linnet::half::f32ToF16(f);
      if (type == LINNET_RANDOM_F64) std::memcpy(bytes + 8 * e, &v, 8);
      else if (type == LINNET_RANDOM_F32) std::memcpy(bytes + 4 * e, &f, 4);
      else std::memcpy(bytes + 2 * e, &h, 2);
    }
    ++state().counters.random_fills;
    return kSuccess;
  };
}
const Kernel kRandomFill = {LINNET_RANDOM_KERNEL, randomFill};

const Kernel kNoOp = {"(any)", [](void**, std::uint64_t) -> Op {
                        return [] {
                          ++state().counters.kernels_run;
                          return kSuccess;
                        };
                      }};

struct Name {
  int code;
  const char *name, *text;
};
const Name kNames[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {209, "CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device"},
    {400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {900, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", "operation not permitted when stream is capturing"},
    {901, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", "operation failed due to a previous error during capture"},
    {906, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT",
     "operation would make the legacy stream depend on a capturing blocking stream"},
};

const Name* lookup(int code) {
  for (const Name& n : kNames)
    if (n.code == code) return &n;
  return nullptr;
}

}  // namespace

extern "C" {

void fake_cuda_reset(void) { state() = State(); }
void fake_cuda_counters(FakeCudaCounters* out) {
  *out = state().counters;
  out->live_allocations = static_cast<long>(state().live.size());
}
void fake_cuda_fail(const char* function, int result, int after, int times) {
  state().failures[function] = {after, result, times};
}
void fake_cuda_set_device_count(int count) { state().deviceCount = count; }

// FAKE_CUDA_REPORT=1: the counters on stderr when the process ends, for runs of `linnet` on the fake.
void report() {
  const FakeCudaCounters& c = state().counters;
  std::fprintf(stderr,
               "fake libcuda: %ld kernels run, %ld captures, %ld graph launches, %ld copies, %ld fills, %ld "
               "allocations, %zu live, %ld random fills\n",
               c.kernels_run, c.captures, c.graph_launches, c.copies, c.fills, c.allocations, state().live.size(),
               c.random_fills);
}

int cuInit(unsigned) {
  static const bool reporting = [] {
    const char* on = std::getenv("FAKE_CUDA_REPORT");
    return on && std::strcmp(on, "1") == 0 && std::atexit(report) == 0;
  }();
  (void)reporting;
  return injected("cuInit");
}

int cuGetErrorName(int error, const char** name) {
  const Name* n = lookup(error);
  *name = n ? n->name : nullptr;
  return n ? kSuccess : kInvalidValue;
}
int cuGetErrorString(int error, const char** text) {
  const Name* n = lookup(error);
  *text = n ? n->text : nullptr;
  return n ? kSuccess : kInvalidValue;
}

int cuDeviceGetCount(int* count) {
  *count = state().deviceCount;
  return kSuccess;
}
int cuDeviceGet(int* device, int ordinal) {
  if (ordinal < 0 || ordinal >= state().deviceCount) return kInvalidDevice;
  *device = ordinal;
  return kSuccess;
}
int cuDeviceGetName(char* name, int length, int device) {
  std::snprintf(name, static_cast<std::size_t>(length), "Fake GPU %d", device);
  return kSuccess;
}
int cuDeviceGetAttribute(int* value, int attribute, int) {
  *value = attribute == 75 ? 9 : 0;  // compute capability 9.0
  return kSuccess;
}
int cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice device) {
  *context = reinterpret_cast<CUcontext>(std::uintptr_t(0x1000 + device));
  ++state().counters.contexts_retained;
  return kSuccess;
}
int cuDevicePrimaryCtxRelease_v2(int) {
  --state().counters.contexts_retained;
  return kSuccess;
}
int cuCtxSetCurrent(CUcontext) { return kSuccess; }

int cuStreamCreate(CUstream* stream, unsigned) {
  *stream = reinterpret_cast<CUstream>(new int(0));
  ++state().counters.streams_live;
  return kSuccess;
}
int cuStreamSynchronize(CUstream) {
  if (int r = injected("cuStreamSynchronize")) return during(r);
  return during(state().capturing ? kCaptureUnsupported : kSuccess);
}
int cuStreamDestroy_v2(CUstream stream) {
  delete reinterpret_cast<int*>(stream);
  --state().counters.streams_live;
  return kSuccess;
}

int cuMemAlloc_v2(std::uint64_t* pointer, std::size_t bytes) {
  if (int r = injected("cuMemAlloc_v2")) return r;
  if (bytes == 0) return kInvalidValue;
  void* memory = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  std::memset(memory, 0xA5, bytes);  // not zero: the device must zero what it promises to
  *pointer = reinterpret_cast<std::uint64_t>(memory) + kBias;
  state().live[*pointer] = bytes;
  ++state().counters.allocations;
  return kSuccess;
}
int cuMemFree_v2(std::uint64_t pointer) {
  auto it = state().live.find(pointer);
  if (it == state().live.end()) return kInvalidValue;
  std::free(reinterpret_cast<void*>(pointer - kBias));
  state().live.erase(it);
  ++state().counters.frees;
  return kSuccess;
}
// Synchronous copies run on the legacy stream: not while a blocking stream captures.
int cuMemcpyHtoD_v2(std::uint64_t to, const void* from, std::size_t bytes) {
  if (state().capturing) return during(kCaptureImplicit);
  void* target = host(to, bytes);
  if (!target) return kInvalidValue;
  std::memcpy(target, from, bytes);
  return kSuccess;
}
int cuMemcpyDtoH_v2(void* to, std::uint64_t from, std::size_t bytes) {
  if (state().capturing) return during(kCaptureImplicit);
  const void* source = host(from, bytes);
  if (!source) return kInvalidValue;
  std::memcpy(to, source, bytes);
  return kSuccess;
}
// Unified addressing: a source below the fake device range is host memory,
// which a capture cannot take (pageable memory), as with the driver.
int cuMemcpyAsync(std::uint64_t to, std::uint64_t from, std::size_t bytes, CUstream) {
  if (int r = injected("cuMemcpyAsync")) return during(r);
  bool hostSource = from < kBias;
  if (hostSource && state().capturing) return during(kCaptureUnsupported);
  if (!host(to, bytes) || (!hostSource && !host(from, bytes))) return during(kInvalidValue);
  return during(enqueue([=] {
    void* target = host(to, bytes);
    const void* source = hostSource ? reinterpret_cast<const void*>(from) : host(from, bytes);
    if (!target || !source) return kIllegalAddress;
    std::memmove(target, source, bytes);
    ++state().counters.copies;
    return kSuccess;
  }));
}
int cuMemsetD32Async(std::uint64_t to, unsigned value, std::size_t count, CUstream) {
  if (int r = injected("cuMemsetD32Async")) return during(r);
  if (!host(to, 4 * count)) return during(kInvalidValue);
  return during(enqueue([=] {
    auto* words = static_cast<unsigned*>(host(to, 4 * count));
    if (!words) return kIllegalAddress;
    for (std::size_t i = 0; i < count; ++i) words[i] = value;
    ++state().counters.fills;
    return kSuccess;
  }));
}

int cuModuleLoadData(CUmodule* module, const void* image) {
  if (int r = injected("cuModuleLoadData")) return r;
  if (!image) return kInvalidValue;
  *module = reinterpret_cast<CUmodule>(new int(0));
  ++state().counters.modules_loaded;
  return kSuccess;
}
int cuModuleUnload(CUmodule module) {
  delete reinterpret_cast<int*>(module);
  ++state().counters.modules_unloaded;
  return kSuccess;
}
int cuModuleGetFunction(CUfunction* function, CUmodule module, const char* name) {
  if (int r = injected("cuModuleGetFunction")) return r;
  if (!module) return kInvalidHandle;
  for (const Kernel& k : kKernels)
    if (std::strcmp(k.name, name) == 0) {
      *function = reinterpret_cast<CUfunction>(const_cast<Kernel*>(&k));
      return kSuccess;
    }
  if (std::strcmp(name, kRandomFill.name) == 0) {
    *function = reinterpret_cast<CUfunction>(const_cast<Kernel*>(&kRandomFill));
    return kSuccess;
  }
  // FAKE_CUDA_ANY_KERNEL=1: any other kernel launches and does nothing, so
  // an artifact of linnetc's runs through the device's plumbing (its
  // results are not computed).
  if (const char* any = std::getenv("FAKE_CUDA_ANY_KERNEL"); any && std::strcmp(any, "1") == 0) {
    // A handle per name, as the driver gives (profiles tell kernels apart by it).
    static std::map<std::string, Kernel> named;
    auto [it, added] = named.emplace(name, kNoOp);
    *function = reinterpret_cast<CUfunction>(&it->second);
    return kSuccess;
  }
  return kNotFound;
}
int cuLaunchKernel(CUfunction function, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                   unsigned, CUstream, void** params, void** extra) {
  if (int r = injected("cuLaunchKernel")) return during(r);
  if (!function) return during(kInvalidHandle);
  if (!params || extra || !gx || !gy || !gz || !bx || !by || !bz || bx * by * bz > 1024) return during(kInvalidValue);
  const Kernel* kernel = reinterpret_cast<const Kernel*>(function);
  return during(enqueue(kernel->bind(params, std::uint64_t(gx) * gy * gz * bx * by * bz)));
}

int cuStreamBeginCapture_v2(CUstream, int) {
  if (int r = injected("cuStreamBeginCapture_v2")) return r;
  if (state().capturing) return kInvalidValue;
  state().capturing = true;
  state().captureBroken = false;
  state().captured.clear();
  ++state().counters.captures;
  return kSuccess;
}
int cuStreamEndCapture(CUstream, CUgraph* graph) {
  if (!state().capturing) return kInvalidValue;
  state().capturing = false;
  *graph = nullptr;
  if (state().captureBroken) return kCaptureInvalidated;
  if (int r = injected("cuStreamEndCapture")) return r;
  *graph = reinterpret_cast<CUgraph>(new Graph{std::move(state().captured)});
  ++state().counters.graphs_live;
  return kSuccess;
}
int cuGraphInstantiateWithFlags(CUgraphExec* exec, CUgraph graph, unsigned long long) {
  if (int r = injected("cuGraphInstantiateWithFlags")) return r;
  if (!graph) return kInvalidValue;
  *exec = reinterpret_cast<CUgraphExec>(new Graph(*reinterpret_cast<Graph*>(graph)));
  ++state().counters.execs_live;
  return kSuccess;
}
int cuGraphLaunch(CUgraphExec exec, CUstream) {
  if (int r = injected("cuGraphLaunch")) return r;
  if (!exec || state().capturing) return kInvalidValue;
  for (Op& op : reinterpret_cast<Graph*>(exec)->ops)
    if (int r = op()) return r;
  ++state().counters.graph_launches;
  return kSuccess;
}
int cuGraphExecDestroy(CUgraphExec exec) {
  delete reinterpret_cast<Graph*>(exec);
  --state().counters.execs_live;
  return kSuccess;
}
int cuGraphDestroy(CUgraph graph) {
  delete reinterpret_cast<Graph*>(graph);
  --state().counters.graphs_live;
  return kSuccess;
}

// Events: the fake runs every operation when it is queued, so an event's
// time is the host's clock when it is recorded.
int cuEventCreate(CUevent* event, unsigned) {
  if (int r = injected("cuEventCreate")) return r;
  *event = reinterpret_cast<CUevent>(new double(0));
  return kSuccess;
}
int cuEventRecord(CUevent event, CUstream) {
  if (!event) return kInvalidHandle;
  if (state().capturing) return during(kCaptureUnsupported);
  *reinterpret_cast<double*>(event) =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
  return kSuccess;
}
int cuEventSynchronize(CUevent event) { return event ? kSuccess : kInvalidHandle; }
int cuEventElapsedTime_v2(float* milliseconds, CUevent start, CUevent end) {
  if (!start || !end) return kInvalidHandle;
  *milliseconds = static_cast<float>(*reinterpret_cast<double*>(end) - *reinterpret_cast<double*>(start));
  return kSuccess;
}
int cuEventDestroy_v2(CUevent event) {
  delete reinterpret_cast<double*>(event);
  return kSuccess;
}

}  // extern "C"
