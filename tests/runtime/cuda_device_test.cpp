// The CUDA device's parts that need no driver at all: the messages where
// there is none, the driver symbol table, the arena, the block pool and the
// graph policy (runtime/device/cuda).
#include <catch2/catch.hpp>
#include <dlfcn.h>
#include <stdlib.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>

#include "cuda_test_artifact.h"
#include "device/cuda/arena.h"
#include "device/cuda/block_pool.h"
#include "device/cuda/cuda_device.h"
#include "device/cuda/driver_api.h"
#include "device/cuda/graph_policy.h"

using namespace linnet::device::cuda;
using linnet::cuda_test::messageOf;

namespace {

// An environment variable set for one scope.
struct ScopedEnv {
  std::string name;
  ScopedEnv(std::string n, const char* value) : name(std::move(n)) { setenv(name.c_str(), value, 1); }
  ~ScopedEnv() { unsetenv(name.c_str()); }
};

}  // namespace

TEST_CASE("without a driver, creating the CUDA device fails with one line", "[cuda]") {
  const std::string missing = "/nonexistent/libcuda.so.1";
  const std::string expected =
      "no CUDA driver: cannot load /nonexistent/libcuda.so.1 (/nonexistent/libcuda.so.1: cannot open shared object "
      "file: No such file or directory); --backend cuda needs an NVIDIA GPU and its driver";
  Options options;
  options.driverLibrary = missing;
  CHECK_THROWS_AS(create(options), Unavailable);
  CHECK(messageOf([&] { create(options); }) == expected);
  // The same through the registry's driver, as `linnet --backend cuda` makes it.
  ScopedEnv env("LINNET_CUDA_DRIVER", missing.c_str());
  CHECK(messageOf([] { driver().create(); }) == expected);
  CHECK(expected.find('\n') == std::string::npos);
}

TEST_CASE("the CUDA driver names its backend and target", "[cuda]") {
  linnet::device::Driver d = driver();
  CHECK(d.name == "cuda");
  CHECK(d.target == "cuda");
  CHECK(!d.summary.empty());
  CHECK(d.summary.find('\n') == std::string_view::npos);
}

TEST_CASE("the CUDA environment variables", "[cuda]") {
  {
    Options defaults = optionsFromEnvironment();
    CHECK(defaults.driverLibrary == "libcuda.so.1");
    CHECK(defaults.ordinal == 0);
    CHECK(defaults.graphs);
  }
  {
    ScopedEnv device("LINNET_CUDA_DEVICE", "2");
    ScopedEnv graphs("LINNET_CUDA_GRAPHS", "0");
    Options o = optionsFromEnvironment();
    CHECK(o.ordinal == 2);
    CHECK(!o.graphs);
  }
  {
    ScopedEnv graphs("LINNET_CUDA_GRAPHS", "1");
    CHECK(optionsFromEnvironment().graphs);
  }
  for (const char* bad : {"one", "-1", "1x"}) {
    ScopedEnv device("LINNET_CUDA_DEVICE", bad);
    CHECK(messageOf([] { optionsFromEnvironment(); }) ==
          std::string("cuda: LINNET_CUDA_DEVICE=") + bad + ": not a device number (0, 1, ...)");
  }
}

TEST_CASE("the driver symbol table", "[cuda]") {
  std::set<std::string_view> names, symbols;
  for (const DriverSymbol& s : driverSymbols()) {
    INFO(s.name << " " << s.symbol);
    CHECK(!s.name.empty());
    CHECK(s.name.starts_with("cu"));
    // The exported symbol is the name or a versioned form of it (cuMemAlloc_v2).
    CHECK((s.symbol == s.name || s.symbol.starts_with(std::string(s.name) + "_v")));
    CHECK(names.insert(s.name).second);
    CHECK(symbols.insert(s.symbol).second);
  }
  // What the device cannot do without.
  for (const char* needed : {"cuInit", "cuMemAlloc", "cuLaunchKernel", "cuStreamBeginCapture", "cuGraphLaunch"})
    CHECK(names.count(needed));
}

TEST_CASE("the driver symbols are those the toolkit's libcuda exports", "[cuda]") {
  // The toolkit's stub libcuda.so exports every driver function (and answers
  // each with CUDA_ERROR_STUB_LIBRARY): a table entry it lacks would be a
  // misspelt or wrongly versioned name.
  std::string stub = LINNET_TEST_CUDA_STUB;
  if (stub.empty()) {
    WARN("no CUDA toolkit stub libcuda.so found at configure time: not checked");
    return;
  }
  std::shared_ptr<const DriverApi> api;
  REQUIRE_NOTHROW(api = DriverApi::open(stub));
  CHECK(api->cuInit(0) == CUDA_ERROR_STUB_LIBRARY);
  // The stub cannot name its errors either: the number is all a message has.
  CHECK(api->describe(CUDA_ERROR_STUB_LIBRARY, "cuInit") == "cuInit failed: CUresult 34");
  Options options;
  options.driverLibrary = stub;
  CHECK(messageOf([&] { create(options); }) ==
        "no CUDA driver: " + stub +
            " is the CUDA toolkit's stub library, not a driver; --backend cuda needs an NVIDIA GPU and its driver");
}

TEST_CASE("the arena hands out aligned addresses that repeat from call to call", "[cuda][arena]") {
  std::map<std::uint64_t, std::size_t> live;  // a fake device: addresses 4096 apart from 1 MiB up
  std::uint64_t next = 1 << 20;
  int allocations = 0;
  Arena::Allocate allocate = [&](std::size_t bytes) {
    ++allocations;
    std::uint64_t a = next;
    next += (bytes + 4095) / 4096 * 4096 + 4096;
    live[a] = bytes;
    return a;
  };
  Arena::Free release = [&](std::uint64_t a) { live.erase(a); };
  {
    Arena arena(allocate, release, 4096);
    CHECK(allocations == 0);  // nothing until the code asks

    auto run = [&] {
      std::vector<std::uint64_t> out;
      for (std::size_t bytes : {1, 300, 0, 1024, 2000, 5000, 256, 4000}) out.push_back(arena.allocate(bytes));
      arena.reset();
      return out;
    };
    std::vector<std::uint64_t> first = run();
    int grown = allocations;
    CHECK(grown == 3);  // 4096, then 8192, then 16384 bytes
    for (std::uint64_t a : first) CHECK(a % Arena::kAlignment == 0);
    std::set<std::uint64_t> distinct(first.begin(), first.end());
    CHECK(distinct.size() == first.size());
    // Each allocation lies inside one chunk, after the previous ones of that chunk.
    CHECK(first[1] == first[0] + 256);
    CHECK(first[2] == first[1] + 512);  // 300 rounds up to 512
    CHECK(first[3] == first[2] + 256);  // 0 counts as 1
    CHECK(arena.chunks().size() == 3);
    CHECK(arena.chunks()[0].bytes == 4096);
    CHECK(arena.chunks()[1].bytes == 8192);
    CHECK(arena.chunks()[2].bytes == 16384);
    CHECK(first[4] == arena.chunks()[0].address + 2048);
    CHECK(first[5] == arena.chunks()[1].address);  // 5120 bytes: past the first chunk's rest
    CHECK(first[6] == arena.chunks()[1].address + 5120);
    CHECK(first[7] == arena.chunks()[2].address);  // 4096 bytes: past the second chunk's rest
    CHECK(arena.peakBytes() == 256 + 512 + 256 + 1024 + 2048 + 5120 + 256 + 4096);

    // The same requests again: the same addresses, nothing allocated.
    CHECK(run() == first);
    CHECK(run() == first);
    CHECK(allocations == grown);

    // A larger request than any chunk: a chunk of its own, the others never move.
    std::vector<Arena::Chunk> before = arena.chunks();
    std::uint64_t big = arena.allocate(100000);
    CHECK(arena.chunks().size() == 4);
    CHECK(arena.chunks()[3].bytes == 100096);
    CHECK(big == arena.chunks()[3].address);
    for (std::size_t i = 0; i < before.size(); ++i) CHECK(arena.chunks()[i].address == before[i].address);
    arena.reset();
    CHECK(run() == first);
  }
  CHECK(live.empty());  // every chunk freed with the arena
}

TEST_CASE("the arena reuses released bytes, first fit, the same way every call", "[cuda][arena]") {
  std::uint64_t next = 1 << 20;
  int chunksMade = 0;
  Arena arena(
      [&](std::size_t bytes) {
        ++chunksMade;
        std::uint64_t a = next;
        next += bytes + 4096;
        return a;
      },
      [](std::uint64_t) {}, 4096);
  // A call's requests and releases, as the compiler's lifetimes order them:
  // each step allocates, then releases what no later launch uses.
  auto run = [&] {
    std::vector<std::uint64_t> out;
    std::uint64_t a = arena.allocate(1024), b = arena.allocate(1024), c = arena.allocate(1024);
    out.insert(out.end(), {a, b, c});
    CHECK(arena.release(b));
    std::uint64_t d = arena.allocate(512);  // into b's hole
    CHECK(d == b);
    CHECK(arena.release(a));
    CHECK(arena.release(d));               // a, d and b's rest merge into one hole
    std::uint64_t e = arena.allocate(2048);  // which now holds 2048 from a's address
    CHECK(e == a);
    CHECK(arena.release(c));
    CHECK(arena.release(e));
    std::uint64_t f = arena.allocate(4096);  // the whole chunk again
    CHECK(f == a);
    std::uint64_t g = arena.allocate(256);   // no room left: a second chunk
    out.insert(out.end(), {d, e, f, g});
    CHECK_FALSE(arena.release(g + 256));     // not an address it handed out
    CHECK_FALSE(arena.release(b + 1));
    arena.reset();
    return out;
  };
  std::vector<std::uint64_t> first = run();
  CHECK(chunksMade == 2);
  CHECK(arena.chunks().size() == 2);
  CHECK(first[6] == arena.chunks()[1].address);
  CHECK(arena.peakBytes() == 4096 + 256);
  CHECK(run() == first);  // the same requests and releases: the same addresses
  CHECK(chunksMade == 2);
  CHECK_FALSE(arena.release(first[0]));  // after the reset nothing is live
}

TEST_CASE("the arena survives a failed allocation", "[cuda][arena]") {
  bool fail = true;
  std::uint64_t next = 1 << 20;
  Arena arena(
      [&](std::size_t bytes) -> std::uint64_t {
        if (fail) throw std::runtime_error("cuda: cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)");
        std::uint64_t a = next;
        next += bytes;
        return a;
      },
      [](std::uint64_t) {}, 1024);
  CHECK_THROWS_WITH(arena.allocate(10), "cuda: cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)");
  CHECK(arena.chunks().empty());
  arena.reset();
  fail = false;
  CHECK(arena.allocate(10) == std::uint64_t(1) << 20);
}

TEST_CASE("the block pool reuses blocks by exact size, lowest address first", "[cuda][pool]") {
  CHECK(BlockPool::blockBytes(0) == 256);
  CHECK(BlockPool::blockBytes(1) == 256);
  CHECK(BlockPool::blockBytes(256) == 256);
  CHECK(BlockPool::blockBytes(257) == 512);
  BlockPool pool;
  CHECK(!pool.take(256));
  // Given back in either order, the same blocks come out in the same order.
  pool.keep(0x3000, 256);
  pool.keep(0x1000, 256);
  pool.keep(0x2000, 512);
  CHECK(pool.keptBytes() == 1024);
  CHECK(pool.take(256) == std::uint64_t(0x1000));
  CHECK(pool.take(256) == std::uint64_t(0x3000));
  CHECK(!pool.take(256));
  CHECK(!pool.take(768));
  pool.keep(0x1000, 256);
  auto drained = pool.drain();
  CHECK(drained.size() == 2);
  CHECK(pool.keptBytes() == 0);
  CHECK(!pool.take(512));
}

TEST_CASE("the graph policy: warm up, capture, replay while arguments stay", "[cuda][graphs]") {
  GraphPolicy p;
  std::vector<std::uint64_t> a = {0x100, 0x200}, b = {0x100, 0x300};
  using Step = GraphPolicy::Step;
  CHECK(p.next(a) == Step::Plain);  // the first call runs plainly
  p.ranPlainly();
  CHECK(p.next(a) == Step::Capture);
  p.captured(a);
  CHECK(p.next(a) == Step::Replay);
  p.replayed();
  CHECK(p.next(a) == Step::Replay);
  p.replayed();
  CHECK(p.next(b) == Step::Capture);  // an argument moved
  p.captured(b);
  CHECK(p.next(b) == Step::Replay);
  p.replayed();

  SECTION("arguments that move on every call end the graphs") {
    for (int i = 0; i < GraphPolicy::kMaxRecaptures; ++i) {
      std::vector<std::uint64_t> moved = {0x1000u + i};
      CHECK(p.next(moved) == Step::Capture);
      p.captured(moved);
    }
    CHECK(p.next({0x9999}) == Step::Plain);
    CHECK(p.gaveUp());
    CHECK(p.movedTooOften());
    CHECK(p.next(b) == Step::Plain);
  }
  SECTION("a failed capture ends them") {
    p.giveUp();
    CHECK(p.next(b) == Step::Plain);
    CHECK(!p.movedTooOften());
  }
}
