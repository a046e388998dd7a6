// Compiled entries: artifacts that `linnetc build` writes (manifest.json +
// model.so), loaded with dlopen and called through one C signature,
// `void linnet_call_E(void** descriptors)`. No LLVM or MLIR in this process:
// an entry shape that has no artifact yet is compiled by running `linnetc`
// once, into a cache folder keyed by everything the code depends on, so a
// second run starts without compiling.
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "targets/reference/tensor.h"

namespace linnet::nest {

using reference::Scalar;

// A tensor's bytes as compiled code reads them: C order, little-endian.
struct Buffer {
  Scalar dtype = Scalar::F32;
  std::vector<int64_t> shape;
  std::byte* data = nullptr;       // aligned to the element size at least
  std::shared_ptr<void> owner;     // keeps `data` alive (owned bytes or a mapping)
  int64_t size() const;
  size_t bytes() const;
  static Buffer zeros(Scalar dtype, std::vector<int64_t> shape);
};

struct CompileSettings {
  std::string package;                 // the package folder
  std::vector<std::string> sets;       // root generics, Name=Value
  std::string stdlib;                  // the standard library folder
  std::filesystem::path cacheDir;      // empty: $LINNET_CACHE, else ~/.cache/linnet
  std::string linnetc;                 // empty: $LINNETC, else the build's linnetc
  bool progress = false;               // say on stderr when compiling
};

struct NamedBuffer {
  std::string path;  // `layers.3.attention.q_proj.weight`
  Buffer buffer;
};

class CompiledModel {
 public:
  // Every param of the instantiated model, by path. Compiled code takes the
  // layers of a sub-block array stacked (`layers.*.mlp.up.weight`, one
  // [Layers, ...] tensor): those are assembled from the per-layer buffers
  // when the first artifact asks for them. States are allocated, zeroed, as
  // the first artifact's manifest lists them.
  CompiledModel(CompileSettings settings, std::vector<NamedBuffer> params);
  ~CompiledModel();

  // Runs `entry` on `args`, compiling it for these shapes first if needed.
  std::vector<reference::Tensor> call(const std::string& entry, const std::vector<reference::Tensor>& args,
                                      const std::map<std::string, int64_t>& generics);
  void resetState();
  // The artifact folder an entry shape was (or would be) compiled into.
  std::filesystem::path artifactDir(const std::string& entry, const std::vector<reference::Tensor>& args,
                                    const std::map<std::string, int64_t>& generics) const;

  struct Artifact;

 private:
  Artifact& artifactFor(const std::string& entry, const std::vector<reference::Tensor>& args,
                        const std::map<std::string, int64_t>& generics);
  const Buffer& param(const std::string& path, Scalar dtype, const std::vector<int64_t>& shape,
                      const std::filesystem::path& dir);
  CompileSettings settings_;
  std::map<std::string, Buffer> params_;   // by path; stacked ones added on first use
  std::vector<std::string> stateNames_;
  std::vector<Buffer> states_;
  std::string sourceHash_;
  std::map<std::string, std::unique_ptr<Artifact>> loaded_;
};

}  // namespace linnet::nest
