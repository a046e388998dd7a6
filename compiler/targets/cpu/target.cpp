#include "targets/cpu/target.h"

#include <filesystem>

#include "artifact/abi.h"
#include "targets/cpu/pipeline.h"

namespace linnet::cpu {

namespace {

class CpuTarget : public targets::Target {
 public:
  std::string_view name() const override { return "cpu"; }
  std::vector<std::string> stages() const override { return {"bufferized", "lowered", "llvm"}; }
  // f32 attention runs as one kernel (kernels/linnet_kernels.h).
  transforms::SharedOptions sharedOptions() const override {
    return {.targetAttentionF32 = true, .gemmProducts = true};
  }
  void registerDialects(mlir::DialectRegistry& registry) const override { cpu::registerDialects(registry); }

  std::optional<std::string> lower(mlir::ModuleOp module, std::string_view stage) const override {
    if (stage == "bufferized") return cpu::lower(module, Stage::Bufferized), std::nullopt;
    cpu::lower(module, Stage::LLVMDialect);
    if (stage == "lowered") return std::nullopt;
    return transforms::translateToLLVMIR(module);  // "llvm"
  }

  void buildArtifact(mlir::ModuleOp module, const std::vector<std::string>& functions, artifact::Manifest& manifest,
                     const std::filesystem::path& dir, const targets::ArtifactOptions& options) const override {
    cpu::lower(module, Stage::LLVMDialect);
    std::string llvmIR = transforms::translateToLLVMIR(module);
    for (size_t i = 0; i < manifest.entries.size(); ++i) manifest.entries[i].symbol = artifact::callSymbol(functions[i]);
    manifest.library = "model.so";
    manifest.init = "linnet_init";  // computes the hoisted constants (linnet-hoist-constants)
    compileSharedObject(llvmIR, entryShim(manifest, functions), (dir / manifest.library).string());
    if (!options.keepIR) std::filesystem::remove(dir / "model.ll");
  }
};

}  // namespace

std::unique_ptr<targets::Target> makeTarget() { return std::make_unique<CpuTarget>(); }

}  // namespace linnet::cpu
