#include "device/cuda/cuda_executable.h"

#include <fmt/format.h>

#include <exception>
#include <map>
#include <stdexcept>
#include <utility>

#include "artifact/abi.h"

namespace linnet::device::cuda {

CudaExecutable::CudaExecutable(std::shared_ptr<Context> context, const Options& options,
                               const artifact::Manifest& manifest, const std::filesystem::path& dir)
    : context_(std::move(context)), graphsOn_(options.graphs && !context_->profiler() && !options.syncEach),
      syncEach_(options.syncEach),
      warn_(options.warn) {
  if (manifest.library.empty()) throw std::runtime_error(fmt::format("{}: the artifact has no code", dir.string()));
  if (manifest.target != "cuda")
    throw std::runtime_error(
        fmt::format("{}: the artifact is built for target `{}`, not cuda", dir.string(), manifest.target));
  artifact::requireLibrary(manifest, dir);
  std::map<std::string, std::string> families;
  for (const artifact::Kernel& k : manifest.kernels) families[k.name] = k.family.empty() ? "unknown" : k.family;
  table_ = std::make_unique<LaunchTable>(context_, std::move(families), options.syncEach);
  library_ = std::make_unique<ModelLibrary>(dir / manifest.library);
  const std::string& lib = library_->path();
  for (const artifact::Entry& e : manifest.entries) {
    auto fn = reinterpret_cast<EntryFn>(library_->find(e.symbol));
    if (!fn) throw std::runtime_error(fmt::format("{}: no symbol {}", lib, e.symbol));
    names_.push_back(e.name);
    entries_.push_back(fn);
  }
  policies_.resize(entries_.size());
  graphs_.resize(entries_.size(), nullptr);

  auto bind = reinterpret_cast<LinnetCudaBindFn>(library_->find(LINNET_CUDA_BIND_SYMBOL));
  if (!bind)
    throw std::runtime_error(
        fmt::format("{}: no symbol {}: not code of the cuda target", lib, LINNET_CUDA_BIND_SYMBOL));
  context_->makeCurrent();
  int32_t bound = bind(table_->api());
  if (std::optional<std::string> failure = table_->takeFailure())
    throw std::runtime_error(fmt::format("{}: {} failed: {}", lib, LINNET_CUDA_BIND_SYMBOL, *failure));
  if (bound != 0)
    throw std::runtime_error(fmt::format("{}: {} refused the runtime's table (cuda_api.h version {}); rebuild the "
                                         "artifact with this linnet's linnetc",
                                         lib, LINNET_CUDA_BIND_SYMBOL, LINNET_CUDA_API_VERSION));
  // Argument-independent tensors (hoisted constants) are computed once, now.
  if (!manifest.init.empty()) {
    auto init = reinterpret_cast<void (*)()>(library_->find(manifest.init));
    if (!init) throw std::runtime_error(fmt::format("{}: no symbol {}", lib, manifest.init));
    init();
    std::optional<std::string> failure = table_->takeFailure();
    CUresult synced = context_->api().cuStreamSynchronize(context_->stream());
    if (!failure && synced != CUDA_SUCCESS) failure = context_->api().describe(synced, "cuStreamSynchronize");
    if (failure) throw std::runtime_error(fmt::format("{}: {}: {}", lib, manifest.init, *failure));
  }
}

CudaExecutable::~CudaExecutable() {
  try {
    context_->makeCurrent();
  } catch (const std::exception&) {
  }
  context_->api().cuStreamSynchronize(context_->stream());
  for (std::size_t e = 0; e < graphs_.size(); ++e) dropGraph(e);
  library_.reset();  // before the table it points to
  table_.reset();
}

void CudaExecutable::call(std::size_t entry, std::span<const Argument> args) {
  if (entry >= entries_.size())
    throw std::out_of_range(fmt::format("cuda: entry {} of an artifact with {}", entry, entries_.size()));
  context_->makeCurrent();
  std::vector<std::vector<int64_t>> descriptors;
  std::vector<void*> pointers;
  std::vector<std::uint64_t> addresses;
  descriptors.reserve(args.size());
  for (const Argument& a : args) {
    descriptors.push_back(artifact::descriptor(a.buffer->address(), a.shape));
    addresses.push_back(reinterpret_cast<std::uint64_t>(a.buffer->address()));
  }
  for (auto& d : descriptors) pointers.push_back(d.data());

  GraphPolicy& policy = policies_[entry];
  GraphPolicy::Step step = graphsOn_ ? policy.next(addresses) : GraphPolicy::Step::Plain;
  if (policy.movedTooOften() && graphs_[entry]) {
    dropGraph(entry);
    warn(fmt::format("cuda: entry `{}` runs without a CUDA graph from now on: its arguments moved in {} calls in a "
                     "row",
                     names_[entry], GraphPolicy::kMaxRecaptures));
  }
  switch (step) {
    case GraphPolicy::Step::Replay:
      replay(entry);
      policy.replayed();
      return;
    case GraphPolicy::Step::Capture:
      // The capture only records: the call itself is the first replay.
      if (capture(entry, pointers.data(), std::move(addresses))) replay(entry);
      else runPlainly(entry, pointers.data());
      return;
    case GraphPolicy::Step::Plain:
      runPlainly(entry, pointers.data());
      policy.ranPlainly();
      return;
  }
}

void CudaExecutable::runPlainly(std::size_t entry, void** descriptors) {
  Profiler* profiler = context_->profiler();
  if (profiler) profiler->beginEntry(names_[entry]);
  table_->beginEntry();
  entries_[entry](descriptors);
  table_->endEntry();
  finish(entry, CUDA_SUCCESS, nullptr);
  if (profiler) {
    try {
      profiler->endEntry();
    } catch (const std::exception& e) {
      throw std::runtime_error(fmt::format("cuda: entry `{}`: profiling: {}", names_[entry], e.what()));
    }
  }
}

bool CudaExecutable::capture(std::size_t entry, void** descriptors, std::vector<std::uint64_t> addresses) {
  dropGraph(entry);
  const DriverApi& api = context_->api();
  std::string problem;
  CUgraph graph = nullptr;
  table_->beginEntry(/*capturing=*/true);
  CUresult begun = api.cuStreamBeginCapture(context_->stream(), CU_STREAM_CAPTURE_MODE_RELAXED);
  if (begun != CUDA_SUCCESS) {
    problem = api.describe(begun, "cuStreamBeginCapture");
  } else {
    entries_[entry](descriptors);
    // Always ended, whatever failed, so the stream leaves capture mode.
    CUresult ended = api.cuStreamEndCapture(context_->stream(), &graph);
    if (std::optional<std::string> failure = table_->takeFailure()) problem = *failure;
    else if (ended != CUDA_SUCCESS) problem = api.describe(ended, "cuStreamEndCapture");
  }
  bool readOnHost = table_->readOnHost();
  table_->endEntry();
  if (readOnHost) {
    // Not a failure: the entry branches on a device value on the host
    // (host_reads.h), which no graph can replay; it always runs plainly.
    if (graph) api.cuGraphDestroy(graph);
    policies_[entry].giveUp();
    return false;
  }
  CUgraphExec exec = nullptr;
  if (problem.empty()) {
    CUresult made = api.cuGraphInstantiateWithFlags(&exec, graph, 0);
    if (made != CUDA_SUCCESS) {
      problem = api.describe(made, "cuGraphInstantiateWithFlags");
      exec = nullptr;
    }
  }
  if (graph) api.cuGraphDestroy(graph);  // the instantiated graph does not need it
  if (!problem.empty()) {
    policies_[entry].giveUp();
    warn(fmt::format("cuda: entry `{}` runs without a CUDA graph: capturing it failed: {}", names_[entry], problem));
    return false;
  }
  graphs_[entry] = exec;
  policies_[entry].captured(std::move(addresses));
  return true;
}

void CudaExecutable::replay(std::size_t entry) {
  CUresult launched = context_->api().cuGraphLaunch(graphs_[entry], context_->stream());
  finish(entry, launched, "cuGraphLaunch");
}

void CudaExecutable::finish(std::size_t entry, CUresult launched, const char* launchCall) {
  const DriverApi& api = context_->api();
  std::optional<std::string> failure = table_->takeFailure();
  if (!failure && launched != CUDA_SUCCESS) failure = api.describe(launched, launchCall);
  // Waited for even after a failure: what was queued still uses the buffers.
  CUresult synced = api.cuStreamSynchronize(context_->stream());
  if (!failure && synced != CUDA_SUCCESS) {
    failure = api.describe(synced, "cuStreamSynchronize");
    // Any of the entry's kernels may have made it; the sync mode finds which.
    if (!syncEach_) *failure += "; LINNET_CUDA_SYNC=1 names the operation that failed";
  }
  if (failure) throw std::runtime_error(fmt::format("cuda: entry `{}`: {}", names_[entry], *failure));
}

void CudaExecutable::dropGraph(std::size_t entry) {
  if (!graphs_[entry]) return;
  context_->api().cuGraphExecDestroy(graphs_[entry]);
  graphs_[entry] = nullptr;
}

void CudaExecutable::warn(const std::string& message) const {
  if (warn_) warn_(message);
  else fmt::print(stderr, "linnet: {}\n", message);
}

}  // namespace linnet::device::cuda
