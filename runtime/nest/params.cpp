#include "nest/params.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include <fmt/ranges.h>

#include "common/hash.h"
#include "nest/adapter.h"
#include "nest/conventions.h"
#include "weights/bindings.h"
#include "weights/safetensors.h"

#ifdef LINNET_HAVE_GGUF
#include "gguf/architecture.h"
#include "nest/families.h"
#endif

namespace linnet::nest {

namespace {

#ifdef LINNET_HAVE_GGUF
// The GGUF's own account of its shapes against the model's generics, before
// any tensor is bound: one line naming the key and the --set that fixes it,
// instead of a list of every tensor that then mismatches.
void checkGgufShapes(const gguf::File& file, const std::string& path, const std::map<std::string, int64_t>& dims) {
  const gguf::Metadata& meta = file.metadata();
  const std::string* arch = meta.findString("general.architecture");
  if (!arch) return;
  std::vector<std::string> problems, fixes;
  for (const GgufShapeKey& k : ggufShapeKeys()) {
    auto it = dims.find(k.generic);
    std::optional<int64_t> value = meta.findInt(*arch + "." + k.key);
    if (it == dims.end() || !value || *value == it->second) continue;
    problems.push_back(fmt::format("{}.{} = {}, but the model's {} = {}", *arch, k.key, *value, k.generic, it->second));
    fixes.push_back(fmt::format("--set {}={}", k.generic, *value));
  }
  if (auto it = dims.find(kVocabGeneric); it != dims.end())
    if (const gguf::Array* tokens = meta.findArray("tokenizer.ggml.tokens", gguf::ValueType::String))
      if (static_cast<int64_t>(tokens->size()) != it->second) {
        problems.push_back(fmt::format("tokenizer.ggml.tokens has {} tokens, but the model's {} = {}", tokens->size(),
                                       kVocabGeneric, it->second));
        fixes.push_back(fmt::format("--set {}={}", kVocabGeneric, tokens->size()));
      }
  if (!problems.empty())
    throw Error(fmt::format("{}: the checkpoint does not have the model's shapes: {}; load it with {}", path,
                            fmt::join(problems, "; "), fmt::join(fixes, " ")));
  auto context = meta.findInt(*arch + ".context_length");
  auto maxSeq = dims.find(kContextGeneric);
  if (context && maxSeq != dims.end() && maxSeq->second > *context)
    fmt::print(stderr,
               "linnet: warning: {} = {} is past {}.context_length = {} of {}, the context the model was trained "
               "for; positions beyond it may give poor output\n",
               kContextGeneric, maxSeq->second, *arch, *context, path);
}

// A GGUF tensor's storage that compiled code reads as is.
std::optional<Storage> storageOf(gguf::GgmlType t) {
  switch (t) {
    case gguf::GgmlType::F16: return Storage::F16;
    case gguf::GgmlType::BF16: return Storage::BF16;
    case gguf::GgmlType::Q8_0: return Storage::Q8_0;
    case gguf::GgmlType::Q4_0: return Storage::Q4_0;
    case gguf::GgmlType::Q4_1: return Storage::Q4_1;
    case gguf::GgmlType::Q4_K: return Storage::Q4_K;
    case gguf::GgmlType::Q5_K: return Storage::Q5_K;
    case gguf::GgmlType::Q6_K: return Storage::Q6_K;
    case gguf::GgmlType::Q5_0: return Storage::Q5_0;
    case gguf::GgmlType::Q5_1: return Storage::Q5_1;
    default: return std::nullopt;
  }
}
#endif

// A checkpoint tensor in its own storage, by checkpoint name.
struct Stored {
  Storage storage;
  std::span<const std::byte> bytes;
  std::shared_ptr<const void> owner;
};

struct Opened {
  weights::Checkpoint checkpoint;
  std::map<std::string, Stored, std::less<>> stored;  // GGUF matrices in a Storage format
};

// A checkpoint from a safetensors file or index, or from a GGUF file: its
// tensors are dequantized to f32 under their Hugging Face names and layout,
// written to a temporary safetensors file that is mapped and then unlinked,
// so that the same binding checks apply to both. A GGUF's quantized
// matrices are also kept as stored, for compiled code to read.
Opened openCheckpoint(const std::string& package, const std::string& path,
                      const std::map<std::string, int64_t>& dims) {
  if (!path.ends_with(".gguf")) return {weights::Checkpoint::open(path), {}};
#ifdef LINNET_HAVE_GGUF
  // Opened once: its metadata is checked, then its tensors are read.
  gguf::File file = gguf::File::open(path);
  checkGgufShapes(file, path, dims);
  // Read with its own family's table (prepareLoad has checked that it is
  // the card's family).
  const std::string arch = file.architecture();
  std::optional<Family> family = ggufFamily(package, arch);
  if (!family)
    throw Error(fmt::format("{}: general.architecture = \"{}\" is no family with a descriptor (nest/families); "
                            "add one that says how llama.cpp names its tensors",
                            path, arch));
  const gguf::Architecture& table = family->gguf;
  auto tensors = gguf::loadAsHuggingFace(file, table);
  auto temp = std::filesystem::temp_directory_path() /
              fmt::format("linnet-{}-{}.safetensors", ::getpid(), std::filesystem::path(path).stem().string());
  gguf::writeSafetensors(temp, tensors, {{"converted_from", path}});
  weights::Checkpoint checkpoint;
  try {
    checkpoint = weights::Checkpoint::open(temp);
  } catch (...) {
    std::filesystem::remove(temp);
    throw;
  }
  std::filesystem::remove(temp);  // the mapping stays valid
  // Messages name the GGUF, not the deleted temporary file.
  checkpoint.setDescription(path);
  Opened opened{std::move(checkpoint), {}};
  auto keep = std::make_shared<gguf::File>(file);
  for (const gguf::TensorInfo& t : file.tensors()) {
    auto storage = storageOf(t.type);
    auto hf = table.huggingFaceName(t.name);
    if (!storage || !hf || t.shape.size() != 2) continue;
    std::optional<gguf::StoredTensor> st = gguf::storedAsHuggingFace(file, table, t);
    if (!st) continue;
    std::shared_ptr<const void> owner = st->owned ? std::shared_ptr<const void>(st->owned) : keep;
    opened.stored.emplace(*hf, Stored{*storage, st->data, owner});
  }
  return opened;
#else
  throw Error(fmt::format("{}: this build has no GGUF reader", path));
#endif
}

std::vector<ParamBytes> randomParams(const std::vector<ParamInfo>& params, uint64_t seed) {
  std::vector<ParamBytes> out;
  for (const ParamInfo& p : params) {
    auto t = std::make_shared<Tensor>(randomParam(p, seed));
    out.push_back({t->bytes(), t});
  }
  return out;
}

}  // namespace

RandomFill randomFill(const ParamInfo& p, uint64_t seed) {
  RandomFill fill;
  fill.dtype = p.dtype;
  fill.count = 1;
  for (int64_t d : p.shape) fill.count *= static_cast<uint64_t>(d);
  fill.key = splitmix64(splitmix64(seed) ^ fnv1a(p.path));
  fill.base = p.shape.size() == 1 ? 1.0 : 0.0;
  fill.std = 0.02;
  return fill;
}

Tensor randomParam(const ParamInfo& p, uint64_t seed) {
  Tensor t = Tensor::zeros(p.dtype, p.shape);
  if (randomFillable(p.dtype)) drawRandom(randomFill(p, seed), t.bytes());
  return t;
}

namespace {

// Elements of a float param that are NaN or infinite: an exponent of all
// ones. (first index, how many); nullopt when there are none or the dtype
// is not a float.
std::optional<std::pair<int64_t, int64_t>> nonFinite(DType dtype, std::span<const std::byte> bytes) {
  auto scan = [&]<class Bits>(Bits exponent) -> std::optional<std::pair<int64_t, int64_t>> {
    const size_t n = bytes.size() / sizeof(Bits);
    int64_t count = 0, first = -1;
    constexpr size_t kChunk = 4096;
    for (size_t c = 0; c < n; c += kChunk) {
      const size_t end = std::min(n, c + kChunk);
      int64_t here = 0;  // a branch-free count per chunk, so the loop vectorizes
      for (size_t i = c; i < end; ++i) {
        Bits b;
        std::memcpy(&b, bytes.data() + i * sizeof(Bits), sizeof(Bits));
        here += (b & exponent) == exponent;
      }
      if (here && first < 0)
        for (size_t i = c; i < end && first < 0; ++i) {
          Bits b;
          std::memcpy(&b, bytes.data() + i * sizeof(Bits), sizeof(Bits));
          if ((b & exponent) == exponent) first = static_cast<int64_t>(i);
        }
      count += here;
    }
    if (count == 0) return std::nullopt;
    return std::pair(first, count);
  };
  switch (dtype) {
    case DType::F32: return scan(uint32_t{0x7f800000});
    case DType::BF16: return scan(uint16_t{0x7f80});
    case DType::F16: return scan(uint16_t{0x7c00});
    case DType::F64: return scan(uint64_t{0x7ff0000000000000});
    default: return std::nullopt;
  }
}

// A checkpoint whose weights hold NaN or infinity gives NaN logits and a
// made-up answer: refused at load, naming the tensor.
void requireFinite(const std::string& weights, const ParamInfo& param, const weights::BoundTensor& bound) {
  auto bad = nonFinite(param.dtype, bound.data);
  if (!bad) return;
  throw Error(fmt::format("{}: tensor `{}` (param `{}`) holds {} NaN or infinite value{} (the first at element {}): "
                          "the checkpoint is damaged; download or convert it again",
                          weights, bound.checkpointName, param.path, bad->second, bad->second == 1 ? "" : "s",
                          bad->first));
}

// The params from the checkpoint (or random), before any adapter.
std::vector<ParamBytes> bindBase(const std::string& package, const std::vector<ParamInfo>& params,
                                 const std::map<std::string, int64_t>& dims, const LoadOptions& options) {
  if (options.randomWeights) return randomParams(params, options.seed);
  if (options.weights.empty())
    throw Error(fmt::format("{}: no weights given: pass a .safetensors file or index.json "
                            "(--weights), or ask for random weights (--random-weights)",
                            package));
  try {
    std::vector<weights::ParamSpec> specs;
    for (const auto& p : params) specs.push_back({p.path, p.shape, p.dtype});
    Opened opened = openCheckpoint(package, options.weights, dims);
    weights::Checkpoint& checkpoint = opened.checkpoint;
    std::filesystem::path bindingsPath = std::filesystem::path(package) / "bindings.json";
    weights::BindOptions bindOptions;
    if (options.convertDTypes && !specs.empty()) bindOptions.convertTo = specs.front().dtype;
    // The bound weights keep the checkpoint's mapping (and converted copies) alive.
    auto bound = std::make_shared<weights::BoundWeights>(
        weights::bind(specs, weights::Bindings::load(bindingsPath), checkpoint, bindOptions));
    std::vector<ParamBytes> out;
    for (const auto& p : params) {
      const weights::BoundTensor& b = bound->at(p.path);
      requireFinite(options.weights, p, b);
      out.push_back({b.data, bound});
      if (options.dequantize || p.dtype != DType::F32 || p.shape.size() != 2) continue;
      // A bf16 or f16 checkpoint converted for an f32 model: its own bytes.
      if (b.converted && (b.storedDType == DType::BF16 || b.storedDType == DType::F16)) {
        if (const weights::TensorInfo* t = bound->checkpoint().find(b.checkpointName)) {
          out.back().storage = b.storedDType == DType::BF16 ? Storage::BF16 : Storage::F16;
          out.back().stored = t->data;
          out.back().storedOwner = bound;
        }
        continue;
      }
      auto stored = opened.stored.find(b.checkpointName);
      if (stored == opened.stored.end()) continue;
      auto rowBytes = storageRowBytes(stored->second.storage, p.shape[1]);
      if (!rowBytes || stored->second.bytes.size() != static_cast<size_t>(p.shape[0] * *rowBytes)) continue;
      out.back().storage = stored->second.storage;
      out.back().stored = stored->second.bytes;
      out.back().storedOwner = stored->second.owner;
    }
    return out;
  } catch (const std::exception& e) {
    // The library's hint names its own option; say what a loader user sets.
    std::string message = e.what();
    for (size_t at; (at = message.find("set BindOptions.convertTo = ")) != std::string::npos;) {
      size_t end = message.find(' ', at + 28);
      message.replace(at, end - at, "convert them (linnet --convert, LoadOptions::convertDTypes)");
    }
    throw Error(message);
  }
}

}  // namespace

std::vector<ParamBytes> bindParams(const std::string& package, const std::vector<ParamInfo>& params,
                                   const std::map<std::string, int64_t>& dims, const LoadOptions& options) {
  std::vector<ParamBytes> bytes = bindBase(package, params, dims, options);
  if (!options.adapter.empty()) mergeAdapter(options.adapter, package, params, bytes);
  return bytes;
}

bool drawsRandomApart(const LoadOptions& options) { return options.randomWeights && options.adapter.empty(); }

Progress::Progress(const char* what, size_t total) : what_(what), total_(total), on_(isatty(2) && total > 0) {}

void Progress::step() {
  if (!on_) return;
  ++done_;
  int width = 30, filled = static_cast<int>(width * done_ / total_);
  fmt::print(stderr, "\r{} [{}{}] {}/{}", what_, std::string(filled, '#'), std::string(width - filled, ' '), done_,
             total_);
  if (done_ == total_) fmt::print(stderr, "\r{}\r", std::string(std::string(what_).size() + width + 24, ' '));
}

}  // namespace linnet::nest
