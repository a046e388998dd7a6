#include "export/gguf_hyperparameters.h"

#include <fmt/format.h>

#include <cmath>
#include <optional>

#include "nest/conventions.h"

namespace linnet::exporter {

namespace {

bool flat(const std::string& configKey) {
  return configKey.find('.') == std::string::npos && configKey.find(' ') == std::string::npos;
}

// The GGUF key that holds config.json's `configKey`: the first of its
// [gguf.config] keys that is metadata of its own (not an array's length).
std::optional<std::string> ggufKeyOf(const std::string& configKey, const gguf::Architecture& table) {
  if (const gguf::ConfigKey* k = table.configKey(configKey))
    for (const std::string& g : k->gguf)
      if (!g.starts_with("tokenizer.")) return g;
  return std::nullopt;
}

// The value the card gives `name` (a generic or a constant), and how a
// message says where it came from.
std::optional<GgufEntry> valueOf(const ModelFacts& facts, const nest::KeyMapping& m) {
  if (m.isConstant()) {
    auto v = facts.constant(m.name);
    if (!v) return std::nullopt;
    return GgufEntry{"", gguf::Value{static_cast<float>(*v)}, fmt::format("the constant {}", m.name)};
  }
  auto v = facts.dim(m.name);
  if (!v) return std::nullopt;  // an element type (T), or a generic the root does not bind
  return GgufEntry{"", gguf::Value{static_cast<std::uint32_t>(*v)}, fmt::format("the generic {}", m.name)};
}

bool sameNumber(const gguf::Value& v, const nlohmann::json& j) {
  if (!j.is_number()) return false;
  double a = v.asInt() ? static_cast<double>(*v.asInt()) : v.asFloat().value_or(NAN);
  return std::fabs(a - j.get<double>()) <= 1e-6 * std::max(1.0, std::fabs(a));
}

// Adds `e` unless the key is there: then a problem if the values differ.
void put(std::vector<GgufEntry>& out, GgufEntry e, std::vector<std::string>& problems) {
  if (const GgufEntry* had = findEntry(out, e.key)) {
    if (had->value.toString() != e.value.toString())
      problems.push_back(fmt::format("{}: {} gives {} and {} gives {}, but a GGUF holds one value (llama.cpp reads "
                                     "it for both)",
                                     e.key, had->from, had->value.toString(), e.from, e.value.toString()));
    return;
  }
  out.push_back(std::move(e));
}

// A key the format lacks (`sliding_window_pattern`): the card's value must
// be the one llama.cpp assumes for the family.
void checkAssumed(const nest::KeyMapping& m, const GgufEntry& v, const nest::Family& family,
                  std::vector<std::string>& problems) {
  for (const std::string& key : m.keys) {
    if (!family.gguf.configDefaults.contains(key)) continue;
    const nlohmann::json& assumed = family.gguf.configDefaults.at(key);
    if (!sameNumber(v.value, assumed))
      problems.push_back(fmt::format("{} = {} ({}), but a GGUF has no key for it: llama.cpp assumes {} for the {} "
                                     "family (nest/families/{}.toml [gguf.config_defaults])",
                                     v.from, v.value.toString(), key, assumed.dump(), family.name, family.name));
    return;
  }
}

}  // namespace

const GgufEntry* findEntry(const std::vector<GgufEntry>& entries, const std::string& key) {
  for (const GgufEntry& e : entries)
    if (e.key == key) return &e;
  return nullptr;
}

std::vector<GgufEntry> ggufHyperparameters(const ModelFacts& facts, const nest::CardConfig& card,
                                           const nest::Family& family, const std::string& arch,
                                           std::vector<std::string>& problems) {
  std::vector<GgufEntry> out;
  if (!card.config) {
    problems.push_back(fmt::format("{}: no [config] table, so which GGUF key holds each generic is unknown "
                                   "(docs/nest.md)",
                                   card.nestToml));
    return out;
  }
  for (const nest::KeyMapping& m : card.config->mappings) {
    std::optional<GgufEntry> v = valueOf(facts, m);
    if (!v) continue;
    std::optional<std::string> key;
    for (const std::string& configKey : m.keys)
      if (flat(configKey) && (key = ggufKeyOf(configKey, family.gguf))) break;
    if (!key) {
      checkAssumed(m, *v, family, problems);
      continue;
    }
    v->key = gguf::withArchitecture(*key, arch);
    put(out, std::move(*v), problems);
  }
  auto u32 = [](std::int64_t n) { return gguf::Value{static_cast<std::uint32_t>(n)}; };
  const std::string keyLength = arch + ".attention.key_length";
  if (auto maxSeq = facts.dim(nest::kContextGeneric))
    put(out, {arch + ".context_length", u32(*maxSeq), fmt::format("the generic {}", nest::kContextGeneric)}, problems);
  if (const GgufEntry* k = findEntry(out, keyLength)) {
    GgufEntry v = *k;
    v.key = arch + ".attention.value_length";
    put(out, v, problems);
    v.key = arch + ".rope.dimension_count";
    put(out, std::move(v), problems);
  } else if (auto h = facts.dim("H"), heads = facts.dim("Heads"); h && heads && *heads > 0) {
    put(out, {arch + ".rope.dimension_count", u32(*h / *heads), "H / Heads"}, problems);
  }
  return out;
}

}  // namespace linnet::exporter
