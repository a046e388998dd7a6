// The CUDA device on a real GPU ([gpu]: `linnet_cuda_device_tests [gpu]`,
// ctest cuda_device_gpu, which reports itself skipped where this machine
// cannot run CUDA; cuda_device_main.cpp). The same checks as on the fake
// driver, so a GPU run and a CPU run can be compared.
#include <catch2/catch.hpp>

#include <vector>

#include "cuda_test_artifact.h"
#include "device/cuda/cuda_device.h"

using namespace linnet;
using namespace linnet::device::cuda;
using cuda_test::readFloats;

namespace {

std::vector<float> ramp(std::size_t n, float scale) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>(i);
  return v;
}

// Every entry of the test artifact three times (plain, captured, replayed).
std::vector<std::vector<float>> runAll(const Options& options, std::vector<std::string>& warnings) {
  constexpr int64_t n = 3000;
  Options o = options;
  o.warn = [&](const std::string& m) { warnings.push_back(m); };
  std::unique_ptr<device::Device> d = create(o);
  std::unique_ptr<device::Executable> e = d->load(cuda_test::manifest(n), cuda_test::artifactDir());
  cuda_test::Runner run{*d, *e, d->allocate(n * 4), {n}};
  std::vector<float> x = ramp(n, 0.5f);
  std::vector<std::vector<float>> out;
  for (auto entry : {cuda_test::Twice, cuda_test::Accumulate, cuda_test::Fill, cuda_test::Constant, cuda_test::FromInit,
                     cuda_test::ReadFirst})
    for (int call = 0; call < 3; ++call) out.push_back(run.call(entry, x));
  return out;
}

}  // namespace

TEST_CASE("CUDA buffers on the GPU", "[gpu]") {
  std::unique_ptr<device::Device> d = create(optionsFromEnvironment());
  constexpr std::size_t n = 1 << 20;  // 4 MiB
  device::BufferPtr b = d->allocate(n * 4);
  CHECK(reinterpret_cast<std::uintptr_t>(b->address()) % 256 == 0);
  CHECK(readFloats(*d, *b, n) == std::vector<float>(n, 0.0f));
  std::vector<float> values = ramp(n, 0.25f);
  d->write(*b, 0, cuda_test::bytesOf(values));
  CHECK(readFloats(*d, *b, n) == values);
  d->zero(*b);
  CHECK(readFloats(*d, *b, n) == std::vector<float>(n, 0.0f));
  device::BufferPtr in = d->import(cuda_test::bytesOf(values), nullptr, 4);
  CHECK(readFloats(*d, *in, n) == values);
}

TEST_CASE("the test artifact on the GPU, with graphs and without", "[gpu]") {
  std::vector<std::string> warnings;
  Options on = optionsFromEnvironment(), off = on;
  on.graphs = true;
  off.graphs = false;
  std::vector<std::vector<float>> graphs = runAll(on, warnings);
  // Only the entry that copies from host memory may fail to be captured.
  CHECK(warnings.size() <= 1);
  for (const std::string& w : warnings) CHECK(w.find("`constant`") != std::string::npos);
  constexpr std::size_t n = 3000;
  std::vector<float> x = ramp(n, 0.5f), plusFive(n);
  for (std::size_t i = 0; i < n; ++i) plusFive[i] = x[i] + 5;
  for (int call = 0; call < 3; ++call) {
    CHECK(graphs[0 + call] == ramp(n, 1.0f));               // twice
    CHECK(graphs[3 + call] == ramp(n, 0.5f * (call + 1)));  // accumulate
    CHECK(graphs[6 + call] == std::vector<float>(n, 3.0f));
    CHECK(graphs[9 + call] == ramp(n, 0.5f));  // the host constant i / 2
    CHECK(graphs[12 + call] == plusFive);
    CHECK(graphs[15 + call] == std::vector<float>(n, 1.0f));  // read_first: 2 x[0] + 1, never a graph
  }
  std::vector<std::string> none;
  CHECK(runAll(off, none) == graphs);  // bit for bit
  CHECK(none.empty());
}

TEST_CASE("seeded random values drawn on the GPU are the host's, bit for bit", "[gpu]") {
  std::unique_ptr<device::Device> d = create(optionsFromEnvironment());
  // More elements than the kernel's grid has threads: the grid-stride loop.
  CHECK(cuda_test::randomFillProblems(*d, (std::uint64_t{1} << 20) + 12345) == std::vector<std::string>{});
}
