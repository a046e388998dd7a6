#include "export/gguf_export.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "common/output_file.h"
#include "common/units.h"
#include "export/gguf_hyperparameters.h"
#include "export/gguf_writer.h"
#include "export/model_facts.h"
#include "export/param_values.h"
#include "export/quantize.h"
#include "export/rope_scaling.h"
#include "export/tokenizer_source.h"
#include "gguf/architecture.h"
#include "nest/families.h"
#include "nest/conventions.h"
#include "nest/params.h"
#include "nest/tensor.h"
#include "weights/bindings.h"

namespace linnet::exporter {

namespace fs = std::filesystem;
using gguf::GgmlType;
using gguf::Value;
using nest::Error;

namespace {

struct TypeName {
  const char* name;
  GgmlType type;
  std::uint32_t fileType;  // llama_ftype: general.file_type
};

constexpr TypeName kTypeNames[] = {
    {"f32", GgmlType::F32, 0},    {"f16", GgmlType::F16, 1},   {"bf16", GgmlType::BF16, 32},
    {"q8_0", GgmlType::Q8_0, 7},  {"q4_0", GgmlType::Q4_0, 2}, {"q4_k", GgmlType::Q4_K, 15},
    {"q6_k", GgmlType::Q6_K, 18},
};

// llama_ftype of a file mostly in `t` (the *_M mixes for K-quants, as
// llama-quantize names Q4_K); nullopt for a type with none.
std::optional<std::uint32_t> fileTypeOf(GgmlType t) {
  switch (t) {
    case GgmlType::F32: return 0;
    case GgmlType::F16: return 1;
    case GgmlType::Q4_0: return 2;
    case GgmlType::Q4_1: return 3;
    case GgmlType::Q8_0: return 7;
    case GgmlType::Q5_0: return 8;
    case GgmlType::Q5_1: return 9;
    case GgmlType::Q2_K: return 10;
    case GgmlType::Q3_K: return 12;
    case GgmlType::Q4_K: return 15;
    case GgmlType::Q5_K: return 17;
    case GgmlType::Q6_K: return 18;
    case GgmlType::BF16: return 32;
    default: return std::nullopt;
  }
}

std::string shapeText(const std::vector<std::int64_t>& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

GgmlType plainType(DType d) {
  switch (d) {
    case DType::BF16: return GgmlType::BF16;
    case DType::F16: return GgmlType::F16;
    default: return GgmlType::F32;
  }
}

// What llama.cpp quantizes: 2-D and larger `.weight`s other than norms
// (llama-quant.cpp's tensor_allows_quantization; convert_hf_to_gguf.py
// keeps 1-D tensors and norms in F32 too).
bool quantizable(const std::string& name, const std::vector<std::int64_t>& shape) {
  return shape.size() >= 2 && name.ends_with(".weight") && name.find("_norm.weight") == std::string::npos;
}

// The requested type, or llama-quantize's fallback (tensor_type_fallback)
// when a row is not whole blocks of it.
GgmlType fitType(GgmlType want, std::int64_t rowLength) {
  auto fits = [&](GgmlType t) { return rowLength % gguf::typeTraits(t).blockSize == 0; };
  if (fits(want)) return want;
  GgmlType fallback = want == GgmlType::Q4_K ? GgmlType::Q5_0 : want == GgmlType::Q6_K ? GgmlType::Q8_0 : GgmlType::F16;
  return fits(fallback) ? fallback : GgmlType::F16;
}

std::string readText(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Planned {
  std::size_t param = SIZE_MAX;  // into the params; SIZE_MAX: rope_freqs
  std::string name;              // llama.cpp's: "blk.3.attn_q.weight"
  std::string hf;                // the Hugging Face name it is bound as
  std::vector<std::int64_t> shape;
  GgmlType type = GgmlType::F32;
  const gguf::TensorInfo* stored = nullptr;  // the GGUF source's tensor
  bool omitted = false;                      // a tied output head: the embedding's tensor again
  const gguf::PermutedTensor* permuted = nullptr;  // rows in llama.cpp's rope order
  std::int64_t permuteHeads = 0;                   // ... for this many heads
  double shift = 0;                                // stored as value + shift (Gemma's norms)
};

// Each parameter's llama.cpp name: bindings.json gives its Hugging Face
// name (none: its own path), the family's descriptor the GGUF name. A
// parameter bound to the tensor of one before it (a tied output head) is
// left out: llama.cpp reuses token_embd.weight when output.weight is absent.
std::vector<Planned> planTensors(const ModelFacts& facts, const nest::Family& family,
                                 const std::optional<weights::Bindings>& bindings) {
  std::vector<Planned> plan;
  std::vector<std::string> unnamed;
  for (std::size_t k = 0; k < facts.params.size(); ++k) {
    const nest::ParamInfo& p = facts.params[k];
    std::string hf = bindings ? bindings->find(p.path).value_or(p.path) : p.path;
    std::optional<std::string> name = family.gguf.ggufName(hf);
    if (!name) {
      unnamed.push_back(fmt::format("{} {}{}", p.path, shapeText(p.shape), hf == p.path ? "" : " (bound to " + hf + ")"));
      continue;
    }
    bool tied = std::any_of(plan.begin(), plan.end(), [&](const Planned& t) { return t.hf == hf; });
    plan.push_back({k, *name, hf, p.shape, GgmlType::F32, nullptr, tied, family.gguf.permutedTensor(*name), 0,
                    family.gguf.shiftOf(hf)});
  }
  if (!unnamed.empty())
    throw Error(fmt::format("{}: {} of the model's {} parameters have no llama.cpp name in the {} family's "
                            "descriptor (nest/families/{}.toml [gguf]): {}",
                            facts.package, unnamed.size(), facts.params.size(), family.name, family.name,
                            fmt::join(unnamed, "; ")));
  return plan;
}

std::vector<float> toF32(std::span<const std::byte> bytes, DType dtype) {
  std::size_t size = byteSize(dtype);
  std::vector<float> out(bytes.size() / size);
  for (std::size_t k = 0; k < out.size(); ++k) out[k] = static_cast<float>(nest::loadElement(dtype, bytes.data() + k * size));
  return out;
}

}  // namespace

const std::vector<std::string>& ggufTypeNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const TypeName& t : kTypeNames) n.push_back(t.name);
    return n;
  }();
  return names;
}

std::optional<GgmlType> ggufTypeNamed(std::string_view name) {
  for (const TypeName& t : kTypeNames)
    if (name == t.name) return t.type;
  return std::nullopt;
}

std::vector<std::byte> permuteRowBytes(std::span<const std::byte> in, std::int64_t count, std::size_t rowBytes,
                                       std::int64_t heads) {
  if (heads <= 0 || count % (2 * heads) != 0 || in.size() != static_cast<std::size_t>(count) * rowBytes)
    throw std::invalid_argument(fmt::format("cannot permute {} rows for {} heads", count, heads));
  const std::int64_t half = count / heads / 2;
  std::vector<std::byte> out(in.size());
  for (std::int64_t h = 0; h < heads; ++h)
    for (std::int64_t j = 0; j < half; ++j)
      for (std::int64_t t = 0; t < 2; ++t) {
        std::int64_t to = h * 2 * half + j * 2 + t, from = h * 2 * half + t * half + j;
        std::memcpy(out.data() + to * rowBytes, in.data() + from * rowBytes, rowBytes);
      }
  return out;
}

std::vector<float> llama3RopeFactors(double theta, std::int64_t dim, double factor, double lowFreqFactor,
                                     double highFreqFactor, double originalContext) {
  // torch's float32 arithmetic, with Python's scalars taken as float32.
  const float lowWavelen = static_cast<float>(originalContext / lowFreqFactor);
  const float highWavelen = static_cast<float>(originalContext / highFreqFactor);
  const float twoPi = static_cast<float>(2 * M_PI);
  std::vector<float> out;
  for (std::int64_t i = 0; i < dim; i += 2) {
    float exponent = static_cast<float>(i) / static_cast<float>(dim);
    float freq = 1.0f / std::pow(static_cast<float>(theta), exponent);
    float wavelen = twoPi / freq;
    if (wavelen < highWavelen) {
      out.push_back(1.0f);
    } else if (wavelen > lowWavelen) {
      out.push_back(static_cast<float>(factor));
    } else {
      float smooth = (static_cast<float>(originalContext) / wavelen - static_cast<float>(lowFreqFactor)) /
                     static_cast<float>(highFreqFactor - lowFreqFactor);
      out.push_back(1.0f / ((1.0f - smooth) / static_cast<float>(factor) + smooth));
    }
  }
  return out;
}

GgufExportResult exportGguf(const GgufExportOptions& o, const std::function<void(const std::string&)>& log) {
  const auto t0 = std::chrono::steady_clock::now();
  auto note = [&](const std::string& s) {
    if (log) log(s);
  };

  // --- The output: refused first, before anything is read. ---------------
  if (o.output.empty()) throw Error("export gguf: no output file: pass -o FILE.gguf");
  const fs::path out(o.output);
  if (fs::is_directory(out)) throw Error(fmt::format("{} is a folder; -o names the .gguf file to write", o.output));
  if (auto why = unwritableOutput(out)) throw Error(*why);
  if (fs::exists(out) && !o.force)
    throw Error(fmt::format("{}: exists; pass --force to replace it (it is replaced only once the new file is "
                            "complete)",
                            o.output));
  const fs::path dir = out.parent_path().empty() ? fs::path(".") : out.parent_path();
  if (!fs::is_directory(dir)) throw Error(fmt::format("{}: no folder {} to write it in", o.output, dir.string()));
  requireWeightsSource(o.package, o.load, "export gguf");

  // --- The model and what llama.cpp calls everything in it. --------------
  ModelFacts facts = instantiate(o.package, o.load);
  const nest::CardConfig card = nest::readCardConfig(o.package);
  const std::optional<nest::Family> family = nest::cardFamily(o.package, card);
  if (!family || family->ggufArchitectures.empty())
    throw Error(fmt::format("{}/nest.toml: [model] names {}, so llama.cpp's names for the model's tensors are "
                            "unknown (a family descriptor's [gguf] table says them: docs/nest.md)",
                            o.package, family ? "a family with no GGUF architecture" : "no family"));
  const std::string arch = family->ggufArchitectures.front();
  fs::path bindingsPath = fs::path(o.package) / "bindings.json";
  std::optional<weights::Bindings> bindings;
  if (fs::exists(bindingsPath)) bindings = weights::Bindings::load(bindingsPath);
  std::vector<Planned> plan = planTensors(facts, *family, bindings);

  std::vector<std::string> problems;
  const std::vector<GgufEntry> hyper = ggufHyperparameters(facts, card, *family, arch, problems);
  auto hyperInt = [&](const std::string& key) -> std::int64_t {
    const GgufEntry* e = findEntry(hyper, key);
    return e ? e->value.asInt().value_or(0) : 0;
  };
  std::vector<std::string> missing;
  auto need = [&](const char* generic) -> std::int64_t {
    auto v = facts.dim(generic);
    if (!v) missing.push_back(fmt::format("the generic {}", generic));
    return v.value_or(0);
  };
  const std::int64_t vocab = need(nest::kVocabGeneric), context = need(nest::kContextGeneric);
  // The head count of each permuted tensor's rows: its first head key written.
  for (Planned& t : plan) {
    if (!t.permuted) continue;
    for (const std::string& key : t.permuted->headKeys)
      if (!t.permuteHeads) t.permuteHeads = hyperInt(gguf::withArchitecture(key, arch));
    if (t.permuteHeads <= 0)
      problems.push_back(fmt::format("{} is written in llama.cpp's rope order, but none of {} is written to give its "
                                     "head count",
                                     t.name, fmt::join(t.permuted->headKeys, ", ")));
  }
  // Which rope tables the sources compute with (nest.toml's [replace] may swap them).
  std::optional<std::vector<float>> ropeFactors;
  if (auto s = llama3RopeScaling(facts, missing); s && missing.empty()) {
    const GgufEntry* base = findEntry(hyper, arch + ".rope.freq_base");
    const double theta = base ? base->value.asFloat().value_or(0) : 0.0;
    ropeFactors = llama3RopeFactors(theta, hyperInt(arch + ".rope.dimension_count"), s->factor, s->lowFreqFactor,
                                    s->highFreqFactor, s->originalContext);
  }
  if (!missing.empty())
    problems.push_back(fmt::format("the GGUF metadata needs {}, which the model does not have",
                                   fmt::join(missing, ", ")));
  if (!problems.empty())
    throw Error(fmt::format("{}: cannot write the {} family's GGUF metadata: {}", o.package, family->name,
                            fmt::join(problems, "; ")));

  // --- The tokenizer. ------------------------------------------------------
  const bool ggufSource = !o.load.randomWeights && o.load.weights.ends_with(".gguf");
  std::optional<gguf::File> source;
  if (ggufSource) source = gguf::File::open(o.load.weights);
  std::string tokenizerPath = o.tokenizer;
  if (tokenizerPath.empty() && source && source->metadata().contains("tokenizer.ggml.model"))
    tokenizerPath = o.load.weights;
  std::optional<ExportTokenizer> tokenizer;
  if (!tokenizerPath.empty()) {
    tokenizer = loadExportTokenizer(tokenizerPath);
    if (std::size_t padded = padVocabulary(*tokenizer, static_cast<std::size_t>(vocab)))
      note(fmt::format("note: the tokenizer has {} tokens for Vocab = {}: ids {}..{} are written as [PADn] tokens "
                       "of type UNUSED, as convert_hf_to_gguf.py does",
                       vocab - padded, vocab, vocab - padded, vocab - 1));
    fs::path cardTemplate = fs::path(o.package) / "chat_template.jinja";
    if (!tokenizer->data.chatTemplate && fs::exists(cardTemplate)) {
      tokenizer->data.chatTemplate = readText(cardTemplate);
      note(fmt::format("note: the chat template is the card's {}", cardTemplate.string()));
    }
  } else {
    note("warning: no tokenizer (--tokenizer tokenizer.json or a .gguf): the file gets tokenizer.ggml.model = "
         "\"none\"; llama.cpp loads it and runs token ids, but cannot turn text into tokens");
  }
  if (source)
    if (auto c = source->metadata().findInt(arch + ".context_length"); c && *c != context)
      note(fmt::format("note: {}.context_length = {} (the model's {}); the source says {}: --set {}={} keeps it", arch,
                       context, nest::kContextGeneric, *c, nest::kContextGeneric, *c));

  // --- Sources and types. -------------------------------------------------
  ParamValues paramValues(facts, o.load);

  // A GGUF source's tensors, found through its own family's names; those
  // only its dequantized values give (shifted norms) are taken as bound.
  std::optional<nest::Family> sourceFamily;
  if (source) sourceFamily = nest::ggufFamily(o.package, source->architecture());
  std::size_t fallbacks = 0;
  for (Planned& t : plan) {
    const nest::ParamInfo& p = facts.params[t.param];
    if (sourceFamily)
      if (auto g = sourceFamily->gguf.ggufName(t.hf); g && sourceFamily->gguf.shiftOf(t.hf) == 0)
        t.stored = source->find(*g);
    if (t.stored && t.stored->shape != p.shape) t.stored = nullptr;  // bound otherwise (cannot happen after bind)
    const std::int64_t row = t.shape.back();
    if (o.type) {
      t.type = quantizable(t.name, t.shape) ? fitType(*o.type, row) : GgmlType::F32;
      if (quantizable(t.name, t.shape) && t.type != *o.type && !t.omitted) {
        ++fallbacks;
        note(fmt::format("note: {} {}: rows of {} are not whole {} blocks; written as {} (llama-quantize's fallback)",
                         t.name, shapeText(t.shape), row, gguf::typeName(*o.type), gguf::typeName(t.type)));
      }
    } else if (t.stored) {
      t.type = t.stored->type;
    } else {
      t.type = quantizable(t.name, t.shape) ? plainType(p.dtype) : GgmlType::F32;
    }
  }
  if (ropeFactors)
    plan.insert(plan.begin(), Planned{SIZE_MAX, "rope_freqs.weight", "", {static_cast<std::int64_t>(ropeFactors->size())},
                                      GgmlType::F32, nullptr, false, nullptr, 0, 0});

  // --- Metadata. ----------------------------------------------------------
  GgufWriter w;
  auto u32 = [](std::int64_t v) { return Value{static_cast<std::uint32_t>(v)}; };
  w.add("general.architecture", Value{arch});
  w.add("general.type", Value{std::string("model")});
  w.add("general.name", Value{facts.title.empty() ? facts.name : facts.title});
  if (!facts.license.empty()) w.add("general.license", Value{facts.license});
  for (const GgufEntry& e : hyper) w.add(e.key, e.value);
  std::map<GgmlType, std::size_t> counts;
  for (const Planned& t : plan)
    if (!t.omitted && quantizable(t.name, t.shape)) ++counts[t.type];
  std::uint32_t fileType = 0;
  if (o.type) {
    for (const TypeName& n : kTypeNames)
      if (n.type == *o.type) fileType = n.fileType;
  } else if (auto ft = source ? source->metadata().findInt("general.file_type") : std::nullopt) {
    fileType = static_cast<std::uint32_t>(*ft);
  } else if (!counts.empty()) {
    auto most = std::max_element(counts.begin(), counts.end(), [](auto& a, auto& b) { return a.second < b.second; });
    fileType = fileTypeOf(most->first).value_or(0);
  }
  w.add("general.file_type", u32(fileType));
  w.add("general.quantization_version", u32(2));
  if (tokenizer) addTokenizerMetadata(w, *tokenizer);
  else w.add("tokenizer.ggml.model", Value{std::string("none")});

  for (const Planned& t : plan)
    if (!t.omitted) w.addTensor(t.name, t.type, t.shape);

  std::error_code ec;
  fs::space_info space = fs::space(dir, ec);
  if (!ec && space.available < w.fileSize() + (16u << 20))
    throw Error(fmt::format("{}: the file needs {}, but {} has {} free", o.output, bytesText(w.fileSize()),
                            dir.string(), bytesText(space.available)));

  // --- Writing. ------------------------------------------------------------
  const int threads = o.threads > 0 ? o.threads : std::max(1u, std::thread::hardware_concurrency());
  nest::Progress progress("linnet: writing tensors", plan.size());
  w.open(out);
  for (const Planned& t : plan) {
    progress.step();
    if (t.param == SIZE_MAX) {  // rope_freqs.weight
      w.writeTensor(std::as_bytes(std::span<const float>(*ropeFactors)));
      continue;
    }
    if (t.omitted) continue;
    const nest::ParamInfo& p = facts.params[t.param];
    // The param's elements, in the model's (Hugging Face) layout.
    std::span<const std::byte> elements = paramValues.elements(t.param);
    const std::int64_t rows = t.shape[0];
    const std::int64_t heads = t.permuteHeads;
    const std::int64_t rowLength = t.shape.back();
    auto permuted = [&](std::span<const std::byte> bytes) -> std::vector<std::byte> {
      if (!heads) return {bytes.begin(), bytes.end()};
      return permuteRowBytes(bytes, rows, bytes.size() / static_cast<std::size_t>(rows), heads);
    };
    const bool wholeRows = t.shape.size() >= 2 || gguf::typeTraits(t.type).blockSize == 1;
    if (t.stored && t.stored->type == t.type && wholeRows) {
      gguf::StoredTensor st = *gguf::storedAsHuggingFace(*source, sourceFamily->gguf, *t.stored);
      w.writeTensor(permuted(st.data));  // the source's own blocks: bit-exact
      continue;
    }
    if (!t.stored && plainType(p.dtype) == t.type && t.shift == 0) {
      w.writeTensor(permuted(elements));  // the bound elements as they are
      continue;
    }
    std::vector<float> values;
    if (t.stored) {
      gguf::StoredTensor st = *gguf::storedAsHuggingFace(*source, sourceFamily->gguf, *t.stored);
      values.resize(t.stored->elementCount);
      gguf::dequantize(st.type, st.data, values);
    } else {
      values = toF32(elements, p.dtype);
    }
    if (t.shift != 0)
      for (float& v : values) v += static_cast<float>(t.shift);
    std::vector<std::byte> f32 = permuted(std::as_bytes(std::span<const float>(values)));
    std::memcpy(values.data(), f32.data(), f32.size());
    std::vector<std::byte> encoded(rowBytes(t.type, rowLength) * (values.size() / static_cast<std::size_t>(rowLength)));
    encodeRows(t.type, values, rowLength, encoded, threads);
    w.writeTensor(encoded);
  }
  w.finish();

  GgufExportResult r;
  r.path = o.output;
  r.bytes = w.fileSize();
  r.tensors = w.tensors().size();
  for (const PlannedTensor& t : w.tensors()) ++r.types[gguf::typeName(t.type)];
  r.fallbacks = fallbacks;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace linnet::exporter
