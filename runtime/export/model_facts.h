// What an export needs to know of an instantiated nest package, without
// running it or allocating anything: the checked program (nest.toml's
// [generics] and --set applied), every parameter's Linnet path, shape and
// dtype (what bindings.json binds), the root's dimension generics, package
// constants after nest.toml's [constants], which items the sources import
// after its [replace], and nest.toml's [model] table.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "nest/nest.h"

namespace linnet::exporter {

struct ModelFacts {
  std::string package;                 // the folder
  std::string name, title, license;    // nest.toml [model] name (else the package's), title, license
  std::string family;                  // nest.toml [model] family; "" when absent
  std::vector<nest::ParamInfo> params; // in declaration order
  std::map<std::string, int64_t> dims; // root dimension generics as bound
  std::map<std::string, std::string> dtypes;  // root element-type generics ("T" -> "f32")
  // Every item some module imports, by full name after [replace]
  // ("llama.rope.tables", or "std.nn.rope.rotary_tables" where a card
  // replaces it).
  std::set<std::string> imported;
  // constant(fullName): a package constant's number (sema::Program::constantValue).
  std::map<std::string, double> constants;

  std::optional<double> constant(const std::string& fullName) const;
  std::optional<int64_t> dim(const std::string& name) const;
  bool imports(const std::string& fullName) const { return imported.count(fullName) > 0; }
};

// Refuses an export given neither --weights nor --random-weights, or both,
// before anything else is read; `command` names it ("export onnx").
void requireWeightsSource(const std::string& package, const nest::LoadOptions& load, const char* command);

// Checks and instantiates `package` with `options.generics` (and
// options.stdlib). Throws nest::Error with the checker's diagnostics.
ModelFacts instantiate(const std::string& package, const nest::LoadOptions& options);

}  // namespace linnet::exporter
