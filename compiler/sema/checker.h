// The shape checker. Every generic definition is checked once, symbolically,
// with its `where` clause as the facts: each dimension is a symbolic integer
// expression, and every shape agreement, index bound and callee `where`
// clause must be proven from those facts. Then the package's root block is
// instantiated with numbers (nest.toml's [generics], overridden by --set) and
// checked again along every call that becomes concrete.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/diagnostics.h"
#include "sema/dims/facts.h"
#include "sema/program.h"
#include "sema/types.h"

namespace linnet::sema {

// One parameter tensor of an instantiated model, by its Linnet path.
struct ParamInfo {
  std::string path;  // `layers.0.attention.q_proj.weight`
  std::vector<int64_t> shape;
  Scalar dtype = Scalar::F32;
};

struct EntryInfo {
  std::string name;
  std::string signature;  // with the block's generics substituted
};

// What `linnetc check` reports for an instantiated package.
struct Summary {
  std::string root;  // `Model<128256, 4096, ...>`
  size_t blockCount = 0;
  std::vector<EntryInfo> entries;
  std::vector<ParamInfo> params;
  std::vector<ParamInfo> states;
  int64_t paramCount = 0;
  int64_t paramBytes = 0;
  int64_t stateBytes = 0;
};

class Explainer;
class SemanticIndex;

class Checker {
 public:
  Checker(const Program& program, Diagnostics& diags);
  ~Checker();

  // Records every shape obligation into `e` from now on (sema/explain.h);
  // null, the default, records nothing.
  void setExplainer(Explainer* e);
  // Records every expression's type and every resolved name into `i`
  // (sema/index.h); null, the default, records nothing.
  void setIndex(SemanticIndex* i);

  // Checks every definition of every loaded module, symbolically.
  void checkDefinitions();
  // Instantiates the package's root block with its generics and checks it
  // concretely; nullopt when there is no root block or on errors.
  std::optional<Summary> instantiateRoot();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace linnet::sema
