// A code generation target (`linnetc build --target NAME`): everything after
// the shared pipeline. The driver checks the package, generates `linnet` IR
// (MLIRGen), runs the shared pipeline to the `linalg` stage
// (transforms/pipeline.h), then hands the module to the target, which
// lowers it further and writes its code into the artifact folder; the driver
// writes the manifest (runtime/artifact/manifest.h) around it.
//
// A target is a folder here with its own library, listed once in
// registry.cpp; the driver finds it by name and names none itself.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "artifact/manifest.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "transforms/pipeline.h"

namespace linnet::targets {

struct ArtifactOptions {
  bool keepIR = false;  // keep intermediate files (the CPU target's model.ll)
};

class Target {
 public:
  virtual ~Target() = default;

  // What --target says: "cpu".
  virtual std::string_view name() const = 0;
  // The --emit stages it adds after the shared ones (ast, checked, mlir,
  // linalg), in pipeline order.
  virtual std::vector<std::string> stages() const = 0;
  // The ops the target lowers itself, which the shared pipeline then keeps
  // (f32 attention for a target with its own attention kernel).
  virtual transforms::SharedOptions sharedOptions() const { return {}; }
  // Whether it reads params in a storage format (`linnetc build
  // --param-storage`); otherwise every param is plain elements.
  virtual bool readsStorageFormats() const { return true; }
  // Dialects, extensions and translations beyond the shared ones.
  virtual void registerDialects(mlir::DialectRegistry& registry) const = 0;

  // Lowers `module` (at the `linalg` stage) in place through `stage`, one of
  // stages(). Returns the stage's text when it is not MLIR (LLVM IR, say);
  // nullopt means: print the module.
  virtual std::optional<std::string> lower(mlir::ModuleOp module, std::string_view stage) const = 0;

  // Lowers `module` (at the `linalg` stage) all the way and writes the code
  // into `dir`. `functions[i]` is the generated function of
  // manifest.entries[i]; the target sets each entry's call symbol
  // (artifact/abi.h), the manifest's library and its init symbol.
  virtual void buildArtifact(mlir::ModuleOp module, const std::vector<std::string>& functions,
                             artifact::Manifest& manifest, const std::filesystem::path& dir,
                             const ArtifactOptions& options) const = 0;
};

// Every target of this build, the default (--target omitted) first.
const std::vector<std::unique_ptr<Target>>& allTargets();
// nullptr for a name this build does not have.
const Target* findTarget(std::string_view name);
// "cpu" or "cpu, cuda": for messages.
std::string targetNames();

}  // namespace linnet::targets
