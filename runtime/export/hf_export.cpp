#include "export/hf_export.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <filesystem>
#include <map>

#include "common/units.h"
#include "export/hf_config.h"
#include "export/hf_output_folder.h"
#include "export/hf_safetensors.h"
#include "export/hf_tokenizer.h"
#include "export/model_facts.h"
#include "export/param_values.h"
#include "export/rope_scaling.h"
#include "gguf/gguf.h"
#include "nest/model_config.h"
#include "nest/params.h"
#include "weights/bindings.h"
#include "weights/convert.h"

namespace linnet::exporter {

namespace fs = std::filesystem;
using nest::Error;

namespace {

// A GGUF source storing some tensor in a block format: its values are
// dequantized, so the default is f32 rather than an already rounded dtype.
bool quantizedGguf(const std::string& weights) {
  if (!weights.ends_with(".gguf")) return false;
  gguf::File file = gguf::File::open(weights);
  for (const gguf::TensorInfo& t : file.tensors())
    if (t.type != gguf::GgmlType::F32 && t.type != gguf::GgmlType::F16 && t.type != gguf::GgmlType::BF16) return true;
  return false;
}

struct PlannedHf {
  std::vector<HfTensor> tensors;
  std::vector<std::size_t> params;  // tensors[k] holds facts.params[params[k]]
  bool tied = false;                // some checkpoint tensor is bound by two params
};

// One checkpoint tensor per bound name, in the params' order; a name bound
// twice (the tied head) is written once.
PlannedHf planTensors(const ModelFacts& facts, const weights::Bindings& bindings, DType dtype) {
  PlannedHf plan;
  std::vector<std::string> unbound, clashes;
  std::map<std::string, std::size_t> byName;
  for (std::size_t k = 0; k < facts.params.size(); ++k) {
    const nest::ParamInfo& p = facts.params[k];
    auto name = bindings.find(p.path);
    if (!name) {
      unbound.push_back(p.path);
      continue;
    }
    if (auto it = byName.find(*name); it != byName.end()) {
      const nest::ParamInfo& first = facts.params[plan.params[it->second]];
      if (first.shape != p.shape || first.dtype != p.dtype)
        clashes.push_back(fmt::format("{} and {} are both bound to {} but have shapes {} and {}", first.path, p.path,
                                      *name, weights::shapeString(first.shape), weights::shapeString(p.shape)));
      plan.tied = true;
      continue;
    }
    byName.emplace(*name, plan.tensors.size());
    plan.tensors.push_back({*name, isFloat(p.dtype) ? dtype : p.dtype, p.shape});
    plan.params.push_back(k);
  }
  if (!unbound.empty())
    throw Error(fmt::format("{}: {} of the model's {} parameters have no checkpoint name in {}: {}; add them "
                            "(a `*` stands for a layer index)",
                            facts.package, unbound.size(), facts.params.size(), bindings.source(),
                            fmt::join(unbound, ", ")));
  if (!clashes.empty()) throw Error(fmt::format("{}: {}", bindings.source(), fmt::join(clashes, "; ")));
  return plan;
}

bool hasAttentionBias(const ModelFacts& facts) {
  for (const nest::ParamInfo& p : facts.params)
    for (const char* bias : {"q_proj.bias", "k_proj.bias", "v_proj.bias"})
      if (p.path.ends_with(bias)) return true;
  return false;
}

}  // namespace

const std::vector<std::string>& hfDtypeNames() {
  static const std::vector<std::string> names = {"bf16", "f16", "f32"};
  return names;
}

std::optional<DType> hfDtypeNamed(std::string_view n) {
  if (n == "bf16") return DType::BF16;
  if (n == "f16") return DType::F16;
  if (n == "f32") return DType::F32;
  return std::nullopt;
}

HfExportResult exportHf(const HfExportOptions& o, const std::function<void(const std::string&)>& log) {
  const auto t0 = std::chrono::steady_clock::now();
  auto note = [&](const std::string& s) {
    if (log) log(s);
  };

  // --- The output and the source: refused first. ---------------------------
  checkOutputFolder(o.output, o.force, "export hf");
  requireWeightsSource(o.package, o.load, "export hf");
  if (o.shardBytes == 0) throw Error("export hf: --shard-size must be at least one byte");
  // A Hugging Face folder as --weights: its checkpoint, its config.json checked.
  const nest::LoadOptions load = o.load.randomWeights ? o.load : nest::prepareLoad(o.package, o.load);

  // --- The model, its architecture, its names. -----------------------------
  ModelFacts facts = instantiate(o.package, load);
  const nest::CardConfig card = nest::readCardConfig(o.package);
  const std::optional<nest::Family> family = nest::cardFamily(o.package, card);
  if (!family)
    throw Error(fmt::format("{}/nest.toml: [model] names no family, so transformers' architecture for the model is "
                            "unknown (a family descriptor's [gguf.config_defaults] gives it: docs/nest.md)",
                            o.package));
  const fs::path bindingsPath = fs::path(o.package) / "bindings.json";
  if (!fs::exists(bindingsPath))
    throw Error(fmt::format("{}: no bindings.json, so the checkpoint names of the model's parameters are unknown",
                            o.package));
  const weights::Bindings bindings = weights::Bindings::load(bindingsPath);

  DType dtype = DType::F32;
  if (o.dtype) dtype = *o.dtype;
  else if (!load.randomWeights && quantizedGguf(load.weights)) dtype = DType::F32;
  else
    for (const nest::ParamInfo& p : facts.params)
      if (isFloat(p.dtype)) {
        dtype = p.dtype;
        break;
      }
  PlannedHf plan = planTensors(facts, bindings, dtype);

  std::vector<std::string> missing;
  HfConfigFacts configFacts;
  configFacts.dtype = dtype;
  configFacts.tiedEmbeddings = plan.tied;
  configFacts.attentionBias = hasAttentionBias(facts);
  configFacts.ropeScaling = llama3RopeScaling(facts, missing);
  if (!missing.empty())
    throw Error(fmt::format("{}: the rope scaling needs {}, which the model does not have", o.package,
                            fmt::join(missing, ", ")));

  // --- Tokenizer and configs (every refusal before writing). --------------
  std::optional<HfTokenizerFiles> tokenizer = hfTokenizerFiles(o.tokenizer, o.load.weights, o.package, note);
  if (tokenizer) {
    configFacts.bosId = tokenizer->bosId;
    configFacts.eosId = tokenizer->eosId;
  } else {
    note("warning: no tokenizer (--tokenizer tokenizer.json, a folder or a .gguf): the folder has none, so "
         "AutoTokenizer cannot load it; transformers runs it on token ids");
  }
  const std::string config = hfConfigJson(facts, card, *family, configFacts).dump(2) + "\n";
  const std::string generation = hfGenerationConfig(o.package, configFacts.bosId, configFacts.eosId).dump(2) + "\n";

  std::vector<HfShard> shards = planShards(plan.tensors, o.shardBytes);
  std::vector<std::string> headers;
  std::uint64_t tensorBytes = 0, total = config.size() + generation.size();
  for (const HfShard& s : shards) {
    headers.push_back(safetensorsHeader(plan.tensors, s));
    total += headers.back().size() + s.dataBytes;
    tensorBytes += s.dataBytes;
  }
  const std::string index = shards.size() > 1 ? shardIndex(plan.tensors, shards).dump(2) + "\n" : "";
  total += index.size();
  if (tokenizer)
    for (const auto& [name, bytes] : tokenizer->files) total += bytes.size();
  fs::path out(o.output);
  if (out.filename().empty()) out = out.parent_path();
  const fs::path parent = out.parent_path().empty() ? fs::path(".") : out.parent_path();
  std::error_code ec;
  fs::space_info space = fs::space(parent, ec);
  if (!ec && space.available < total + (16u << 20))
    throw Error(fmt::format("{}: the folder needs {}, but {} has {} free", o.output, bytesText(total),
                            parent.string(), bytesText(space.available)));

  // Binding checks every tensor (all problems together) before anything is written.
  ParamValues values(facts, load);

  // --- Writing. ------------------------------------------------------------
  OutputFolder folder(out);
  nest::Progress progress("linnet: writing tensors", plan.tensors.size());
  std::vector<std::byte> converted;
  HfExportResult r;
  for (std::size_t s = 0; s < shards.size(); ++s) {
    SyncedFile file(folder.file(shards[s].file));
    file.write(headers[s]);
    for (std::size_t k : shards[s].tensors) {
      progress.step();
      const HfTensor& t = plan.tensors[k];
      const nest::ParamInfo& p = facts.params[plan.params[k]];
      std::span<const std::byte> elements = values.elements(plan.params[k]);
      if (p.dtype == t.dtype) {
        file.write(elements);
        continue;
      }
      converted.resize(t.bytes());
      weights::convertElements(p.dtype, elements, t.dtype, converted);  // round to nearest even
      file.write(converted);
    }
    file.close();
    r.files.push_back(shards[s].file);
  }
  if (!index.empty()) {
    folder.writeFile("model.safetensors.index.json", index);
    r.files.push_back("model.safetensors.index.json");
  }
  folder.writeFile("config.json", config);
  folder.writeFile("generation_config.json", generation);
  r.files.push_back("config.json");
  r.files.push_back("generation_config.json");
  if (tokenizer)
    for (const auto& [name, bytes] : tokenizer->files) {
      folder.writeFile(name, bytes);
      r.files.push_back(name);
    }
  folder.commit();

  r.path = out.string();
  r.tensors = plan.tensors.size();
  r.shards = shards.size();
  r.tensorBytes = tensorBytes;
  r.bytes = total;
  r.dtype = dtype;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace linnet::exporter
