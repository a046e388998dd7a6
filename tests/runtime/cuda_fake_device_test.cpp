// The whole CUDA device on a fake libcuda (cuda_fake_driver.cpp), which runs
// the test artifact's kernels on the CPU: buffers, loading, calls, the
// first-failure rule of cuda_api.h, and CUDA graphs (captured on the second
// call, replayed after, captured again when arguments move, given up when
// a capture fails), each checked against the driver calls the fake counted.
#include <catch2/catch.hpp>
#include <dlfcn.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cuda_fake_driver.h"
#include "cuda_test_artifact.h"
#include "device/cuda/cuda_device.h"
#include "device/cuda/driver_api.h"

using namespace linnet;
using namespace linnet::device::cuda;
using cuda_test::messageOf;
using cuda_test::readFloats;
using cuda_test::Runner;

namespace {

// The fake's controls, from the same loaded copy the device opens.
struct Fake {
  void (*reset)();
  void (*readCounters)(FakeCudaCounters*);
  void (*failCalls)(const char*, int, int, int);
  void (*setDeviceCount)(int);

  Fake() {
    void* handle = dlopen(LINNET_TEST_FAKE_CUDA, RTLD_NOW | RTLD_LOCAL);
    REQUIRE(handle);
    reset = reinterpret_cast<void (*)()>(dlsym(handle, "fake_cuda_reset"));
    readCounters = reinterpret_cast<void (*)(FakeCudaCounters*)>(dlsym(handle, "fake_cuda_counters"));
    failCalls = reinterpret_cast<void (*)(const char*, int, int, int)>(dlsym(handle, "fake_cuda_fail"));
    setDeviceCount = reinterpret_cast<void (*)(int)>(dlsym(handle, "fake_cuda_set_device_count"));
    REQUIRE((reset && readCounters && failCalls && setDeviceCount));
    reset();
  }
  // The next call of `function` returns `result` (`times` calls in a row).
  void fail(const char* function, int result, int times = 1) const { failCalls(function, result, 0, times); }
  FakeCudaCounters counters() const {
    FakeCudaCounters c;
    readCounters(&c);
    return c;
  }
};

struct Warnings {
  std::vector<std::string> seen;
  Options options(bool graphs = true) {
    Options o;
    o.driverLibrary = LINNET_TEST_FAKE_CUDA;
    o.graphs = graphs;
    o.warn = [this](const std::string& m) { seen.push_back(m); };
    return o;
  }
};

std::vector<float> iota(std::size_t n, float scale = 1.0f) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>(i);
  return v;
}

constexpr int64_t kN = 1000;  // not a multiple of the kernels' 256 threads per block
const std::string kFakeGpu = "device 0 (Fake GPU 0, compute capability 9.0)";

// A device, the test artifact loaded on it, and its zeroed state.
struct Loaded {
  std::unique_ptr<device::Device> device;
  std::unique_ptr<device::Executable> executable;
  device::BufferPtr acc;
  explicit Loaded(const Options& options) : device(create(options)) {
    executable = device->load(cuda_test::manifest(kN), cuda_test::artifactDir());
    acc = device->allocate(kN * 4);
  }
  Runner runner() { return Runner{*device, *executable, acc, {kN}}; }
};

}  // namespace

TEST_CASE("CUDA buffers on the fake driver", "[cuda][fake]") {
  Fake fake;
  Warnings w;
  {
    std::unique_ptr<device::Device> d = create(w.options());
    // Zeroed (the fake's fresh memory is not), 256-byte aligned.
    device::BufferPtr b = d->allocate(1000);
    CHECK(reinterpret_cast<std::uintptr_t>(b->address()) % 256 == 0);
    CHECK(b->size() == 1000);
    CHECK(readFloats(*d, *b, 250) == std::vector<float>(250, 0.0f));

    std::vector<float> two = {1.5f, -2.0f};
    d->write(*b, 8, cuda_test::bytesOf(two));
    std::vector<float> expected(250, 0.0f);
    expected[2] = 1.5f;
    expected[3] = -2.0f;
    CHECK(readFloats(*d, *b, 250) == expected);
    CHECK_THROWS_AS(d->write(*b, 996, cuda_test::bytesOf(two)), std::out_of_range);
    d->zero(*b);
    CHECK(readFloats(*d, *b, 250) == std::vector<float>(250, 0.0f));

    std::vector<float> values = iota(300, 0.25f);
    device::BufferPtr in = d->import(cuda_test::bytesOf(values), nullptr, 4);
    CHECK(readFloats(*d, *in, 300) == values);
    std::vector<float> host(300, 7.0f);
    device::BufferPtr out = d->importOutput(std::as_writable_bytes(std::span(host)));
    CHECK(out->address() != host.data());  // device memory, copied back by read()

    // A dropped buffer's block is the next one of its size, at the same address.
    void* address = in->address();
    long allocations = fake.counters().allocations;
    in.reset();
    CHECK(d->import(cuda_test::bytesOf(values), nullptr, 4)->address() == address);
    CHECK(fake.counters().allocations == allocations);
  }
  // Everything given back: memory, the stream, the context.
  FakeCudaCounters c = fake.counters();
  CHECK(c.live_allocations == 0);
  CHECK(c.streams_live == 0);
  CHECK(c.contexts_retained == 0);
}

TEST_CASE("CUDA device creation fails clearly on the fake driver", "[cuda][fake]") {
  Fake fake;
  Warnings w;
  fake.setDeviceCount(0);
  CHECK_THROWS_AS(create(w.options()), Unavailable);
  CHECK(messageOf([&] { create(w.options()); }) ==
        "no CUDA device: the driver sees no GPU; --backend cuda needs an NVIDIA GPU and its driver");
  fake.setDeviceCount(1);
  fake.fail("cuInit", 100);
  CHECK(messageOf([&] { create(w.options()); }) ==
        "no CUDA device: cuInit failed: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected); --backend cuda "
        "needs an NVIDIA GPU and its driver");
  // Any other failure is not "no GPU here": an error, not Unavailable.
  fake.fail("cuInit", 999);
  try {
    create(w.options());
    FAIL("no exception");
  } catch (const Unavailable&) {
    FAIL("reported as unavailable");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()) == "cuda: cuInit failed: CUresult 999");
  }
  Options third = w.options();
  third.ordinal = 3;
  CHECK(messageOf([&] { create(third); }) == "cuda: there is no device 3 (LINNET_CUDA_DEVICE): this machine has 1");
  CHECK(fake.counters().contexts_retained == 0);
}

TEST_CASE("CUDA out of memory: the pool is given back, then the error names the call", "[cuda][fake]") {
  Fake fake;
  Warnings w;
  std::unique_ptr<device::Device> d = create(w.options());
  device::BufferPtr kept = d->allocate(512);
  kept.reset();  // in the pool now
  long frees = fake.counters().frees;
  fake.fail("cuMemAlloc_v2", 2);
  device::BufferPtr b = d->allocate(4096);  // failed once, pool drained, retried
  CHECK(fake.counters().frees == frees + 1);
  fake.fail("cuMemAlloc_v2", 2, 2);  // the retry fails too
  CHECK(messageOf([&] {
          d->allocate(3 << 20);
        }).starts_with("cuda: cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory), allocating"));
}

TEST_CASE("a CUDA artifact runs on the fake driver, replayed as a graph from the second call", "[cuda][fake]") {
  Fake fake;
  Warnings w;
  std::vector<float> x = iota(kN);
  {
    Loaded l(w.options());
    Runner run = l.runner();
    CHECK(fake.counters().modules_loaded == 1);

    // Call 1 plainly, call 2 captured and replayed, call 3 replayed.
    for (int call = 1; call <= 3; ++call) {
      CHECK(run.call(cuda_test::Twice, x) == iota(kN, 2.0f));
      FakeCudaCounters c = fake.counters();
      CHECK(c.captures == (call == 1 ? 0 : 1));
      CHECK(c.graph_launches == call - 1);
      CHECK(c.kernels_run == call);
    }
    // The state is updated in place by each replay too.
    for (int call = 1; call <= 3; ++call) CHECK(run.call(cuda_test::Accumulate, x) == iota(kN, float(call)));
    CHECK(fake.counters().captures == 2);
    for (int call = 1; call <= 3; ++call) CHECK(run.call(cuda_test::Fill, x) == std::vector<float>(kN, 3.0f));
    // The memory init made outlives every call's arena.
    std::vector<float> plusFive(kN);
    for (int64_t i = 0; i < kN; ++i) plusFive[i] = float(i) + 5;
    for (int call = 1; call <= 3; ++call) CHECK(run.call(cuda_test::FromInit, x) == plusFive);
    CHECK(w.seen.empty());

    // A copy from host memory cannot be captured: reported once, and the
    // entry runs plainly from then on, with the right result.
    long captures = fake.counters().captures;
    for (int call = 1; call <= 3; ++call) CHECK(run.call(cuda_test::Constant, x) == iota(kN, 0.5f));
    CHECK(fake.counters().captures == captures + 1);
    REQUIRE(w.seen.size() == 1);
    CHECK(w.seen[0] == "cuda: entry `constant` runs without a CUDA graph: capturing it failed: cuMemcpyAsync failed: "
                       "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED (operation not permitted when stream is capturing)");
    CHECK(fake.counters().execs_live == 4);
  }
  FakeCudaCounters c = fake.counters();
  CHECK(c.modules_unloaded == c.modules_loaded);
  CHECK(c.execs_live == 0);
  CHECK(c.graphs_live == 0);
  CHECK(c.live_allocations == 0);
  CHECK(c.contexts_retained == 0);
}

TEST_CASE("an entry that reads a device value on the host runs plainly every call, without a warning", "[cuda][fake]") {
  Fake fake;
  Warnings w;
  Loaded l(w.options());
  Runner run = l.runner();
  for (int call = 1; call <= 4; ++call) {
    // The value read is the kernel's result for this call's x.
    std::vector<float> x(kN, float(call));
    CHECK(run.call(cuda_test::ReadFirst, x) == std::vector<float>(kN, 2.0f * float(call) + 1.0f));
  }
  FakeCudaCounters c = fake.counters();
  CHECK(c.captures == 1);  // tried once, at the second call; the read ended it
  CHECK(c.graph_launches == 0);
  CHECK(c.execs_live == 0);
  CHECK(c.kernels_run == 4);
  CHECK(w.seen.empty());
}

TEST_CASE("seeded random values drawn by the device's kernel are the host's, bit for bit", "[cuda][fake]") {
  // The fake runs the kernel's twin (cuda_fake_driver.cpp): this checks the
  // launch (parameters, offset, grid) and the module's load; the PTX's own
  // arithmetic is checked on a GPU (cuda_gpu_test.cpp).
  Fake fake;
  Warnings w;
  std::unique_ptr<device::Device> d = create(w.options());
  CHECK(cuda_test::randomFillProblems(*d, 3001) == std::vector<std::string>{});
  device::BufferPtr b = d->allocate(100);
  CHECK_THROWS_AS(d->fillRandom(*b, 4, RandomFill{DType::F32, 25, 1, 0, 0.02}), std::out_of_range);
  CHECK(fake.counters().random_fills == 4);
  CHECK(fake.counters().kernels_run == 0);
}

TEST_CASE("LINNET_CUDA_GRAPHS=0: no capture, the same bits", "[cuda][fake]") {
  Fake fake;
  Warnings w;
  std::vector<float> x = iota(kN, 0.1f);
  std::vector<std::vector<float>> with, without;
  {
    Loaded l(w.options(true));
    Runner run = l.runner();
    for (int call = 0; call < 4; ++call) with.push_back(run.call(cuda_test::Accumulate, x));
  }
  CHECK(fake.counters().captures == 1);
  fake.reset();
  {
    Loaded l(w.options(false));
    Runner run = l.runner();
    for (int call = 0; call < 4; ++call) without.push_back(run.call(cuda_test::Accumulate, x));
  }
  CHECK(fake.counters().captures == 0);
  CHECK(fake.counters().graph_launches == 0);
  CHECK(with == without);
}

TEST_CASE("arguments that move are captured again, and too often end the graph", "[cuda][fake]") {
  Fake fake;
  Warnings w;
  Loaded l(w.options());
  std::vector<float> x = iota(kN);
  std::vector<float> y(kN);
  std::vector<int64_t> shape = {kN};
  std::vector<device::BufferPtr> held;  // each call's input kept, so the next one is elsewhere
  auto callMoved = [&] {
    held.push_back(l.device->import(cuda_test::bytesOf(x), nullptr, 4));
    device::BufferPtr out = l.device->importOutput(std::as_writable_bytes(std::span(y)));
    device::Argument args[] = {{held.back().get(), shape}, {l.acc.get(), shape}, {out.get(), shape}};
    l.executable->call(cuda_test::Twice, args);
    l.device->read(*out, std::as_writable_bytes(std::span(y)));
    CHECK(y == iota(kN, 2.0f));
  };
  callMoved();  // plain
  for (int k = 1; k <= 4; ++k) {
    callMoved();
    CHECK(fake.counters().captures == k);
  }
  CHECK(fake.counters().execs_live == 1);
  callMoved();  // a fifth capture in a row: no more
  CHECK(fake.counters().captures == 4);
  CHECK(fake.counters().execs_live == 0);
  REQUIRE(w.seen.size() == 1);
  CHECK(w.seen[0] ==
        "cuda: entry `twice` runs without a CUDA graph from now on: its arguments moved in 4 calls in a row");
  callMoved();
  CHECK(fake.counters().captures == 4);
}

TEST_CASE("a failed CUDA call throws its first failure, naming the entry, and the next call works", "[cuda][fake]") {
  Fake fake;
  Warnings w;
  Loaded l(w.options());
  Runner run = l.runner();
  std::vector<float> x = iota(kN);

  // The launch fails: the copy after it is not made.
  fake.fail("cuLaunchKernel", 1);
  CHECK(messageOf([&] { run.call(cuda_test::Twice, x); }) ==
        "cuda: entry `twice`: cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE (invalid argument)");
  CHECK(fake.counters().copies == 0);
  CHECK(run.call(cuda_test::Twice, x) == iota(kN, 2.0f));

  // A kernel lookup fails: nothing after it runs.
  long fills = fake.counters().fills;
  CHECK(messageOf([&] { run.call(cuda_test::Missing, x); }) ==
        "cuda: entry `missing`: cuModuleGetFunction(`missing`) failed: CUDA_ERROR_NOT_FOUND (named symbol not found)");
  CHECK(fake.counters().fills == fills);

  // A failure the stream reports when waited for.
  fake.fail("cuStreamSynchronize", 700);
  CHECK(messageOf([&] { run.call(cuda_test::Fill, x); }) ==
        "cuda: entry `fill`: cuStreamSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was "
        "encountered); LINNET_CUDA_SYNC=1 names the operation that failed");
  CHECK(run.call(cuda_test::Fill, x) == std::vector<float>(kN, 3.0f));
  CHECK(w.seen.empty());
}

TEST_CASE("LINNET_CUDA_SYNC=1: each operation is waited for, and a fault names its kernel", "[cuda][fake]") {
  Fake fake;
  Warnings w;
  Options options = w.options();
  options.syncEach = true;
  Loaded l(options);
  Runner run = l.runner();
  std::vector<float> x = iota(kN);

  // No graphs: every call runs plainly, with the same bits.
  for (int call = 1; call <= 3; ++call) CHECK(run.call(cuda_test::Twice, x) == iota(kN, 2.0f));
  CHECK(fake.counters().captures == 0);
  CHECK(fake.counters().graph_launches == 0);

  // The kernel's fault surfaces in the wait right after it: the kernel is
  // named, and the copy after it is not made.
  long copies = fake.counters().copies;
  fake.fail("cuStreamSynchronize", 700);
  CHECK(messageOf([&] { run.call(cuda_test::Twice, x); }) ==
        "cuda: entry `twice`: kernel `scale` (unknown, grid 4x1x1, block 256x1x1) failed: cuStreamSynchronize "
        "failed: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered)");
  CHECK(fake.counters().copies == copies);
  // The wait after the copy: the copy is named.
  fake.failCalls("cuStreamSynchronize", 700, 1, 1);
  CHECK(messageOf([&] { run.call(cuda_test::Twice, x); }) ==
        "cuda: entry `twice`: a copy of 4000 bytes failed: cuStreamSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS "
        "(an illegal memory access was encountered)");
  CHECK(run.call(cuda_test::Twice, x) == iota(kN, 2.0f));
  CHECK(w.seen.empty());
}

TEST_CASE("the copy bandwidth: timed by a pair of events, released on every path", "[cuda][fake]") {
  Fake fake;
  Warnings w;
  std::unique_ptr<device::Device> device = create(w.options());
  std::optional<double> bandwidth = device->copyBandwidth(std::size_t(1) << 20, 3);
  REQUIRE(bandwidth);
  CHECK(*bandwidth > 0);
  CHECK(fake.counters().copies == 4);  // a warm-up and 3 timed
  // The second event cannot be made: the first is destroyed (the
  // sanitizer build's leak check), and the error names the call.
  fake.failCalls("cuEventCreate", 2, 1, 1);
  CHECK(messageOf([&] { device->copyBandwidth(std::size_t(1) << 20, 1); }) ==
        "cuda: cuEventCreate failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)");
  CHECK(device->copyBandwidth(std::size_t(1) << 20, 1));
}

TEST_CASE("a capture that fails ends cleanly and the call runs plainly", "[cuda][fake]") {
  Fake fake;
  Warnings w;
  Loaded l(w.options());
  Runner run = l.runner();
  std::vector<float> x = iota(kN);

  SECTION("a launch fails while capturing") {
    CHECK(run.call(cuda_test::Accumulate, x) == iota(kN, 1.0f));
    fake.fail("cuLaunchKernel", 1);
    CHECK(run.call(cuda_test::Accumulate, x) == iota(kN, 2.0f));  // added once, by the plain call
    REQUIRE(w.seen.size() == 1);
    CHECK(w.seen[0] ==
          "cuda: entry `accumulate` runs without a CUDA graph: capturing it failed: cuLaunchKernel failed: "
          "CUDA_ERROR_INVALID_VALUE (invalid argument)");
  }
  SECTION("the graph cannot be instantiated") {
    CHECK(run.call(cuda_test::Accumulate, x) == iota(kN, 1.0f));
    fake.fail("cuGraphInstantiateWithFlags", 2);
    CHECK(run.call(cuda_test::Accumulate, x) == iota(kN, 2.0f));
    REQUIRE(w.seen.size() == 1);
    CHECK(w.seen[0].ends_with("capturing it failed: cuGraphInstantiateWithFlags failed: CUDA_ERROR_OUT_OF_MEMORY "
                              "(out of memory)"));
    CHECK(fake.counters().graphs_live == 0);
  }
  SECTION("the capture cannot begin") {
    CHECK(run.call(cuda_test::Accumulate, x) == iota(kN, 1.0f));
    fake.fail("cuStreamBeginCapture_v2", 1);
    CHECK(run.call(cuda_test::Accumulate, x) == iota(kN, 2.0f));
    REQUIRE(w.seen.size() == 1);
  }
  // The stream is out of capture mode and the entry keeps working, plainly.
  CHECK(run.call(cuda_test::Accumulate, x) == iota(kN, 3.0f));
  CHECK(fake.counters().execs_live == 0);
  // Other entries still get graphs.
  run.call(cuda_test::Twice, x);
  run.call(cuda_test::Twice, x);
  CHECK(fake.counters().execs_live == 1);
}

TEST_CASE("loading a CUDA artifact: what fails is named", "[cuda][fake]") {
  Fake fake;
  Warnings w;
  std::unique_ptr<device::Device> d = create(w.options());
  std::string lib = LINNET_TEST_CUDA_MODEL;
  artifact::Manifest m = cuda_test::manifest(kN);

  fake.fail("cuModuleLoadData", 209);
  CHECK(messageOf([&] { d->load(m, cuda_test::artifactDir()); }) ==
        lib +
            ": linnet_cuda_bind failed: cuModuleLoadData failed: CUDA_ERROR_NO_BINARY_FOR_GPU (no kernel image is "
            "available for execution on the device) on " +
            kFakeGpu);
  fake.fail("cuMemsetD32Async", 1);
  CHECK(messageOf([&] { d->load(m, cuda_test::artifactDir()); }) ==
        lib + ": linnet_test_init: cuMemsetD32Async failed: CUDA_ERROR_INVALID_VALUE (invalid argument)");

  artifact::Manifest other = m;
  other.target = "cpu";
  CHECK(messageOf([&] { d->load(other, cuda_test::artifactDir()); }) ==
        cuda_test::artifactDir().string() + ": the artifact is built for target `cpu`, not cuda");
  artifact::Manifest missing = m;
  missing.entries[0].symbol = "linnet_call_nope";
  CHECK(messageOf([&] { d->load(missing, cuda_test::artifactDir()); }) == lib + ": no symbol linnet_call_nope");
  // Every failed load gave back what it took.
  FakeCudaCounters c = fake.counters();
  CHECK(c.modules_unloaded == c.modules_loaded);
}

TEST_CASE("one CUDA artifact loaded twice at once", "[cuda][fake]") {
  // The launch shim keeps its table in statics: the second load must not
  // take the first one's over.
  Fake fake;
  Warnings w;
  Loaded first(w.options());
  std::vector<float> x = iota(kN);
  {
    Loaded second(w.options());
    CHECK(second.runner().call(cuda_test::Accumulate, x) == iota(kN));
    CHECK(first.runner().call(cuda_test::Accumulate, x) == iota(kN));
  }
  for (int call = 2; call <= 4; ++call) CHECK(first.runner().call(cuda_test::Accumulate, x) == iota(kN, float(call)));
}
