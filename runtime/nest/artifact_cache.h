// Where a compiled backend's artifacts live, and how they get there: a
// cache folder ($LINNET_CACHE, else ~/.cache/linnet) of artifact folders,
// keyed by everything the code depends on (the compiler, the package's and
// the stdlib's sources, the root generics, the target, the schema, and for
// the CPU target the host's instruction sets), each
// written by running `linnetc build` once. A second run finds them and
// compiles nothing; no LLVM, MLIR or front end in this process.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "nest/tensor.h"

namespace linnet::nest {

struct CacheSettings {
  std::string package;              // the package folder
  std::string stdlib;               // the standard library folder
  std::vector<std::string> sets;    // root generics, Name=Value
  std::string target;               // linnetc --target
  std::filesystem::path cacheDir;   // empty: $LINNET_CACHE, else ~/.cache/linnet
  std::string linnetc;              // empty: $LINNETC, else the build's linnetc
  bool progress = false;            // a line on stderr per entry compiled, with its time
  std::string numerics = "exact";   // linnetc --numerics
  std::string products = "own";     // linnetc --products (LINNET_PRODUCTS=library)
  std::string tape = "recompute";   // linnetc --tape for gradients (LoadOptions::tape)
};

// The params a gradient artifact differentiates, by path, in the model's
// order; `all` when they are every float param (linnetc gets no --wrt).
struct GradientOf {
  std::vector<std::string> wrt;
  bool all = false;
  int64_t lowRank = 0;  // `linnetc build --low-rank`: LoRA factors' gradients
};

class ArtifactCache {
 public:
  explicit ArtifactCache(CacheSettings settings);

  // The package's manifest without code (params, states, entry signatures),
  // written by `linnetc build --manifest-only` when missing. Its failure
  // (a package that does not check) is an Error holding linnetc's stderr.
  std::filesystem::path modelDir();
  // The artifact of `entry` for these argument types and entry generics,
  // compiled first when missing. With `gradient`, the entry's gradient
  // instead (`linnetc build --gradient`, artifact entry `E.gradient`) with
  // respect to the params it lists by path (all of them: no --wrt).
  std::filesystem::path entryDir(const std::string& entry, const std::vector<Tensor>& args,
                                 const std::map<std::string, int64_t>& generics,
                                 const std::optional<GradientOf>& gradient = std::nullopt);
  // Where that artifact lives, compiled or not (a tool that builds many
  // entries with one linnetc run puts them there: tests/ops).
  std::filesystem::path entryPath(const std::string& entry, const std::vector<Tensor>& args,
                                  const std::map<std::string, int64_t>& generics,
                                  const std::optional<GradientOf>& gradient = std::nullopt) const;
  const std::filesystem::path& root() const { return settings_.cacheDir; }
  const std::string& numerics() const { return settings_.numerics; }
  // Params the entries read in a storage format (`linnetc build
  // --param-storage PATH=FORMAT`), known once the checkpoint is bound; part
  // of every entry's key from then on.
  void setParamStorage(std::vector<std::string> flags) { paramStorage_ = std::move(flags); }

 private:
  // Runs linnetc build with `extra` arguments into a private folder renamed
  // to `dir`, so a concurrent run never sees half an artifact.
  void build(const std::filesystem::path& dir, std::vector<std::string> extra, const std::string& what);
  CacheSettings settings_;
  std::string from_;  // what chose the folder, for messages: "LINNET_CACHE"
  std::string key_;   // the sources' hash
  std::vector<std::string> paramStorage_;
};

}  // namespace linnet::nest
