#include "gguf/architecture.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace linnet::gguf {

namespace {

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

constexpr std::string_view kGgufLayer = "blk.", kHfLayer = "model.layers.";

std::optional<std::string> renamed(std::string_view name, const Architecture& arch, bool toHf) {
  for (const TensorName& p : arch.tensors)
    if (name == (toHf ? p.gguf : p.hf)) return toHf ? p.hf : p.gguf;
  std::string_view layer, rest;
  if (!splitLayer(name, toHf ? kGgufLayer : kHfLayer, layer, rest)) return std::nullopt;
  for (const TensorName& p : arch.layerTensors)
    if (rest == (toHf ? p.gguf : p.hf))
      return fmt::format("{}{}.{}", toHf ? kHfLayer : kGgufLayer, layer, toHf ? p.hf : p.gguf);
  return std::nullopt;
}

// A permuted tensor: its layer and stem entry.
struct Permuted {
  const PermutedTensor* entry = nullptr;
  std::int64_t layer = 0;
};
std::optional<Permuted> permutedOf(const Architecture& arch, std::string_view ggufName) {
  std::string_view layer, rest;
  if (!splitLayer(ggufName, kGgufLayer, layer, rest)) return std::nullopt;
  for (const PermutedTensor& p : arch.permuted)
    if (rest == p.stem + ".weight" || rest == p.stem + ".bias") {
      Permuted r{&p, 0};
      std::from_chars(layer.data(), layer.data() + layer.size(), r.layer);
      return r;
    }
  return std::nullopt;
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

std::string withArch(const File& file, const std::string& key) { return withArchitecture(key, file.architecture()); }

// The head count whose rope layout llama.cpp gave tensor `t`'s rows, with
// the check that they can be un-permuted.
std::int64_t permutedHeads(const File& file, const TensorInfo& t, const Permuted& p) {
  std::string key;
  for (const std::string& k : p.entry->headKeys)
    if (file.metadata().contains(withArch(file, k))) {
      key = withArch(file, k);
      break;
    }
  if (key.empty())
    throw Error(fmt::format("{}: tensor '{}' has its rows in llama.cpp's rope order, but no metadata key gives its "
                            "head count (looked for {})",
                            file.label(), t.name, fmt::join(p.entry->headKeys, ", ")));
  const std::int64_t heads = perLayer(file, key, p.layer);
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

// A metadata value as config.json holds it: numbers, strings, booleans, an
// array as its length.
std::optional<nlohmann::json> configValue(const Value& v) {
  if (std::holds_alternative<float>(v.data) || std::holds_alternative<double>(v.data)) return metadataNumber(v);
  if (auto i = v.asInt()) return *i;
  if (const bool* b = std::get_if<bool>(&v.data)) return *b;
  if (const std::string* s = std::get_if<std::string>(&v.data)) return *s;
  if (const Array* a = std::get_if<Array>(&v.data)) return a->size();
  return std::nullopt;
}

// Sets a dotted config key ("rope_scaling.factor") inside `c`.
void setDotted(nlohmann::json& c, const std::string& key, nlohmann::json value) {
  nlohmann::json* node = &c;
  std::size_t start = 0;
  for (std::size_t dot; (dot = key.find('.', start)) != std::string::npos; start = dot + 1) {
    nlohmann::json& next = (*node)[key.substr(start, dot - start)];
    if (!next.is_object()) next = nlohmann::json::object();
    node = &next;
  }
  (*node)[key.substr(start)] = std::move(value);
}

}  // namespace

std::optional<std::string> Architecture::huggingFaceName(std::string_view name) const {
  return renamed(name, *this, true);
}

std::optional<std::string> Architecture::ggufName(std::string_view name) const { return renamed(name, *this, false); }

double Architecture::shiftOf(std::string_view hfName) const {
  for (const ShiftedTensor& s : shifted)
    if (hfName.ends_with(s.hfSuffix)) return s.by;
  return 0;
}

const ConfigKey* Architecture::configKey(std::string_view hf) const {
  for (const ConfigKey& k : config)
    if (k.hf == hf) return &k;
  return nullptr;
}

std::string withArchitecture(std::string key, std::string_view arch) {
  for (std::size_t at; (at = key.find("{arch}")) != std::string::npos;) key.replace(at, 6, arch);
  return key;
}

const PermutedTensor* Architecture::permutedTensor(std::string_view ggufName) const {
  auto p = permutedOf(*this, ggufName);
  return p ? p->entry : nullptr;
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

void checkArchitecture(const File& file, const Architecture& arch) {
  const std::string name = file.architecture();
  if (std::find(arch.names.begin(), arch.names.end(), name) == arch.names.end())
    throw Error(fmt::format("{}: general.architecture is {}, not the {} family's ({})", file.label(),
                            name.empty() ? std::string("missing") : "'" + name + "'", arch.family,
                            fmt::join(arch.names, ", ")));
}

std::optional<StoredTensor> storedAsHuggingFace(const File& file, const Architecture& arch, const TensorInfo& t) {
  if (auto hf = arch.huggingFaceName(t.name); hf && arch.shiftOf(*hf) != 0) return std::nullopt;
  StoredTensor r{t.type, t.shape, t.data, nullptr};
  auto permuted = permutedOf(arch, t.name);
  if (!permuted || t.data.empty()) return r;
  const std::int64_t heads = permutedHeads(file, t, *permuted), rows = t.shape[0];
  auto owned = std::make_shared<std::vector<std::byte>>(t.data.begin(), t.data.end());
  reorderRows(*owned, rows, owned->size() / static_cast<std::size_t>(rows), heads, true);
  r.data = *owned;
  r.owned = std::move(owned);
  return r;
}

bool hasTiedEmbeddings(const File& file) {
  return file.find("token_embd.weight") != nullptr && file.find("output.weight") == nullptr;
}

std::map<std::string, Tensor> loadAsHuggingFace(const std::filesystem::path& path, const Architecture& arch,
                                                const HfLoadOptions& options) {
  return loadAsHuggingFace(File::open(path), arch, options);
}

namespace {

// Tensor `t` (Hugging Face name `hf`) dequantized, its rows and values as
// Hugging Face holds them.
Tensor huggingFaceTensor(const File& file, const Architecture& arch, const TensorInfo& t, const std::string& hf,
                         DType dtype) {
  Tensor r;
  r.shape = t.shape;
  r.dtype = dtype;
  r.ggufName = t.name;
  r.ggufType = t.type;
  const auto permuted = permutedOf(arch, t.name);
  const double shift = arch.shiftOf(hf);
  if (!permuted && shift == 0) {
    r.data = file.read(t, dtype);
    return r;
  }
  std::vector<float> v = file.dequantize(t);
  if (permuted && !v.empty()) {
    const std::int64_t heads = permutedHeads(file, t, *permuted), rows = t.shape[0];
    unpermuteRows(v, rows, rows ? static_cast<std::int64_t>(t.elementCount) / rows : 0, heads);
  }
  // (x + s) - s is x exactly wherever the sum was exact; a float rounds
  // the subtraction of an exact float once.
  for (float& x : v) x = static_cast<float>(static_cast<double>(x) - shift);
  r.data = convertF32(v, dtype);
  return r;
}

}  // namespace

std::map<std::string, Tensor> loadAsHuggingFace(const File& file, const Architecture& arch,
                                                const HfLoadOptions& options) {
  checkArchitecture(file, arch);
  std::map<std::string, Tensor> out;
  std::vector<std::string> unknown;
  for (const TensorInfo& t : file.tensors()) {
    if (std::find(arch.ignored.begin(), arch.ignored.end(), t.name) != arch.ignored.end()) continue;
    std::optional<std::string> hf = arch.huggingFaceName(t.name);
    if (!hf) {
      unknown.push_back(t.name);
      continue;
    }
    out.emplace(*hf, huggingFaceTensor(file, arch, t, *hf, options.dtype));
  }
  if (!unknown.empty() && !options.skipUnknown) {
    std::string list;
    for (std::size_t i = 0; i < unknown.size() && i < 10; ++i) list += (i ? ", '" : "'") + unknown[i] + "'";
    if (unknown.size() > 10) list += fmt::format(", ... ({} in all)", unknown.size());
    throw Error(fmt::format("{}: {} tensor(s) have no Hugging Face name in the {} family's table: {} (pass "
                            "skipUnknown to leave them out)",
                            file.label(), unknown.size(), arch.family, list));
  }
  return out;
}

nlohmann::json huggingFaceConfig(const File& file, const Architecture& arch) {
  checkArchitecture(file, arch);
  const Metadata& md = file.metadata();
  nlohmann::json c = arch.configDefaults;
  for (const ConfigKey& k : arch.config)
    for (const std::string& key : k.gguf)
      if (const Value* v = md.find(withArch(file, key))) {
        // A per-layer array of integers (head counts) gives its first
        // entry; another array (the tokens) its length.
        const Array* a = std::get_if<Array>(&v->data);
        const bool perLayerInts = a && a->size() > 0 && a->type() != ValueType::String &&
                                  a->type() != ValueType::F32 && a->type() != ValueType::F64 &&
                                  a->type() != ValueType::Bool && a->type() != ValueType::Array;
        std::optional<nlohmann::json> value =
            perLayerInts ? nlohmann::json(perLayer(file, withArch(file, key), 0)) : configValue(*v);
        if (!value) continue;
        setDotted(c, k.hf, std::move(*value));
        break;
      }
  if (!c.contains("head_dim") && c.value("num_attention_heads", 0) > 0 && c.contains("hidden_size"))
    c["head_dim"] = c["hidden_size"].get<std::int64_t>() / c["num_attention_heads"].get<std::int64_t>();
  c["tie_word_embeddings"] = hasTiedEmbeddings(file);
  if (auto b = md.findInt("tokenizer.ggml.bos_token_id")) c["bos_token_id"] = *b;
  if (auto e = md.findInt("tokenizer.ggml.eos_token_id")) c["eos_token_id"] = *e;
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
