// llama-architecture GGUF files as Hugging Face checkpoints.
//
// Tensor names: llama.cpp's -> Hugging Face's (LlamaForCausalLM):
//   token_embd.weight            model.embed_tokens.weight
//   blk.N.attn_norm.weight       model.layers.N.input_layernorm.weight
//   blk.N.attn_q.weight/.bias    model.layers.N.self_attn.q_proj.weight/.bias
//   blk.N.attn_k.weight/.bias    model.layers.N.self_attn.k_proj.weight/.bias
//   blk.N.attn_v.weight/.bias    model.layers.N.self_attn.v_proj.weight/.bias
//   blk.N.attn_output.weight     model.layers.N.self_attn.o_proj.weight
//   blk.N.ffn_norm.weight        model.layers.N.post_attention_layernorm.weight
//   blk.N.ffn_gate.weight        model.layers.N.mlp.gate_proj.weight
//   blk.N.ffn_up.weight          model.layers.N.mlp.up_proj.weight
//   blk.N.ffn_down.weight        model.layers.N.mlp.down_proj.weight
//   output_norm.weight           model.norm.weight
//   output.weight                lm_head.weight (absent: tied to the embedding)
// rope_freqs.weight (Llama 3.1's rope scaling factors, which Hugging Face
// computes from config.json instead) has no counterpart and is left out.
//
// llama.cpp's converter (convert_hf_to_gguf.py) reorders the rows of the q
// and k projections (weights and biases) for its rope layout:
//   permute(w, n_head) = w.reshape(n_head, 2, rows/n_head/2, ...)
//                         .swapaxes(1, 2).reshape(w.shape)
// with n_head = llama.attention.head_count for q and
// llama.attention.head_count_kv for k. loadAsHuggingFace undoes it, so every
// tensor equals the Hugging Face one (up to the quantization of the file).
#pragma once

#include <nlohmann/json.hpp>

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

// "blk.3.attn_q.weight" -> "model.layers.3.self_attn.q_proj.weight";
// nullopt for a name with no Hugging Face counterpart.
std::optional<std::string> llamaHuggingFaceName(std::string_view ggufName);
// The reverse: "lm_head.weight" -> "output.weight".
std::optional<std::string> llamaGgufName(std::string_view hfName);

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
  // Tensors with no Hugging Face name (other than rope_freqs.weight): an
  // error listing them (false), or left out (true).
  bool skipUnknown = false;
};

// Every tensor of a llama-architecture file under its Hugging Face name, in
// Hugging Face layout (q/k un-permuted). No lm_head.weight when the file has
// no output.weight (tied embeddings; see hasTiedEmbeddings). Throws Error
// naming the file for another architecture, unknown tensors, a type that
// cannot be dequantized, or head counts that do not divide the q/k rows.
std::map<std::string, Tensor> loadAsHuggingFace(const File& file, const HfLoadOptions& options = {});
std::map<std::string, Tensor> loadAsHuggingFace(const std::filesystem::path& path, const HfLoadOptions& options = {});

// A tensor as the file stores it (ggml's blocks), its rows in Hugging Face
// order: the q/k rows are moved whole and no block is touched, so nothing is
// dequantized. `data` is inside the file's mapping (valid while a copy of
// the File lives), or in `owned` for reordered q/k rows.
struct StoredTensor {
  GgmlType type = GgmlType::F32;
  std::vector<std::int64_t> shape;  // row-major, outermost first
  std::span<const std::byte> data;
  std::shared_ptr<const std::vector<std::byte>> owned;
};

// Tensor `t` of a llama-architecture file as stored. Throws Error as
// loadAsHuggingFace does for q/k rows that cannot be un-permuted.
StoredTensor storedAsHuggingFace(const File& file, const TensorInfo& t);

// True when the file has token_embd.weight but no output.weight.
bool hasTiedEmbeddings(const File& file);

// The Hugging Face config.json of a llama-architecture file, from its
// metadata: architectures, model_type, hidden_size, intermediate_size,
// num_hidden_layers, num_attention_heads, num_key_value_heads, head_dim,
// rms_norm_eps, rope_theta, max_position_embeddings, vocab_size,
// tie_word_embeddings, and bos/eos token ids when the tokenizer gives them.
// FLOAT32 metadata is written as the shortest decimal that reads back as that
// float (1e-05, not 9.999999747378752e-06).
nlohmann::json huggingFaceConfig(const File& file);

// A safetensors file of `tensors` (header JSON sorted by name, 8-byte
// aligned data), so the checkpoint machinery (linnet_weights: Checkpoint,
// bindings.json) can read a GGUF model. `metadata` goes to __metadata__.
std::vector<std::byte> toSafetensors(const std::map<std::string, Tensor>& tensors,
                                     const std::map<std::string, std::string>& metadata = {});
void writeSafetensors(const std::filesystem::path& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

}  // namespace linnet::gguf
