// linnetc build: compile a package's entries for a target (driver/build.cpp).
#pragma once

#include <string>
#include <vector>

namespace linnet::driver {

struct BuildArgs {
  std::string package, stdlib, target = "cpu", output, emit;
  std::vector<std::string> sets;      // root generics: Name=Value
  std::vector<std::string> entries;   // empty: every entry (those that compile)
  std::vector<std::string> generics;  // entries' own generics: Name=Value
  std::vector<std::string> argSpecs;  // NAME=DTYPE:D0xD1 per argument of the one entry
  bool debugLocations = false;
  bool keepIR = false;
};

int runBuild(const BuildArgs& args);

}  // namespace linnet::driver
