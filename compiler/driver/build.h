// linnetc build: compile a package's entries for a target (driver/build.cpp).
#pragma once

#include <string>
#include <vector>

namespace linnet::driver {

struct BuildArgs {
  std::string package, stdlib, output, emit;
  std::string target;                 // empty: the default target (targets/target.h)
  std::vector<std::string> sets;      // root generics: Name=Value
  std::vector<std::string> entries;   // empty: every entry (those that compile)
  std::vector<std::string> generics;  // entries' own generics: Name=Value
  std::vector<std::string> argSpecs;  // NAME=DTYPE:D0xD1 per argument of the one entry
  std::vector<std::string> paramStorage;  // PATH=FORMAT: params the code reads in a storage format
  std::string numerics = "exact";         // or "fast": weight products may quantize activations
  std::string products = "own";           // or "library": every product a target's library takes goes to it
  bool gradient = false;              // the one entry's gradient (MLIRGen::addGradient), not the entry
  std::vector<std::string> wrt;       // with gradient: the params by path; empty: every float param
  std::string tape = "recompute";     // with gradient: or "saved", "unrolled" (autodiff/policy.h)
  int64_t lowRank = 0;                // with gradient: > 0 for LoRA's factors' gradients (autodiff/low_rank.h)
  bool manifestOnly = false;          // the manifest (params, states, signatures) and no code
  bool debugLocations = false;
  bool keepIR = false;
};

// The --emit stages every target has, before its own.
inline constexpr const char* kSharedStages[] = {"ast", "checked", "mlir", "linalg"};

// The stage names for a target ("ast, checked, ..., llvm"), for help and
// errors; an unknown target gives the shared ones.
std::string stageNames(const std::string& target);

int runBuild(const BuildArgs& args);

}  // namespace linnet::driver
