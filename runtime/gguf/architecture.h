// GGUF files as Hugging Face checkpoints, one table per family: how
// llama.cpp's converter (convert_hf_to_gguf.py) named, reordered and
// shifted a family's tensors, and which metadata keys hold its config.
// The tables are the [gguf] part of the zoo's family descriptors
// (nest/families/NAME.toml); this library reads them and applies them, and
// no C++ spells a family's names or keys:
//
//   [gguf.tensors]          # GGUF name = Hugging Face name, whole-model tensors
//   "token_embd.weight" = "model.embed_tokens.weight"
//   [gguf.layer_tensors]    # blk.N.<gguf> = model.layers.N.<hf>
//   "attn_q.weight" = "self_attn.q_proj.weight"
//   [gguf]
//   extends = "llama"                 # another family's tables, added to below
//   ignored = ["rope_freqs.weight"]   # GGUF tensors with no HF counterpart
//   # Rows reordered for llama.cpp's rope layout: a layer tensor's stem (its
//   # .weight and .bias), and the keys whose first present gives its head count.
//   permuted = { attn_q = "{arch}.attention.head_count", ... }
//   # Tensors stored as (HF value + shift), by the end of their HF name.
//   shifted = { "norm.weight" = 1.0 }
//   [gguf.config]           # config.json key = GGUF keys ({arch}: general.architecture)
//   hidden_size = "{arch}.embedding_length"
//   vocab_size = ["{arch}.vocab_size", "tokenizer.ggml.tokens"]   # an array: its length
//   [gguf.config_defaults]  # config.json values no metadata key gives
//   model_type = "llama"
//
// The permutation (Llama's only):
//   permute(w, n_head) = w.reshape(n_head, 2, rows/n_head/2, ...)
//                         .swapaxes(1, 2).reshape(w.shape)
// loadAsHuggingFace undoes it and the shift, so every tensor equals the
// Hugging Face one (up to the quantization of the file).
#pragma once

#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf.h"

namespace linnet::gguf {

struct TensorName {
  std::string gguf, hf;
};

// A layer tensor stem ("attn_q") whose rows llama.cpp reordered, and the
// metadata keys (with {arch}) whose first present gives its head count.
struct PermutedTensor {
  std::string stem;
  std::vector<std::string> headKeys;
};

// Tensors stored as the Hugging Face value + `by`, found by the end of
// their Hugging Face name (Gemma's norms: "norm.weight", 1).
struct ShiftedTensor {
  std::string hfSuffix;
  double by = 0;
};

// A config.json key (dotted: "rope_scaling.factor" nests) and the GGUF keys
// that give it, the first present counting.
struct ConfigKey {
  std::string hf;
  std::vector<std::string> gguf;
};

struct Architecture {
  std::string family;              // for messages
  std::vector<std::string> names;  // general.architecture values of its files
  std::vector<TensorName> tensors, layerTensors;
  std::vector<std::string> ignored;
  std::vector<PermutedTensor> permuted;
  std::vector<ShiftedTensor> shifted;
  std::vector<ConfigKey> config;
  nlohmann::json configDefaults = nlohmann::json::object();

  // "blk.3.attn_q.weight" -> "model.layers.3.self_attn.q_proj.weight";
  // nullopt for a name with no Hugging Face counterpart.
  std::optional<std::string> huggingFaceName(std::string_view ggufName) const;
  // The reverse.
  std::optional<std::string> ggufName(std::string_view hfName) const;
  // The shift of a tensor by its Hugging Face name; 0 when none.
  double shiftOf(std::string_view hfName) const;
  // The permuted entry of a GGUF tensor name ("blk.3.attn_q.weight"); null
  // when its rows are in Hugging Face's order.
  const PermutedTensor* permutedTensor(std::string_view ggufName) const;
  // The GGUF keys of a config.json key ("hidden_size"); null when none.
  const ConfigKey* configKey(std::string_view hf) const;
};

// The [gguf] table of family `family` (its names: `names`) as above; Error
// naming `file` and the key when it is not of that schema. With `base` (the
// family `extends = "NAME"` names), its tensors, layer_tensors and config
// entries are added to or replace base's one by one; ignored, permuted,
// shifted and config_defaults, when given, replace base's whole.
Architecture architectureFrom(const toml::table& gguf, const std::string& family, std::vector<std::string> names,
                              const std::string& file, const Architecture* base = nullptr);
// A descriptor's key with `{arch}` replaced by a file's architecture:
// ("{arch}.block_count", "qwen3") -> "qwen3.block_count".
std::string withArchitecture(std::string key, std::string_view arch);

// A family descriptor file as TOML; Error naming file:line:column when it
// is not.
toml::table parseDescriptor(const std::filesystem::path& descriptor);
// A family descriptor file's [family] name and gguf list, and its [gguf]
// (the descriptor it extends read from the same folder).
Architecture readArchitecture(const std::filesystem::path& descriptor);

// Reorders the rows of a row-major [rows, cols] matrix (cols = 1 for a bias):
// unpermuteRows undoes convert_hf_to_gguf.py's permute(w, heads),
// permuteRows does it. rows must be a multiple of 2 * heads, and data hold
// rows * cols values; otherwise std::invalid_argument.
void unpermuteRows(std::span<float> data, std::int64_t rows, std::int64_t cols, std::int64_t heads);
void permuteRows(std::span<float> data, std::int64_t rows, std::int64_t cols, std::int64_t heads);

// A tensor in memory: little-endian elements of `dtype`, row-major.
struct Tensor {
  std::vector<std::int64_t> shape;
  DType dtype = DType::F32;
  std::vector<std::byte> data;
  std::string ggufName;                // where it came from
  GgmlType ggufType = GgmlType::F32;   // how it was stored

  std::int64_t elementCount() const;
  // The values as f32 (exact for f32, bf16 and f16).
  std::vector<float> toF32() const;
};

struct HfLoadOptions {
  // Every tensor is dequantized to f32, then rounded (nearest even) to this.
  DType dtype = DType::F32;
  // Tensors with no Hugging Face name (other than the ignored ones): an
  // error listing them (false), or left out (true).
  bool skipUnknown = false;
};

// Every tensor of a file of `arch` under its Hugging Face name, in Hugging
// Face layout (rows un-permuted, shifts undone). No lm_head.weight when the
// file has no output.weight (tied embeddings; see hasTiedEmbeddings).
// Throws Error naming the file for another architecture, unknown tensors, a
// type that cannot be dequantized, or head counts that do not divide the
// permuted rows.
std::map<std::string, Tensor> loadAsHuggingFace(const File& file, const Architecture& arch,
                                                const HfLoadOptions& options = {});
std::map<std::string, Tensor> loadAsHuggingFace(const std::filesystem::path& path, const Architecture& arch,
                                                const HfLoadOptions& options = {});

// A tensor as the file stores it (ggml's blocks), its rows in Hugging Face
// order: permuted rows are moved whole and no block is touched, so nothing
// is dequantized. `data` is inside the file's mapping (valid while a copy
// of the File lives), or in `owned` for reordered rows. nullopt for a
// shifted tensor, which only its dequantized values can give.
struct StoredTensor {
  GgmlType type = GgmlType::F32;
  std::vector<std::int64_t> shape;  // row-major, outermost first
  std::span<const std::byte> data;
  std::shared_ptr<const std::vector<std::byte>> owned;
};
std::optional<StoredTensor> storedAsHuggingFace(const File& file, const Architecture& arch, const TensorInfo& t);

// True when the file has token_embd.weight but no output.weight.
bool hasTiedEmbeddings(const File& file);

// Error naming the file unless its general.architecture is one of `arch`'s.
void checkArchitecture(const File& file, const Architecture& arch);

// The Hugging Face config.json of a file of `arch`: its config_defaults,
// then every [gguf.config] key the metadata has (an array key: its length;
// FLOAT32 written as the shortest decimal that reads back as that float,
// 1e-05 rather than 9.999999747378752e-06), head_dim as hidden_size /
// num_attention_heads when no key gives it, tie_word_embeddings, and the
// bos/eos token ids when the tokenizer gives them.
nlohmann::json huggingFaceConfig(const File& file, const Architecture& arch);

// A safetensors file of `tensors` (header JSON sorted by name, 8-byte
// aligned data), so the checkpoint machinery (linnet_weights: Checkpoint,
// bindings.json) can read a GGUF model. `metadata` goes to __metadata__.
std::vector<std::byte> toSafetensors(const std::map<std::string, Tensor>& tensors,
                                     const std::map<std::string, std::string>& metadata = {});
void writeSafetensors(const std::filesystem::path& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

}  // namespace linnet::gguf
