// The registry of backends: the reference backend, then one compiled
// backend per device driver (a new device is listed in runtime/device, not
// here); the first compiled one is the default where linnetc builds code.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/install.h"
#include "device/registry.h"
#include "nest/backend.h"
#include "nest/compiled.h"
#include "nest/reference_backend.h"

namespace linnet::nest {

const std::vector<BackendKind>& backends() {
  static const std::vector<BackendKind> all = [] {
    std::vector<BackendKind> out = {referenceBackend()};
    for (const device::Driver& d : device::drivers()) out.push_back(compiledBackend(d));
    return out;
  }();
  return all;
}

const BackendKind& defaultBackendKind() {
  const std::vector<BackendKind>& all = backends();
#ifdef LINNET_LINNETC_BUILDS
  return all.size() > 1 ? all[1] : all.front();
#else
  // linnetc without its code generators (LINNET_MLIR=OFF) compiles nothing.
  return all.front();
#endif
}

std::string defaultBackend() { return defaultBackendKind().name; }

std::string backendNames() {
  std::vector<std::string> names = {defaultBackend()};
  for (const auto& b : backends())
    if (b.name != names.front()) names.push_back(b.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

std::string stdlibFor(const LoadOptions& options) {
  if (!options.stdlib.empty()) return options.stdlib;
  return defaultStdlibDir();  // $LINNET_STDLIB, the installed one, the build's
}

}  // namespace linnet::nest
