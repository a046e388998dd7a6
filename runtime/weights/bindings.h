// Binding a model's parameters to checkpoint tensors through bindings.json.
//
// bindings.json is one JSON object: Linnet parameter path -> checkpoint
// tensor name, e.g. "layers.3.attention.q_proj.weight":
// "model.layers.3.self_attn.q_proj.weight". A key may be a pattern, as
// llama.cpp's name tables are: `*` as a whole component of the path stands
// for an index (digits), and the value's `*`s, as many as the key's, take the
// indices in order: "layers.*.mlp.up.weight": "model.layers.*.mlp.up_proj.weight"
// binds every layer. An exact key wins over a pattern for its path. The compiler gives, for an
// instantiated model, each parameter's path, shape and dtype (ParamSpec);
// bind() checks every one of them against bindings.json and the checkpoint
// and hands back views of the bytes, converted where asked.
//
// Rules:
//  * every expected parameter needs a binding, its tensor must be in the
//    checkpoint, with the same shape and dtype;
//  * a dtype mismatch is an error unless BindOptions::convertTo equals the
//    parameter's dtype and both dtypes are among f32, bf16, f16 (f32 -> bf16
//    and -> f16 round to nearest even);
//  * a checkpoint or bindings.json may hold more than the model asks for, as
//    long as each extra binding path is one the model has for some index:
//    with Layers=2, "layers.7.mlp.up.weight" is fine because the model has
//    "layers.*.mlp.up.weight"; "layers.0.attn.q.weight" is an error when the
//    model has no "layers.*.attn.q.weight". (Paths are compared with every
//    all-digit component replaced by "*". A model instantiated with zero
//    layers therefore rejects layer bindings.)
//  * all problems are collected and thrown together in one Error, one line
//    per problem, naming the Linnet path, the checkpoint name, and both
//    shapes and dtypes.
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "weights/dtype.h"
#include "weights/safetensors.h"

namespace linnet::weights {

struct ParamSpec {
  std::string path;  // "layers.3.attention.q_proj.weight"
  Shape shape;
  DType dtype = DType::F32;
};

class Bindings {
 public:
  // Throws Error naming the file for malformed JSON, a top level that is not
  // an object, a key that appears twice, and (all listed together) values
  // that are not nonempty strings and empty keys.
  static Bindings load(const std::filesystem::path& path);
  static Bindings parse(std::string_view json, std::string_view source);
  static Bindings fromEntries(std::map<std::string, std::string> entries, std::string source);

  // The checkpoint name bound to a Linnet path (exact, else through a
  // pattern), or nullopt.
  std::optional<std::string> find(std::string_view path) const;
  // Sorted by Linnet path; patterns keep their `*`s.
  const std::map<std::string, std::string, std::less<>>& entries() const { return entries_; }
  std::size_t size() const { return entries_.size(); }
  const std::string& source() const { return source_; }

 private:
  std::map<std::string, std::string, std::less<>> entries_;
  std::string source_;
};

struct BindOptions {
  // Convert f32/bf16/f16 checkpoint tensors to this dtype where the model
  // expects it and the checkpoint holds another float type. Must be f32, bf16
  // or f16. Unset: any dtype mismatch is an error.
  std::optional<DType> convertTo;
};

struct BoundTensor {
  ParamSpec param;                  // what the model expects
  std::string checkpointName;
  DType storedDType = DType::F32;   // the dtype in the checkpoint
  bool converted = false;           // storedDType != param.dtype
  std::span<const std::byte> data;  // param.shape x param.dtype, little-endian, C order; may be unaligned
  std::size_t file = 0;             // the checkpoint file it came from (Checkpoint::files())
};

class BoundWeights {
 public:
  // In the order of the expected parameters.
  const std::vector<BoundTensor>& tensors() const { return tensors_; }
  const BoundTensor* find(std::string_view path) const;
  const BoundTensor& at(std::string_view path) const;  // throws Error
  std::size_t size() const { return tensors_.size(); }
  std::size_t totalBytes() const;
  std::size_t convertedCount() const;
  // The checkpoint the data comes from (kept alive by this object).
  const Checkpoint& checkpoint() const { return checkpoint_; }

 private:
  friend BoundWeights bind(const std::vector<ParamSpec>&, const Bindings&, const Checkpoint&, BindOptions);
  Checkpoint checkpoint_;
  std::vector<std::unique_ptr<std::byte[]>> owned_;  // converted tensors
  std::vector<BoundTensor> tensors_;
  std::map<std::string, std::size_t, std::less<>> index_;
};

// Every problem binding `expected` through `bindings` to `checkpoint`, one
// line each; empty when bind() would succeed. Throws Error only for invalid
// options.
std::vector<std::string> bindingProblems(const std::vector<ParamSpec>& expected, const Bindings& bindings,
                                         const Checkpoint& checkpoint, BindOptions options = {});

// Binds, or throws one Error listing all problems. Call it qualified
// (weights::bind): unqualified, argument-dependent lookup also finds std::bind
// through the std::vector argument, which wins for non-const arguments. The result holds a copy
// of `checkpoint`, so the mapped bytes outlive the caller's Checkpoint.
BoundWeights bind(const std::vector<ParamSpec>& expected, const Bindings& bindings, const Checkpoint& checkpoint,
                  BindOptions options = {});

// "layers.3.attention.q_proj.weight" -> "layers.*.attention.q_proj.weight".
std::string pathPattern(std::string_view path);

// The indices `path` gives a pattern's `*`s (each a whole component standing
// for digits), or nullopt when it does not match: "layers.*.mlp.up.weight"
// and "layers.3.mlp.up.weight" give {"3"}.
std::optional<std::vector<std::string_view>> matchPattern(std::string_view pattern, std::string_view path);
// `name` with its `*`s replaced by `indices` in order (as many as it has).
std::string fillPattern(std::string_view name, const std::vector<std::string_view>& indices);

}  // namespace linnet::weights
