#include "device/cuda/cuda_device.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "device/cuda/context.h"
#include "device/cuda/cuda_executable.h"
#include "device/cuda/event_timer.h"
#include "device/cuda/random_kernel.h"

namespace linnet::device::cuda {

namespace {

// A block of device memory (context.h's pool), given back when dropped.
class CudaBuffer : public Buffer {
 public:
  CudaBuffer(std::shared_ptr<Context> context, CUdeviceptr address, std::size_t size)
      : Buffer(reinterpret_cast<void*>(address), size), context_(std::move(context)) {}
  ~CudaBuffer() override { context_->giveBack(device(), size()); }

  CUdeviceptr device() const { return reinterpret_cast<CUdeviceptr>(address()); }
  const Context* context() const { return context_.get(); }

 private:
  std::shared_ptr<Context> context_;
};

class CudaDevice : public Device {
 public:
  explicit CudaDevice(const Options& options) : options_(options), context_(std::make_shared<Context>(options)) {}

  BufferPtr allocate(std::size_t bytes) override {
    context_->makeCurrent();
    auto buffer = newBuffer(bytes);
    fill(*buffer, 0);
    return buffer;
  }

  // Copied: device memory is all the compiled code can address.
  BufferPtr import(std::span<const std::byte> bytes, std::shared_ptr<const void> owner,
                   std::size_t alignment) override {
    context_->makeCurrent();
    auto buffer = newBuffer(bytes.size());
    copyIn(*buffer, 0, bytes);
    return buffer;
  }

  // A device buffer; read() copies it into `bytes` after the call.
  BufferPtr importOutput(std::span<std::byte> bytes) override {
    context_->makeCurrent();
    return newBuffer(bytes.size());
  }

  void write(Buffer& to, std::size_t offset, std::span<const std::byte> bytes) override {
    if (offset > to.size() || bytes.size() > to.size() - offset)
      throw std::out_of_range("write past the end of a buffer");
    context_->makeCurrent();
    copyIn(own(to), offset, bytes);
  }

  void read(const Buffer& from, std::span<std::byte> into) override {
    const CudaBuffer& buffer = own(from);
    std::size_t bytes = std::min(into.size(), from.size());
    if (bytes == 0) return;
    context_->makeCurrent();
    // On the legacy stream: it waits for the device's stream (context.h).
    context_->api().check(context_->api().cuMemcpyDtoH(into.data(), buffer.device(), bytes), "cuMemcpyDtoH");
  }

  void readAt(const Buffer& from, std::size_t offset, std::span<std::byte> into) override {
    if (offset > from.size() || into.size() > from.size() - offset)
      throw std::out_of_range("read past the end of a buffer");
    if (into.empty()) return;
    context_->makeCurrent();
    context_->api().check(context_->api().cuMemcpyDtoH(into.data(), own(from).device() + offset, into.size()),
                          "cuMemcpyDtoH");
  }

  void zero(Buffer& buffer) override {
    context_->makeCurrent();
    fill(own(buffer), 0);
  }

  void fillRandom(Buffer& to, std::size_t offset, const RandomFill& fill) override {
    const CudaBuffer& buffer = own(to);
    std::size_t bytes = fill.count * byteSize(fill.dtype);
    if (offset > to.size() || bytes > to.size() - offset)
      throw std::out_of_range("random values past the end of a buffer");
    context_->makeCurrent();
    random_.draw(buffer.device() + offset, fill);
  }

  // Two blocks of `bytes`, copied one into the other on the stream, timed by
  // events: the first copy warms up, the best of the rest counts.
  std::optional<double> copyBandwidth(std::size_t bytes, int reps) override {
    context_->makeCurrent();
    const DriverApi& api = context_->api();
    auto from = newBuffer(bytes), to = newBuffer(bytes);
    fill(*from, 0x3c003c00);
    EventTimer timer(api, context_->stream());
    double best = 0;
    for (int r = 0; r <= std::max(reps, 1); ++r) {
      timer.start();
      api.check(api.cuMemcpyAsync(to->device(), from->device(), bytes, context_->stream()), "cuMemcpyAsync");
      float ms = timer.stop();
      if (r > 0 && ms > 0) best = std::max(best, 2.0 * static_cast<double>(bytes) / (ms * 1e-3));
    }
    return best;
  }

  std::unique_ptr<Executable> load(const artifact::Manifest& manifest, const std::filesystem::path& dir) override {
    context_->makeCurrent();
    return std::make_unique<CudaExecutable>(context_, options_, manifest, dir);
  }

 private:
  std::shared_ptr<CudaBuffer> newBuffer(std::size_t bytes) {
    return std::make_shared<CudaBuffer>(context_, context_->takeBlock(bytes), bytes);
  }

  // Buffers of other devices have no place here.
  const CudaBuffer& own(const Buffer& buffer) const {
    auto* b = dynamic_cast<const CudaBuffer*>(&buffer);
    if (!b || b->context() != context_.get()) throw std::invalid_argument("cuda: a buffer of another device");
    return *b;
  }
  CudaBuffer& own(Buffer& buffer) const { return const_cast<CudaBuffer&>(own(static_cast<const Buffer&>(buffer))); }

  void copyIn(const CudaBuffer& to, std::size_t offset, std::span<const std::byte> bytes) {
    if (bytes.empty()) return;
    context_->api().check(context_->api().cuMemcpyHtoD(to.device() + offset, bytes.data(), bytes.size()),
                          "cuMemcpyHtoD");
  }

  // The whole block: its size is a multiple of 256, so of 4.
  void fill(const CudaBuffer& buffer, unsigned value) {
    std::size_t words = BlockPool::blockBytes(buffer.size()) / 4;
    context_->api().check(context_->api().cuMemsetD32Async(buffer.device(), value, words, context_->stream()),
                          "cuMemsetD32Async");
  }

  Options options_;
  std::shared_ptr<Context> context_;
  RandomKernel random_{context_};
};

}  // namespace

Options optionsFromEnvironment() {
  Options options;
  if (const char* library = std::getenv("LINNET_CUDA_DRIVER"); library && *library) options.driverLibrary = library;
  if (const char* blas = std::getenv("LINNET_CUBLASLT"); blas && *blas) options.blasLibraries = blas;
  if (const char* ordinal = std::getenv("LINNET_CUDA_DEVICE"); ordinal && *ordinal) {
    std::string_view text = ordinal;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), options.ordinal);
    if (error != std::errc() || end != text.data() + text.size() || options.ordinal < 0)
      throw std::runtime_error(fmt::format("cuda: LINNET_CUDA_DEVICE={}: not a device number (0, 1, ...)", text));
  }
  if (const char* graphs = std::getenv("LINNET_CUDA_GRAPHS"); graphs && std::string_view(graphs) == "0")
    options.graphs = false;
  if (const char* profile = std::getenv("LINNET_CUDA_PROFILE"); profile && *profile) options.profile = profile;
  if (const char* sync = std::getenv("LINNET_CUDA_SYNC"); sync && std::string_view(sync) == "1") options.syncEach = true;
  return options;
}

std::unique_ptr<Device> create(const Options& options) { return std::make_unique<CudaDevice>(options); }

Driver driver() {
  return {"cuda", "cuda", "compiled code on an NVIDIA GPU (linnetc --target cuda; the driver through dlopen)",
          [] { return create(optionsFromEnvironment()); }};
}

}  // namespace linnet::device::cuda
