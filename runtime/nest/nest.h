// Loading a nest package from host code:
//
//   auto model = linnet::nest::load("nest/llama-3.1-8b-instruct",
//                                   {.weights = "ckpt/model.safetensors",
//                                    .generics = {{"Layers", 2}, {"T", "f32"}}});
//   auto logits = model.call("forward", {tokens})[0];
//
// load() binds every parameter from the checkpoint through bindings.json,
// checking names, shapes and dtypes first and reporting all problems
// together. State is allocated, zeroed, and kept between calls. A Hugging
// Face folder as `.weights` is checked first against the card: its
// config.json (or a GGUF's metadata) through nest.toml's [config] (or
// [gguf]) table, one line per value that disagrees (docs/nest.md).
//
// Entries run on a backend chosen by name from a registry (nest/backend.h):
// by default compiled code on a device (runtime/device), `cpu` where the
// build has it, whose params, states and entry signatures come from
// manifests that linnetc writes: each entry shape is compiled on first use
// and cached (nest/compiled.h); or, with `.backend = "reference"` (and in a
// build whose linnetc compiles no code, LINNET_MLIR=OFF), the reference backend
// (compiler/targets/reference), exact but slow, which checks and
// instantiates the package in this process.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "common/storage.h"
#include "nest/tensor.h"

namespace linnet::nest {

// Every failure to load or call: the message is what `linnet` prints.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A generic's value: a dimension or an element type name.
struct GenericValue {
  GenericValue(int64_t v) : value(v) {}
  GenericValue(int v) : value(static_cast<int64_t>(v)) {}
  GenericValue(const char* v) : value(std::string(v)) {}
  GenericValue(std::string v) : value(std::move(v)) {}
  std::variant<int64_t, std::string> value;
  std::string str() const;
};

struct LoadOptions {
  // A .safetensors file, a *.safetensors.index.json, a .gguf file, or a
  // Hugging Face model folder: model.safetensors or
  // model.safetensors.index.json in it, and its config.json checked against
  // the card's generics and constants (nest.toml [config]). Empty: see
  // randomWeights.
  std::string weights;
  // Overrides of nest.toml's [generics], as `--set` does.
  std::map<std::string, GenericValue> generics;
  // Take the generics nest.toml's [config] maps from the weights folder's
  // config.json (or [gguf]'s from a .gguf's metadata) instead of nest.toml's
  // [generics]: `--generics-from-config`. A `generics` entry that disagrees
  // with the config is an error (an element type such as T is the
  // exception: the override wins). Without it, the config is still checked.
  bool genericsFromConfig = false;
  // Convert checkpoint floats to the model's dtype (e.g. a bf16 checkpoint
  // into T = f32) instead of rejecting the mismatch.
  bool convertDTypes = false;
  // Bind seeded random parameters instead of a checkpoint (benchmarks, smoke tests).
  bool randomWeights = false;
  uint64_t seed = 0;
  // Bind nothing and run nothing: each call only builds (or finds) its
  // entry's artifact in the cache and returns no results. Fills a cache
  // ahead of time without weights (scripts/cuda-bundle.sh carries one to a
  // GPU machine); compiled backends only. Nothing being bound, the
  // artifacts are those of weights held as plain elements: a GGUF whose
  // quantized rows compiled code reads as stored keys other ones.
  bool compileOnly = false;
  // The standard library folder; empty: $LINNET_STDLIB, then the installed one, then the build's.
  std::string stdlib;
  // Where entries run: a backend's name (backendNames()); empty: the
  // build's default (defaultBackend()): compiled code, "cpu", built by
  // linnetc on first use of each entry shape and cached; the reference
  // backend (the op-by-op oracle, "reference") in a build whose linnetc
  // compiles no code (LINNET_MLIR=OFF).
  std::string backend;
  // Where compiled entries are cached; empty: $LINNET_CACHE, else ~/.cache/linnet.
  std::string cacheDir;
  // Threads compiled code may use; 0: all cores. The reference backend runs
  // on one thread whatever this says.
  int threads = 0;
  // Dequantize a checkpoint's quantized (and f16/bf16) weights into the
  // model's dtype at load, as the reference backend must, instead of
  // letting compiled code read them in their own storage (common/storage.h).
  bool dequantize = false;
  // "exact" (the language's numerics) or "fast": compiled weight products on
  // quantized weights may quantize activations to 8 bits and use integer dot
  // products, as llama.cpp does (error bound: linnet_fast_kernels.c). Part
  // of every compiled entry's cache key; the reference backend refuses it.
  std::string numerics = "exact";
  // A compiled gradient's tape (docs/train.md, "The tape"): "saved" (each
  // layer's values stacked in the forward loop), "recompute" (each layer
  // recomputed from its input: the least memory) or "unrolled"; empty: saved
  // on the cpu target, recompute on cuda (whose host code cannot yet index
  // the saved stacks by the layer counter it keeps in device memory).
  std::string tape;
  // A LoRA adapter folder (peft's layout, or `linnet finetune --lora`'s)
  // merged into the bound params (nest/adapter.h); empty: none.
  std::string adapter;
};

struct ParamInfo {
  std::string path;
  std::vector<int64_t> shape;
  DType dtype = DType::F32;
  // How the backend holds it, once bound: nullopt for plain elements of
  // dtype, else a storage format (a GGUF's q4_1 rows, say).
  std::optional<Storage> storage;
  // Bytes held: shape x dtype, or whole rows in the storage format.
  int64_t heldBytes() const;
};

// An entry's value and its gradient (docs/train.md, "Gradients").
// A low-rank (LoRA) gradient (docs/train.md): every param differentiated
// is a matrix W [out, in] seen as W + B A, its A [rank, in] and B [out,
// rank] given as `PATH.lora_A` and `PATH.lora_B`, which also name the
// gradient's results (d value / d A, d value / d B). The full d W is never
// formed: a step costs what the rows' products with A and B cost.
struct LowRank {
  int64_t rank = 0;  // 0: the params' own gradients
  std::map<std::string, Tensor> factors;
};

// The names of param `path`'s factors (and their gradients): A's, B's.
inline std::vector<std::string> lowRankNames(const std::string& path) {
  return {path + ".lora_A", path + ".lora_B"};
}

struct Gradient {
  Tensor value;
  std::vector<std::string> params;  // paths, in the model's order
  std::vector<Tensor> grads;        // d value / d params[k], f32
};

class Model {
 public:
  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;
  ~Model();

  // Runs an entry; a tuple result is several tensors. `generics` gives entry
  // generics the arguments do not determine (`generate<Steps>`). Token ids
  // and positions are checked against Vocab and MaxSeq first
  // (nest/conventions.h).
  std::vector<Tensor> call(const std::string& entry, const std::vector<Tensor>& args,
                           const std::map<std::string, int64_t>& generics = {});
  // The gradient of an entry's value with respect to every param whose
  // path `wrt` accepts, derived by the compiler (compiler/autodiff). A value
  // of more than one element is weighed by `cotangent` (its type). Token ids
  // and positions are checked as call() checks them. Only the reference
  // backend runs gradients so far; others throw Error saying so.
  Gradient gradient(const std::string& entry, const std::vector<Tensor>& args,
                    const std::map<std::string, int64_t>& generics,
                    const std::function<bool(const std::string&)>& wrt,
                    const std::optional<Tensor>& cotangent = std::nullopt, const LowRank& lowRank = {});
  // A param's current values (`layers.0.mlp.up.weight`), and replacing
  // them with values of its shape and dtype: what a training step does.
  // The reference backend only so far; others throw Error saying so.
  Tensor param(const std::string& path);
  void setParam(const std::string& path, const Tensor& value);
  // A param's bytes where the model's entries read them, to be written in
  // place (a training step's new values without a copy through setParam);
  // valid until the model is released. Empty where the backend keeps its
  // params off the host (a GPU's) or has no such view: use setParam then.
  std::span<std::byte> hostParam(const std::string& path);
  std::vector<std::string> entries() const;
  // An entry's parameter names, in order (for passing inputs by name).
  std::vector<std::string> parameterNames(const std::string& entry) const;
  std::vector<ParamInfo> params() const;
  void resetState();
  // nest.toml's model name, or the package name.
  const std::string& name() const;
  // The backend entries run on.
  const std::string& backend() const;
  // The root block's dimension generics as bound (nest.toml's [generics],
  // then LoadOptions::generics), e.g. {"MaxSeq", 8192}.
  const std::map<std::string, int64_t>& dims() const;
  // The threads entries run on (LoadOptions::threads, or all cores; 1 on the
  // reference backend).
  int threads() const;
  // The memory bandwidth of the device entries run on, as a device-to-device
  // copy of `bytes` measures it now (bytes read plus written per second,
  // best of `reps`); nullopt where entries run in host memory.
  std::optional<double> deviceCopyBandwidth(std::size_t bytes, int reps);

  struct Impl;
  explicit Model(std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

Model load(const std::string& package, const LoadOptions& options = {});

// The backends of this build, the default first: "cpu, reference".
std::string backendNames();
// The backend an empty LoadOptions::backend means: the first compiled one of
// the device registry (runtime/device/registry.cpp) where this build's
// linnetc compiles code (LINNET_MLIR), else "reference".
std::string defaultBackend();

}  // namespace linnet::nest
