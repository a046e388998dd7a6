#include "gguf/llama.h"

#include <fmt/format.h>

#include <charconv>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace linnet::gguf {

namespace {

struct Pair {
  std::string_view gguf;
  std::string_view hf;
};

// Per-layer tensors: blk.N.<gguf> <-> model.layers.N.<hf>.
constexpr Pair kLayer[] = {
    {"attn_norm.weight", "input_layernorm.weight"},
    {"attn_q.weight", "self_attn.q_proj.weight"},
    {"attn_q.bias", "self_attn.q_proj.bias"},
    {"attn_k.weight", "self_attn.k_proj.weight"},
    {"attn_k.bias", "self_attn.k_proj.bias"},
    {"attn_v.weight", "self_attn.v_proj.weight"},
    {"attn_v.bias", "self_attn.v_proj.bias"},
    {"attn_output.weight", "self_attn.o_proj.weight"},
    {"attn_output.bias", "self_attn.o_proj.bias"},
    {"ffn_norm.weight", "post_attention_layernorm.weight"},
    {"ffn_gate.weight", "mlp.gate_proj.weight"},
    {"ffn_gate.bias", "mlp.gate_proj.bias"},
    {"ffn_up.weight", "mlp.up_proj.weight"},
    {"ffn_up.bias", "mlp.up_proj.bias"},
    {"ffn_down.weight", "mlp.down_proj.weight"},
    {"ffn_down.bias", "mlp.down_proj.bias"},
};

constexpr Pair kGlobal[] = {
    {"token_embd.weight", "model.embed_tokens.weight"},
    {"output_norm.weight", "model.norm.weight"},
    {"output.weight", "lm_head.weight"},
};

// "<prefix><digits>.<rest>" -> (digits, rest).
bool splitLayer(std::string_view name, std::string_view prefix, std::string_view& layer, std::string_view& rest) {
  if (name.substr(0, prefix.size()) != prefix) return false;
  name.remove_prefix(prefix.size());
  std::size_t n = 0;
  while (n < name.size() && name[n] >= '0' && name[n] <= '9') ++n;
  if (n == 0 || n >= name.size() || name[n] != '.') return false;
  if (n > 1 && name[0] == '0') return false;  // no leading zeros: one spelling per layer
  layer = name.substr(0, n);
  rest = name.substr(n + 1);
  return true;
}

// Layer index and whether this is a q or k projection weight or bias.
struct QK {
  bool isQ = false;
  std::int64_t layer = 0;
};
std::optional<QK> qkOf(std::string_view ggufName) {
  std::string_view layer, rest;
  if (!splitLayer(ggufName, "blk.", layer, rest)) return std::nullopt;
  QK r;
  if (rest == "attn_q.weight" || rest == "attn_q.bias") r.isQ = true;
  else if (rest != "attn_k.weight" && rest != "attn_k.bias") return std::nullopt;
  std::from_chars(layer.data(), layer.data() + layer.size(), r.layer);
  return r;
}

std::int64_t perLayer(const File& file, std::string_view key, std::int64_t layer);

// Moves whole rows (of any byte size) between llama.cpp's and Hugging
// Face's order of the q/k rows.
void reorderRows(std::span<std::byte> data, std::int64_t rows, std::size_t rowBytes, std::int64_t heads, bool undo) {
  if (heads <= 0 || rows < 0 || heads > rows || rows % (2 * heads) != 0)
    throw std::invalid_argument(
        fmt::format("cannot permute {} rows for {} heads: rows must be a multiple of 2 x heads", rows, heads));
  if (static_cast<std::uint64_t>(rows) * rowBytes != data.size())
    throw std::invalid_argument(fmt::format("{} rows of {} bytes expected, {} bytes given", rows, rowBytes, data.size()));
  if (data.empty()) return;
  const std::int64_t headDim = rows / heads, half = headDim / 2;
  std::vector<std::byte> src(data.begin(), data.end());
  for (std::int64_t h = 0; h < heads; ++h)
    for (std::int64_t j = 0; j < 2; ++j)
      for (std::int64_t i = 0; i < half; ++i) {
        // Hugging Face row (h, j, i) is llama.cpp row (h, i, j).
        const auto hf = static_cast<std::size_t>(h * headDim + j * half + i);
        const auto gg = static_cast<std::size_t>(h * headDim + 2 * i + j);
        const std::size_t to = undo ? hf : gg, from = undo ? gg : hf;
        std::memcpy(data.data() + to * rowBytes, src.data() + from * rowBytes, rowBytes);
      }
}

void reorder(std::span<float> data, std::int64_t rows, std::int64_t cols, std::int64_t heads, bool undo) {
  if (cols < 0) throw std::invalid_argument(fmt::format("cannot permute rows of {} columns", cols));
  if (static_cast<std::uint64_t>(rows) * static_cast<std::uint64_t>(cols) != data.size())
    throw std::invalid_argument(fmt::format("{} x {} values expected, {} given", rows, cols, data.size()));
  reorderRows(std::as_writable_bytes(data), rows, static_cast<std::size_t>(cols) * sizeof(float), heads, undo);
}

// The head count whose rope layout llama.cpp gave tensor `t`'s rows, with
// the check that they can be un-permuted.
std::int64_t qkHeads(const File& file, const TensorInfo& t, const QK& qk) {
  const std::string key = qk.isQ ? "llama.attention.head_count" : "llama.attention.head_count_kv";
  const std::int64_t heads = (!qk.isQ && !file.metadata().contains(key))
                                 ? perLayer(file, "llama.attention.head_count", qk.layer)
                                 : perLayer(file, key, qk.layer);
  const std::int64_t rows = t.shape.empty() ? 1 : t.shape[0];
  if (t.shape.empty() || t.shape.size() > 2 || heads <= 0 || heads > rows || rows % (2 * heads) != 0)
    throw Error(fmt::format("{}: tensor '{}' has shape {}, which cannot be un-permuted for {} = {} heads (its "
                            "rows must be a multiple of 2 x heads)",
                            file.label(), t.name, shapeString(t.shape), key, heads));
  return heads;
}

// An integer per layer: a plain integer, or an array with one per layer.
std::int64_t perLayer(const File& file, std::string_view key, std::int64_t layer) {
  const Metadata& md = file.metadata();
  const Value* v = md.find(key);
  if (!v) throw Error(fmt::format("{}: metadata key '{}' is missing", file.label(), key));
  if (const Array* a = std::get_if<Array>(&v->data)) {
    if (static_cast<std::uint64_t>(layer) >= a->size())
      throw Error(fmt::format("{}: metadata '{}' has {} entries, none for layer {}", file.label(), key, a->size(),
                              layer));
    Value e;
    std::optional<std::int64_t> r;
    std::visit(
        [&](const auto& vec) {
          using E = typename std::decay_t<decltype(vec)>::value_type;
          if constexpr (std::is_integral_v<E> && !std::is_same_v<E, bool>) {
            e.data = static_cast<E>(vec[static_cast<std::size_t>(layer)]);
            r = e.asInt();
          }
        },
        a->items);
    if (!r) throw Error(fmt::format("{}: metadata '{}' must hold integers, found {}", file.label(), key, v->toString(4)));
    return *r;
  }
  return md.getInt(key);
}

double metadataNumber(const Value& v) {
  if (const float* f = std::get_if<float>(&v.data)) return std::stod(fmt::format("{}", *f));  // shortest decimal
  if (auto d = v.asFloat()) return *d;
  if (auto i = v.asInt()) return static_cast<double>(*i);
  return 0.0;
}

}  // namespace

std::optional<std::string> llamaHuggingFaceName(std::string_view name) {
  for (const Pair& p : kGlobal)
    if (name == p.gguf) return std::string(p.hf);
  std::string_view layer, rest;
  if (!splitLayer(name, "blk.", layer, rest)) return std::nullopt;
  for (const Pair& p : kLayer)
    if (rest == p.gguf) return fmt::format("model.layers.{}.{}", layer, p.hf);
  return std::nullopt;
}

std::optional<std::string> llamaGgufName(std::string_view name) {
  for (const Pair& p : kGlobal)
    if (name == p.hf) return std::string(p.gguf);
  std::string_view layer, rest;
  if (!splitLayer(name, "model.layers.", layer, rest)) return std::nullopt;
  for (const Pair& p : kLayer)
    if (rest == p.hf) return fmt::format("blk.{}.{}", layer, p.gguf);
  return std::nullopt;
}

void unpermuteRows(std::span<float> data, std::int64_t rows, std::int64_t cols, std::int64_t heads) {
  reorder(data, rows, cols, heads, true);
}

void permuteRows(std::span<float> data, std::int64_t rows, std::int64_t cols, std::int64_t heads) {
  reorder(data, rows, cols, heads, false);
}

std::int64_t Tensor::elementCount() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

std::vector<float> Tensor::toF32() const {
  const std::size_t n = data.size() / linnet::byteSize(dtype);
  std::vector<float> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (dtype == DType::F32) {
      std::memcpy(&out[i], data.data() + 4 * i, 4);
    } else {
      std::uint16_t h;
      std::memcpy(&h, data.data() + 2 * i, 2);
      out[i] = dtype == DType::BF16 ? bf16ToF32(h) : f16ToF32(h);
    }
  }
  return out;
}

StoredTensor storedAsHuggingFace(const File& file, const TensorInfo& t) {
  StoredTensor r{t.type, t.shape, t.data, nullptr};
  auto qk = qkOf(t.name);
  if (!qk || t.data.empty()) return r;
  const std::int64_t heads = qkHeads(file, t, *qk), rows = t.shape[0];
  auto owned = std::make_shared<std::vector<std::byte>>(t.data.begin(), t.data.end());
  reorderRows(*owned, rows, owned->size() / static_cast<std::size_t>(rows), heads, true);
  r.data = *owned;
  r.owned = std::move(owned);
  return r;
}

bool hasTiedEmbeddings(const File& file) {
  return file.find("token_embd.weight") != nullptr && file.find("output.weight") == nullptr;
}

std::map<std::string, Tensor> loadAsHuggingFace(const std::filesystem::path& path, const HfLoadOptions& options) {
  return loadAsHuggingFace(File::open(path), options);
}

std::map<std::string, Tensor> loadAsHuggingFace(const File& file, const HfLoadOptions& options) {
  const std::string arch = file.architecture();
  if (arch != "llama")
    throw Error(fmt::format("{}: general.architecture is {}; loading as Hugging Face tensors supports 'llama' only",
                            file.label(), arch.empty() ? std::string("missing") : "'" + arch + "'"));
  std::map<std::string, Tensor> out;
  std::vector<std::string> unknown;
  for (const TensorInfo& t : file.tensors()) {
    if (t.name == "rope_freqs.weight") continue;
    std::optional<std::string> hf = llamaHuggingFaceName(t.name);
    if (!hf) {
      unknown.push_back(t.name);
      continue;
    }
    Tensor r;
    r.shape = t.shape;
    r.dtype = options.dtype;
    r.ggufName = t.name;
    r.ggufType = t.type;
    if (auto qk = qkOf(t.name)) {
      const std::int64_t heads = qkHeads(file, t, *qk);
      const std::int64_t rows = t.shape[0];
      std::vector<float> v = file.dequantize(t);
      const std::int64_t cols = rows ? static_cast<std::int64_t>(t.elementCount) / rows : 0;
      if (!v.empty()) unpermuteRows(v, rows, cols, heads);
      r.data = convertF32(v, options.dtype);
    } else {
      r.data = file.read(t, options.dtype);
    }
    out.emplace(std::move(*hf), std::move(r));
  }
  if (!unknown.empty() && !options.skipUnknown) {
    std::string list;
    for (std::size_t i = 0; i < unknown.size() && i < 10; ++i) list += (i ? ", '" : "'") + unknown[i] + "'";
    if (unknown.size() > 10) list += fmt::format(", ... ({} in all)", unknown.size());
    throw Error(fmt::format("{}: {} tensor(s) have no Hugging Face llama name: {} (pass skipUnknown to leave them out)",
                            file.label(), unknown.size(), list));
  }
  return out;
}

nlohmann::json huggingFaceConfig(const File& file) {
  const std::string arch = file.architecture();
  if (arch != "llama")
    throw Error(fmt::format("{}: general.architecture is {}; a Hugging Face config can be made for 'llama' only",
                            file.label(), arch.empty() ? std::string("missing") : "'" + arch + "'"));
  const Metadata& md = file.metadata();
  nlohmann::json c;
  c["architectures"] = {"LlamaForCausalLM"};
  c["model_type"] = "llama";
  const std::int64_t hidden = md.getInt("llama.embedding_length");
  const std::int64_t heads = perLayer(file, "llama.attention.head_count", 0);
  c["hidden_size"] = hidden;
  c["intermediate_size"] = perLayer(file, "llama.feed_forward_length", 0);
  c["num_hidden_layers"] = md.getInt("llama.block_count");
  c["num_attention_heads"] = heads;
  c["num_key_value_heads"] = md.contains("llama.attention.head_count_kv")
                                 ? perLayer(file, "llama.attention.head_count_kv", 0)
                                 : heads;
  if (auto k = md.findInt("llama.attention.key_length")) c["head_dim"] = *k;
  else if (heads > 0) c["head_dim"] = hidden / heads;
  if (const Value* v = md.find("llama.attention.layer_norm_rms_epsilon")) c["rms_norm_eps"] = metadataNumber(*v);
  c["rope_theta"] = md.find("llama.rope.freq_base") ? metadataNumber(*md.find("llama.rope.freq_base")) : 10000.0;
  if (auto n = md.findInt("llama.context_length")) c["max_position_embeddings"] = *n;
  if (auto n = md.findInt("llama.vocab_size")) c["vocab_size"] = *n;
  else if (const Array* a = md.findArray("tokenizer.ggml.tokens", ValueType::String)) c["vocab_size"] = a->size();
  else if (const TensorInfo* e = file.find("token_embd.weight"); e && !e->shape.empty()) c["vocab_size"] = e->shape[0];
  if (const std::string* s = md.findString("llama.rope.scaling.type"); s && *s == "linear")
    if (const Value* f = md.find("llama.rope.scaling.factor"))
      c["rope_scaling"] = {{"type", "linear"}, {"factor", metadataNumber(*f)}};
  c["tie_word_embeddings"] = hasTiedEmbeddings(file);
  if (auto b = md.findInt("tokenizer.ggml.bos_token_id")) c["bos_token_id"] = *b;
  if (auto e = md.findInt("tokenizer.ggml.eos_token_id")) c["eos_token_id"] = *e;
  c["hidden_act"] = "silu";
  return c;
}

std::vector<std::byte> toSafetensors(const std::map<std::string, Tensor>& tensors,
                                     const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::size_t offset = 0;
  for (const auto& [name, t] : tensors) {
    const char* dt = t.dtype == DType::F32 ? "F32" : t.dtype == DType::BF16 ? "BF16" : "F16";
    header[name] = {{"dtype", dt}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.data.size()}}};
    offset += t.data.size();
  }
  std::string h = header.dump();
  while (h.size() % 8) h += ' ';
  std::vector<std::byte> out(8 + h.size() + offset);
  const std::uint64_t n = h.size();
  std::memcpy(out.data(), &n, 8);
  std::memcpy(out.data() + 8, h.data(), h.size());
  std::size_t pos = 8 + h.size();
  for (const auto& [name, t] : tensors) {
    if (!t.data.empty()) std::memcpy(out.data() + pos, t.data.data(), t.data.size());
    pos += t.data.size();
  }
  return out;
}

void writeSafetensors(const std::filesystem::path& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  const std::vector<std::byte> bytes = toSafetensors(tensors, metadata);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw Error(fmt::format("{}: cannot open for writing", path.string()));
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw Error(fmt::format("{}: write failed", path.string()));
}

}  // namespace linnet::gguf
