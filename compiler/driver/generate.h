// linnetc build's generation step: the chosen entries of a checked package
// as `linnet` IR (MLIRGen), for the argument types --arg gives or, without
// it, the entry's declared types under --generic and nest.toml's [check].
#pragma once

#include <string>
#include <vector>

#include "artifact/manifest.h"
#include "driver/build.h"
#include "ir/mlirgen.h"

namespace linnet::driver {

struct Generated {
  std::vector<ir::EntryInstance> entries;  // in the module
  std::vector<artifact::Skipped> skipped;  // entries that could not be generated (none asked by name)
};

// Adds the entries to gen's module. An entry asked for by --entry that
// cannot be generated throws ir::GenError; others are skipped with a note
// on stderr. Bad --arg or --generic text throws std::runtime_error.
// `attentionKernel`: a gradient's f32 attention as ops of its own, both
// halves, for a target that keeps f32 attention
// (SharedOptions::targetAttentionF32).
Generated generate(ir::MLIRGen& gen, const sema::Program& program, const BuildArgs& args, bool attentionKernel);

// Every entry of the root block with its parameter names, in declaration order.
std::vector<artifact::Signature> signatures(const sema::Program& program);

}  // namespace linnet::driver
