#include "device/host/host.h"

#include <dlfcn.h>
#include <malloc.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

#include "artifact/abi.h"

namespace linnet::device::host {

namespace {

// Host memory, owned (allocated here) or borrowed (kept alive by `owner`).
class HostBuffer : public Buffer {
 public:
  HostBuffer(void* address, std::size_t size, std::shared_ptr<const void> owner)
      : Buffer(address, size), owner_(std::move(owner)) {}

 private:
  std::shared_ptr<const void> owner_;
};

// 64-byte alignment: what the compiled code's own allocations use.
constexpr std::size_t kAlignment = 64;

BufferPtr allocateHost(std::size_t bytes) {
  std::size_t n = (std::max<std::size_t>(bytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
  void* p = std::aligned_alloc(kAlignment, n);
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, n);
  return std::make_shared<HostBuffer>(p, bytes, std::shared_ptr<const void>(p, std::free));
}

class HostExecutable : public Executable {
 public:
  HostExecutable(const artifact::Manifest& manifest, const std::filesystem::path& dir, int threads) {
    std::string lib = (dir / manifest.library).string();
    if (manifest.library.empty()) throw std::runtime_error(fmt::format("{}: the artifact has no code", dir.string()));
    artifact::requireLibrary(manifest, dir);
    library_ = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!library_) throw std::runtime_error(fmt::format("{}: cannot load: {}", lib, dlerror()));
    for (const auto& e : manifest.entries) {
      auto fn = reinterpret_cast<void (*)(void**)>(dlsym(library_, e.symbol.c_str()));
      if (!fn) throw std::runtime_error(fmt::format("{}: no symbol {}", lib, e.symbol));
      entries_.push_back(fn);
    }
    // Code built with parallel loops exports its thread setting (targets/cpu).
    if (auto set = reinterpret_cast<void (*)(int)>(dlsym(library_, "linnet_set_threads"))) set(threads);
    // Argument-independent tensors (hoisted constants) are computed once, now.
    if (!manifest.init.empty()) {
      auto init = reinterpret_cast<void (*)()>(dlsym(library_, manifest.init.c_str()));
      if (!init) throw std::runtime_error(fmt::format("{}: no symbol {}", lib, manifest.init));
      init();
    }
  }
  ~HostExecutable() override {
    if (library_) dlclose(library_);
  }

  void call(std::size_t entry, std::span<const Argument> args) override {
    std::vector<std::vector<int64_t>> descriptors;
    descriptors.reserve(args.size());
    for (const Argument& a : args) descriptors.push_back(artifact::descriptor(a.buffer->address(), a.shape));
    std::vector<void*> pointers;
    for (auto& d : descriptors) pointers.push_back(d.data());
    entries_.at(entry)(pointers.data());
  }

 private:
  void* library_ = nullptr;
  std::vector<void (*)(void**)> entries_;
};

class HostDevice : public Device {
 public:
  HostDevice() {
    // Compiled code mallocs its intermediate buffers on every call (a
    // prefill's scores are megabytes). glibc maps blocks past its dynamic
    // threshold fresh each time and returns them on free, so every call
    // page-faulted its buffers in again (about 8% of a 512-token prefill).
    // Keep blocks up to glibc's largest threshold in the heap, and the heap's
    // top untrimmed, so a call reuses the previous call's pages.
    static const bool tuned = [] {
      mallopt(M_MMAP_THRESHOLD, 32 << 20);
      mallopt(M_TRIM_THRESHOLD, 512 << 20);
      return true;
    }();
    (void)tuned;
  }
  bool hostAddressable() const override { return true; }
  BufferPtr allocate(std::size_t bytes) override { return allocateHost(bytes); }

  BufferPtr import(std::span<const std::byte> bytes, std::shared_ptr<const void> owner,
                   std::size_t alignment) override {
    if (reinterpret_cast<uintptr_t>(bytes.data()) % std::max<std::size_t>(alignment, 1) == 0)
      return std::make_shared<HostBuffer>(const_cast<std::byte*>(bytes.data()), bytes.size(), std::move(owner));
    BufferPtr b = allocateHost(bytes.size());
    if (!bytes.empty()) std::memcpy(b->address(), bytes.data(), bytes.size());
    return b;
  }

  BufferPtr importOutput(std::span<std::byte> bytes) override {
    return std::make_shared<HostBuffer>(bytes.data(), bytes.size(), nullptr);
  }

  void write(Buffer& to, std::size_t offset, std::span<const std::byte> bytes) override {
    if (offset + bytes.size() > to.size()) throw std::out_of_range("write past the end of a buffer");
    if (!bytes.empty()) std::memcpy(static_cast<std::byte*>(to.address()) + offset, bytes.data(), bytes.size());
  }

  void read(const Buffer& from, std::span<std::byte> into) override {
    if (into.data() == from.address() || into.empty()) return;  // an output written in place
    std::memcpy(into.data(), from.address(), std::min(into.size(), from.size()));
  }

  void readAt(const Buffer& from, std::size_t offset, std::span<std::byte> into) override {
    if (offset > from.size() || into.size() > from.size() - offset)
      throw std::out_of_range("read past the end of a buffer");
    if (!into.empty()) std::memcpy(into.data(), static_cast<const std::byte*>(from.address()) + offset, into.size());
  }

  void zero(Buffer& buffer) override { std::memset(buffer.address(), 0, buffer.size()); }

  void fillRandom(Buffer& to, std::size_t offset, const RandomFill& fill) override {
    std::size_t bytes = fill.count * byteSize(fill.dtype);
    if (offset + bytes > to.size()) throw std::out_of_range("random values past the end of a buffer");
    drawRandom(fill, {static_cast<std::byte*>(to.address()) + offset, bytes});
  }

  std::unique_ptr<Executable> load(const artifact::Manifest& manifest, const std::filesystem::path& dir) override {
    return std::make_unique<HostExecutable>(manifest, dir, threads_);
  }

  void setThreads(int threads) override { threads_ = threads; }

 private:
  int threads_ = 0;
};

}  // namespace

Driver driver() {
  return {"cpu", "cpu", "compiled code on this machine's CPU (linnetc --target cpu, dlopen)",
          [] { return std::unique_ptr<Device>(std::make_unique<HostDevice>()); }, /*storageFormats=*/true};
}

Driver emulatedCudaDriver() {
  return {"cuda-emulated", "cuda-emulated",
          "the cuda target's kernels run as loops on this CPU (a test of the cuda target without a GPU)",
          [] { return std::unique_ptr<Device>(std::make_unique<HostDevice>()); }};
}

}  // namespace linnet::device::host
