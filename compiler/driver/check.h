// The front end's part of `linnetc check` and `linnetc build`: load the
// package, check every definition, instantiate the root block.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/diagnostics.h"
#include "sema/checker.h"
#include "sema/program.h"

namespace linnet::driver {

struct CheckedPackage {
  SourceManager sources;
  Diagnostics diags{sources};
  std::unique_ptr<sema::Program> program;
  std::optional<sema::Summary> summary;  // nullopt: no root block to instantiate
};

// Checks `package` with the root generics `sets` (Name=Value). On errors
// prints them on stderr with a count and returns nullptr.
std::unique_ptr<CheckedPackage> checkPackage(const std::string& package, const std::vector<std::string>& sets,
                                             const std::string& stdlib);

}  // namespace linnet::driver
