#include "export/hf_config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "nest/conventions.h"
#include "nest/text.h"

namespace linnet::exporter {

using nest::Error;
using ojson = nlohmann::ordered_json;

namespace {

// The keys every family's config takes the shape from; the card's [config]
// table must map them (from its generics).
constexpr const char* kShapeKeys[] = {"vocab_size",          "hidden_size",         "intermediate_size",
                                      "num_hidden_layers",   "num_attention_heads", "num_key_value_heads"};

void setDotted(ojson& j, const std::string& key, ojson value) {
  ojson* at = &j;
  std::size_t start = 0;
  for (std::size_t dot; (dot = key.find('.', start)) != std::string::npos; start = dot + 1) {
    ojson& next = (*at)[key.substr(start, dot - start)];
    if (!next.is_object()) next = ojson::object();
    at = &next;
  }
  (*at)[key.substr(start)] = std::move(value);
}

void eraseDotted(ojson& j, const std::string& key) {
  std::size_t dot = key.find('.');
  if (dot == std::string::npos) {
    j.erase(key);
    return;
  }
  auto it = j.find(key.substr(0, dot));
  if (it != j.end() && it->is_object()) eraseDotted(*it, key.substr(dot + 1));
}

// A constant as config.json writes it: positions as integers, the rest as floats.
ojson constantValue(const std::string& key, double v) {
  if (key.ends_with("max_position_embeddings") && std::trunc(v) == v) return static_cast<std::int64_t>(v);
  return v;
}

}  // namespace

std::string torchDtypeName(DType d) {
  switch (d) {
    case DType::BF16: return "bfloat16";
    case DType::F16: return "float16";
    case DType::F32: return "float32";
    default: throw Error(fmt::format("no torch dtype for {}", name(d)));
  }
}

ojson hfConfigJson(const ModelFacts& facts, const nest::CardConfig& card, const nest::Family& family,
                   const HfConfigFacts& extra) {
  const nlohmann::json& fixed = family.gguf.configDefaults;
  if (!fixed.contains("architectures"))
    throw Error(fmt::format("{}: the {} family's descriptor gives no config.json architectures "
                            "(nest/families/{}.toml [gguf.config_defaults]), so transformers could not load the folder",
                            facts.package, family.name, family.name));
  if (!card.config)
    throw Error(fmt::format("{}/nest.toml: no [config] table, so the config.json keys of the model's generics are "
                            "unknown; add one mapping each generic to its key (docs/nest.md)",
                            facts.package));
  std::vector<std::string> missing;
  ojson c = ojson::object();
  for (const auto& [key, value] : fixed.items()) setDotted(c, key, ojson(value));
  // The card's table, in reverse.
  for (const nest::KeyMapping& m : card.config->mappings) {
    const std::string& key = m.keys.front();
    if (key.find(' ') != std::string::npos) continue;  // an expression ("hidden_size / num_attention_heads")
    if (m.isConstant()) {
      if (auto v = facts.constant(m.name)) setDotted(c, key, constantValue(key, *v));
      else missing.push_back(fmt::format("the constant {} ([config] maps it to {})", m.name, key));
    } else if (auto d = facts.dim(m.name)) {
      setDotted(c, key, *d);
    } else if (facts.dtypes.count(m.name)) {
      setDotted(c, key, torchDtypeName(extra.dtype));
    } else {
      missing.push_back(fmt::format("the generic {} ([config] maps it to {})", m.name, key));
    }
  }
  // A dotted expect key inside an object nothing else wrote checks another
  // layout of the same setting (transformers 5's rope_parameters beside 4's
  // rope_scaling): written, it would be a partial object of its own.
  for (const auto& [key, value] : card.config->expected) {
    size_t dot = key.rfind('.');
    if (dot != std::string::npos) {
      std::string parent = "/" + key.substr(0, dot);
      std::replace(parent.begin(), parent.end(), '.', '/');
      if (!c.contains(ojson::json_pointer(parent))) continue;
    }
    setDotted(c, key, ojson(value));
  }
  for (const char* key : kShapeKeys)
    if (!c.contains(key)) missing.push_back(fmt::format("config.json's {} (no [config] generic maps to it)", key));
  auto need = [&](const char* generic) -> std::int64_t {
    auto v = facts.dim(generic);
    if (!v) missing.push_back(fmt::format("the generic {}", generic));
    return v.value_or(0);
  };
  const std::int64_t hidden = need("H"), heads = need("Heads"), context = need(nest::kContextGeneric),
                     vocab = need(nest::kVocabGeneric);
  if (!missing.empty())
    throw Error(fmt::format("{}: config.json for {} needs {}, which the model does not give", facts.package,
                            fixed["architectures"].dump(), fmt::join(missing, "; ")));
  if (heads <= 0 || hidden % heads != 0)
    throw Error(fmt::format("{}: H = {} is not a whole number of Heads = {}", facts.package, hidden, heads));

  for (const std::string& key : card.config->absent) eraseDotted(c, key);
  if (!extra.ropeScaling) c.erase("rope_scaling");
  c["vocab_size"] = vocab;
  c["max_position_embeddings"] = context;
  if (!c.contains("head_dim")) c["head_dim"] = hidden / heads;
  if (const auto& s = extra.ropeScaling) {
    ojson& r = c["rope_scaling"];
    if (!r.is_object()) r = ojson::object();
    r["rope_type"] = "llama3";
    r["factor"] = s->factor;
    r["low_freq_factor"] = s->lowFreqFactor;
    r["high_freq_factor"] = s->highFreqFactor;
    r["original_max_position_embeddings"] = static_cast<std::int64_t>(s->originalContext);
  }
  c["attention_bias"] = extra.attentionBias;
  c["mlp_bias"] = false;
  c["tie_word_embeddings"] = extra.tiedEmbeddings;
  c["torch_dtype"] = torchDtypeName(extra.dtype);
  if (extra.bosId) c["bos_token_id"] = *extra.bosId;
  if (extra.eosId) c["eos_token_id"] = *extra.eosId;
  // No padding id said: null, not a config class's default (Phi3Config's
  // 32000, which a smaller vocabulary cannot hold).
  if (!c.contains("pad_token_id")) c["pad_token_id"] = nullptr;
  return c;
}

ojson hfGenerationConfig(const std::string& package, std::optional<std::int64_t> bosId,
                         std::optional<std::int64_t> eosId) {
  ojson g = ojson::object();
  if (bosId) g["bos_token_id"] = *bosId;
  if (eosId) g["eos_token_id"] = *eosId;
  nest::RecommendedSampling r = nest::recommendedSampling(package, "");
  const nest::Sampling& s = r.sampling;
  const bool sample = !r.source.empty() && s.temperature > 0;
  g["do_sample"] = sample;
  if (sample) {
    g["temperature"] = s.temperature;
    g["top_p"] = s.topP;
    g["top_k"] = s.topK;  // 0: no top-k filter (transformers' default would be 50)
    if (s.minP > 0) g["min_p"] = s.minP;
  }
  if (s.repetitionPenalty != 1.0) g["repetition_penalty"] = s.repetitionPenalty;
  return g;
}

}  // namespace linnet::exporter
