#include "device/cuda/launch_table.h"

#include <fmt/format.h>

#include <exception>
#include <limits>
#include <utility>

namespace linnet::device::cuda {

namespace {

// Context's exceptions say "cuda: ..."; the executable adds that back with the entry's name.
std::string withoutPrefix(std::string message) {
  constexpr std::string_view prefix = "cuda: ";
  if (message.starts_with(prefix)) message.erase(0, prefix.size());
  return message;
}

CUdeviceptr address(const void* pointer) { return reinterpret_cast<CUdeviceptr>(pointer); }

// A kernel whose function did not come through getFunction.
const std::pair<std::string, std::string> kUnnamed{"?", "unknown"};

}  // namespace

LaunchTable::LaunchTable(std::shared_ptr<Context> context, std::map<std::string, std::string> families, bool syncEach)
    : context_(std::move(context)), syncEach_(syncEach), families_(std::move(families)) {
  api_.version = LINNET_CUDA_API_VERSION;
  api_.device = this;
  api_.load_module = loadModule;
  api_.get_function = getFunction;
  api_.launch = launch;
  api_.alloc = alloc;
  api_.release = release;
  api_.copy = copy;
  api_.fill32 = fill32;
  api_.gemm = gemm;
  api_.read = read;
}

LaunchTable::~LaunchTable() {
  // Nothing can be reported from here; the driver's answers are ignored.
  const DriverApi& api = context_->api();
  try {
    context_->makeCurrent();
  } catch (const std::exception&) {
  }
  for (CUmodule m : modules_) api.cuModuleUnload(m);
  for (CUdeviceptr a : kept_) api.cuMemFree(a);
}

void LaunchTable::beginEntry(bool capturing) {
  context_->arena().reset();
  inEntry_ = true;
  capturing_ = capturing;
  readOnHost_ = false;
}

void LaunchTable::endEntry() {
  inEntry_ = false;
  capturing_ = false;
  context_->arena().reset();
}

std::optional<std::string> LaunchTable::takeFailure() { return std::exchange(failure_, std::nullopt); }

void LaunchTable::fail(std::string message) {
  if (!failure_) failure_ = std::move(message);
}

bool LaunchTable::ok(CUresult result, const char* call) {
  if (result == CUDA_SUCCESS) return true;
  fail(context_->api().describe(result, call));
  return false;
}

template <typename Describe>
bool LaunchTable::queued(Profiler* profiler, const std::string& name, const std::string& family, Describe what) {
  if (profiler) profiler->after(context_->stream(), name, family);
  if (!syncEach_ || !inEntry_) return true;
  CUresult synced = context_->api().cuStreamSynchronize(context_->stream());
  if (synced == CUDA_SUCCESS) return true;
  fail(fmt::format("{} failed: {}", what(), context_->api().describe(synced, "cuStreamSynchronize")));
  return false;
}

void* LaunchTable::loadModule(void* device, const void* image, uint64_t bytes) noexcept {
  LaunchTable& t = self(device);
  if (t.failure_) return nullptr;
  try {
    CUmodule module = nullptr;
    CUresult result = t.context_->api().cuModuleLoadData(&module, image);
    if (result != CUDA_SUCCESS) {
      // An image for another GPU fails here: say which GPU this is.
      t.fail(
          fmt::format("{} on {}", t.context_->api().describe(result, "cuModuleLoadData"), t.context_->description()));
      return nullptr;
    }
    t.modules_.push_back(module);
    return module;
  } catch (const std::exception& e) {
    t.fail(e.what());
    return nullptr;
  }
}

void* LaunchTable::getFunction(void* device, void* module, const char* name) noexcept {
  LaunchTable& t = self(device);
  if (t.failure_) return nullptr;
  try {
    CUfunction function = nullptr;
    CUresult result = t.context_->api().cuModuleGetFunction(&function, static_cast<CUmodule>(module), name);
    if (!t.ok(result, fmt::format("cuModuleGetFunction(`{}`)", name ? name : "").c_str())) return nullptr;
    auto family = t.families_.find(name);
    t.functions_[function] = {name, family == t.families_.end() ? "unknown" : family->second};
    return function;
  } catch (const std::exception& e) {
    t.fail(e.what());
    return nullptr;
  }
}

int32_t LaunchTable::launch(void* device, void* function, uint64_t grid_x, uint64_t grid_y, uint64_t grid_z,
                            uint64_t block_x, uint64_t block_y, uint64_t block_z, uint32_t shared_bytes,
                            void** params) noexcept {
  LaunchTable& t = self(device);
  if (t.failure_) return 1;
  try {
    // The table's dimensions are 64-bit; the driver's are not.
    constexpr uint64_t most = std::numeric_limits<unsigned>::max();
    if (grid_x > most || grid_y > most || grid_z > most || block_x > most || block_y > most || block_z > most) {
      t.fail(fmt::format("cuLaunchKernel: grid {}x{}x{}, block {}x{}x{} do not fit the driver's 32-bit dimensions",
                         grid_x, grid_y, grid_z, block_x, block_y, block_z));
      return 1;
    }
    Profiler* profiler = t.profiling();
    if (profiler) profiler->before(t.context_->stream());
    CUresult result = t.context_->api().cuLaunchKernel(
        static_cast<CUfunction>(function), unsigned(grid_x), unsigned(grid_y), unsigned(grid_z), unsigned(block_x),
        unsigned(block_y), unsigned(block_z), shared_bytes, t.context_->stream(), params, nullptr);
    if (!t.ok(result, "cuLaunchKernel")) return 1;
    if (!profiler && !t.syncEach_) return 0;
    auto named = t.functions_.find(static_cast<CUfunction>(function));
    // Not a structured binding: the sanitizer build's clang cannot capture one in a lambda.
    const std::pair<std::string, std::string>& kernel = named == t.functions_.end() ? kUnnamed : named->second;
    const std::string &name = kernel.first, &family = kernel.second;
    return t.queued(profiler, name, family, [&] {
      return fmt::format("kernel `{}` ({}, grid {}x{}x{}, block {}x{}x{})", name, family, grid_x, grid_y, grid_z,
                         block_x, block_y, block_z);
    }) ? 0 : 1;
  } catch (const std::exception& e) {
    t.fail(e.what());
    return 1;
  }
}

void* LaunchTable::alloc(void* device, uint64_t bytes) noexcept {
  LaunchTable& t = self(device);
  if (t.failure_) return nullptr;
  try {
    if (t.inEntry_) return reinterpret_cast<void*>(t.context_->arena().allocate(bytes));
    CUdeviceptr kept = 0;
    t.context_->api().check(t.context_->api().cuMemAlloc(&kept, BlockPool::blockBytes(bytes)), "cuMemAlloc");
    t.kept_.push_back(kept);
    return reinterpret_cast<void*>(kept);
  } catch (const std::exception& e) {
    t.fail(withoutPrefix(e.what()));
    return nullptr;
  }
}

void LaunchTable::release(void* device, void* pointer) noexcept {
  // A scratch buffer past its last launch (the compiler's buffer lifetimes):
  // its bytes go back to the arena for the next request. Anything else (a
  // buffer kept outside an entry) stays until the executable goes.
  LaunchTable& t = self(device);
  if (t.inEntry_) t.context_->arena().release(reinterpret_cast<std::uint64_t>(pointer));
}

int32_t LaunchTable::copy(void* device, void* dst, const void* src, uint64_t bytes) noexcept {
  LaunchTable& t = self(device);
  if (t.failure_) return 1;
  try {
    // cuMemcpyAsync, not DtoD: with unified addressing it also takes a host
    // source (a constant of the host code), outside a graph capture.
    Profiler* profiler = t.profiling();
    if (profiler) profiler->before(t.context_->stream());
    CUresult result = t.context_->api().cuMemcpyAsync(address(dst), address(src), bytes, t.context_->stream());
    if (!t.ok(result, "cuMemcpyAsync")) return 1;
    return t.queued(profiler, "copy", "copy", [&] { return fmt::format("a copy of {} bytes", bytes); }) ? 0 : 1;
  } catch (const std::exception& e) {
    t.fail(e.what());
    return 1;
  }
}

int32_t LaunchTable::fill32(void* device, void* dst, uint32_t value, uint64_t count) noexcept {
  LaunchTable& t = self(device);
  if (t.failure_) return 1;
  try {
    Profiler* profiler = t.profiling();
    if (profiler) profiler->before(t.context_->stream());
    CUresult result = t.context_->api().cuMemsetD32Async(address(dst), value, count, t.context_->stream());
    if (!t.ok(result, "cuMemsetD32Async")) return 1;
    return t.queued(profiler, "fill", "fill", [&] { return fmt::format("a fill of {} words", count); }) ? 0 : 1;
  } catch (const std::exception& e) {
    t.fail(e.what());
    return 1;
  }
}

int32_t LaunchTable::gemm(void* device, const LinnetGemm* gemm) noexcept {
  LaunchTable& t = self(device);
  if (t.failure_) return 1;
  try {
    Profiler* profiler = t.profiling();
    if (profiler) profiler->before(t.context_->stream());
    // Timing cuBLASLt's candidates waits for the stream: not in a capture,
    // and not while profiling (the profile would count the candidates' runs).
    t.context_->blas().run(*gemm, t.context_->stream(), /*mayTime=*/!t.capturing_ && !profiler);
    if (!profiler && !t.syncEach_) return 0;
    std::string name = fmt::format("gemm {}x{}x{}{}", gemm->m, gemm->n, gemm->k,
                                   gemm->batch > 1 ? fmt::format(" x{}", gemm->batch) : "");
    return t.queued(profiler, name, "cublaslt", [&] { return "cuBLASLt's " + name; }) ? 0 : 1;
  } catch (const std::exception& e) {
    t.fail(withoutPrefix(e.what()));
    return 1;
  }
}

int32_t LaunchTable::read(void* device, void* host, const void* source, uint64_t bytes) noexcept {
  LaunchTable& t = self(device);
  t.readOnHost_ = true;
  if (t.failure_) return 1;
  if (t.capturing_) {
    // A graph would replay the value read now; the executable runs this
    // entry plainly instead (readOnHost).
    t.fail("the host code reads a device value (a key prefix's length), which a CUDA graph cannot hold");
    return 1;
  }
  try {
    const DriverApi& api = t.context_->api();
    // The value is written by the work queued so far.
    if (!t.ok(api.cuStreamSynchronize(t.context_->stream()), "cuStreamSynchronize")) return 1;
    return t.ok(api.cuMemcpyDtoH(host, address(source), bytes), "cuMemcpyDtoH") ? 0 : 1;
  } catch (const std::exception& e) {
    t.fail(e.what());
    return 1;
  }
}

}  // namespace linnet::device::cuda
