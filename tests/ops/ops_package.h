// The per-op cases written as Linnet packages (a folder per group, every
// case an entry of the root block `Ops`), shared by the conformance run
// (ops_main.cpp) and the gradient mode (ops_gradients.cpp).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "ops_cases.h"

namespace linnet::ops {

std::string readFile(const std::filesystem::path& p);
// Leaves an unchanged file alone, so that a rerun finds its cached builds.
void writeIfChanged(const std::filesystem::path& p, const std::string& text);
// One package: its cases' entries in the root block `Ops`.
void writePackage(const std::filesystem::path& dir, const std::string& name, const std::vector<const Case*>& cases);

}  // namespace linnet::ops
