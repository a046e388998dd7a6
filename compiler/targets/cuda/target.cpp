#include "targets/cuda/target.h"

#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "artifact/abi.h"
#include "targets/cuda/kernel_binary.h"
#include "targets/cuda/pipeline.h"
#include "transforms/pipeline.h"

namespace linnet::cuda {

namespace {

class CudaTarget : public targets::Target {
 public:
  std::string_view name() const override { return "cuda"; }
  bool readsStorageFormats() const override { return false; }
  std::vector<std::string> stages() const override { return {"bufferized", "gpu", "ptx", "lowered", "llvm"}; }
  transforms::SharedOptions sharedOptions() const override { return cuda::sharedOptions(); }
  void registerDialects(mlir::DialectRegistry& registry) const override { cuda::registerDialects(registry); }

  std::optional<std::string> lower(mlir::ModuleOp module, std::string_view stage) const override {
    if (stage == "bufferized") return cuda::lower(module, Stage::Bufferized), std::nullopt;
    if (stage == "gpu") return cuda::lower(module, Stage::Gpu), std::nullopt;
    cuda::lower(module, Stage::Ptx);
    if (stage == "ptx") return kernelPTX(module);
    auto work = std::filesystem::temp_directory_path() / ("linnetc-cuda-" + std::to_string(getpid()));
    std::filesystem::create_directories(work);
    assembleAndLowerHost(module, work);
    std::filesystem::remove_all(work);
    if (stage == "lowered") return std::nullopt;
    return transforms::translateToLLVMIR(module);  // "llvm"
  }

  void buildArtifact(mlir::ModuleOp module, const std::vector<std::string>& functions, artifact::Manifest& manifest,
                     const std::filesystem::path& dir, const targets::ArtifactOptions& options) const override {
    cuda::lower(module, Stage::Ptx);
    std::ofstream(dir / "kernels.ptx") << kernelPTX(module);
    manifest.kernels = assembleAndLowerHost(module, dir);
    std::string llvmIR = transforms::translateToLLVMIR(module);
    for (size_t i = 0; i < manifest.entries.size(); ++i) manifest.entries[i].symbol = artifact::callSymbol(functions[i]);
    manifest.library = "model.so";
    manifest.init.clear();  // nothing is hoisted (sharedOptions)
    compileHostLibrary(llvmIR, entryShim(manifest, functions), dir / manifest.library);
    if (!options.keepIR) std::filesystem::remove(dir / "model.ll");
  }
};

}  // namespace

std::unique_ptr<targets::Target> makeTarget() { return std::make_unique<CudaTarget>(); }

}  // namespace linnet::cuda
