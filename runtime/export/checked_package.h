// A nest package checked and instantiated for an export, kept alive: the
// sources, the diagnostics and the checked program, for an exporter that
// reads the program itself (`linnet export onnx` elaborates its entries).
// model_facts.h's instantiate() reads the same object.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "base/diagnostics.h"
#include "base/source.h"
#include "nest/nest.h"
#include "sema/checker.h"
#include "sema/program.h"

namespace linnet::exporter {

struct CheckedPackage {
  SourceManager sources;
  Diagnostics diags{sources};
  std::unique_ptr<sema::Program> program;
  sema::Summary summary;
};

// Checks `package` with `options.generics` (--set) and options.stdlib and
// instantiates its root block. Throws nest::Error with the checker's
// diagnostics.
std::unique_ptr<CheckedPackage> checkPackage(const std::string& package, const nest::LoadOptions& options);

}  // namespace linnet::exporter
