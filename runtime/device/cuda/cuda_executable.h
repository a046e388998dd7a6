// A CUDA artifact loaded on the device: model.so opened (model_library.h),
// bound to its launch table (launch_table.h), its init run; each call of an
// entry runs its host code, which launches on the device's stream, then
// waits for the stream and throws the first failure, naming the entry. With
// graphs on, an entry is captured as a CUDA graph and replayed when its
// arguments have not moved (graph_policy.h has the rules).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "artifact/manifest.h"
#include "device/cuda/context.h"
#include "device/cuda/graph_policy.h"
#include "device/cuda/launch_table.h"
#include "device/cuda/model_library.h"
#include "device/executable.h"

namespace linnet::device::cuda {

class CudaExecutable : public Executable {
 public:
  // Throws std::runtime_error naming the library on failure.
  CudaExecutable(std::shared_ptr<Context> context, const Options& options, const artifact::Manifest& manifest,
                 const std::filesystem::path& dir);
  ~CudaExecutable() override;

  void call(std::size_t entry, std::span<const Argument> args) override;

 private:
  using EntryFn = void (*)(void**);
  void runPlainly(std::size_t entry, void** descriptors);
  // Captures and instantiates the entry's graph (nothing runs yet); false,
  // reported and given up, when that fails.
  bool capture(std::size_t entry, void** descriptors, std::vector<std::uint64_t> addresses);
  void replay(std::size_t entry);
  void dropGraph(std::size_t entry);
  // After the entry's work is queued: waits for it and throws what failed.
  void finish(std::size_t entry, CUresult launched, const char* launchCall);
  void warn(const std::string& message) const;

  std::shared_ptr<Context> context_;
  bool graphsOn_;
  bool syncEach_;  // Options::syncEach
  std::function<void(const std::string&)> warn_;
  // The table outlives the library, which holds a pointer to it.
  std::unique_ptr<LaunchTable> table_;
  std::unique_ptr<ModelLibrary> library_;
  std::vector<std::string> names_;
  std::vector<EntryFn> entries_;
  std::vector<GraphPolicy> policies_;
  std::vector<CUgraphExec> graphs_;
};

}  // namespace linnet::device::cuda
