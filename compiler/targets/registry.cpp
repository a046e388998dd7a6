// The targets this build has. A new target adds its factory here, one line,
// and its library to targets/CMakeLists.txt.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "targets/cpu/target.h"
#ifdef LINNET_HAVE_CUDA_TARGET
#include "targets/cuda/emulated.h"
#include "targets/cuda/target.h"
#endif
#include "targets/target.h"

namespace linnet::targets {

const std::vector<std::unique_ptr<Target>>& allTargets() {
  static const std::vector<std::unique_ptr<Target>> targets = [] {
    std::vector<std::unique_ptr<Target>> t;
    t.push_back(cpu::makeTarget());
#ifdef LINNET_HAVE_CUDA_TARGET
    t.push_back(cuda::makeTarget());
    t.push_back(cuda::makeEmulatedTarget());
#endif
    return t;
  }();
  return targets;
}

const Target* findTarget(std::string_view name) {
  for (const auto& t : allTargets())
    if (t->name() == name) return t.get();
  return nullptr;
}

std::string targetNames() {
  std::vector<std::string_view> names;
  for (const auto& t : allTargets()) names.push_back(t->name());
  return fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace linnet::targets
