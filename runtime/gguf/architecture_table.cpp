// The [gguf] table of a family descriptor (nest/families/NAME.toml) read
// into an Architecture (gguf/architecture.h gives the schema).
#include <fmt/format.h>

#include <algorithm>

#include "gguf/architecture.h"

namespace linnet::gguf {

namespace {

// A string, or a list of strings: the keys read in order.
std::vector<std::string> keyList(const toml::node& node, const std::string& where) {
  if (auto s = node.value<std::string>()) return {*s};
  std::vector<std::string> out;
  if (const toml::array* a = node.as_array())
    for (const auto& item : *a)
      if (auto s = item.value<std::string>()) out.push_back(*s);
  if (out.empty() || (node.as_array() && out.size() != node.as_array()->size()))
    throw Error(fmt::format("{} must be a key or a list of keys (strings)", where));
  return out;
}

const toml::table* subtable(const toml::table& t, const char* key, const std::string& where) {
  if (!t.contains(key)) return nullptr;
  const toml::table* sub = t[key].as_table();
  if (!sub) throw Error(fmt::format("{}.{} must be a table", where, key));
  return sub;
}

std::vector<TensorName> names(const toml::table& t, const char* key, const std::string& where) {
  std::vector<TensorName> out;
  if (const toml::table* sub = subtable(t, key, where))
    for (const auto& [gguf, hf] : *sub) {
      auto name = hf.value<std::string>();
      if (!name) throw Error(fmt::format("{}.{}.\"{}\" must be a Hugging Face tensor name", where, key, gguf.str()));
      out.push_back({std::string(gguf.str()), *name});
    }
  return out;
}

// Entries of `add` replace those of `into` with the same GGUF name (or
// config key), the others are appended.
template <class Entry, class Key>
void merge(std::vector<Entry>& into, std::vector<Entry> add, Key key) {
  for (Entry& e : add) {
    auto same = std::find_if(into.begin(), into.end(), [&](const Entry& x) { return x.*key == e.*key; });
    if (same != into.end()) *same = std::move(e);
    else into.push_back(std::move(e));
  }
}

nlohmann::json configDefaults(const toml::table& d, const std::string& where) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [key, value] : d) {
    nlohmann::json& v = out[std::string(key.str())];
    if (value.is_string()) v = *value.value<std::string>();
    else if (value.is_integer()) v = *value.value<std::int64_t>();
    else if (value.is_floating_point()) v = *value.value<double>();
    else if (value.is_boolean()) v = *value.value<bool>();
    else if (const toml::array* list = value.as_array())
      v = keyList(*list, where + ".config_defaults." + std::string(key.str()));
    else throw Error(fmt::format("{}.config_defaults.{}: a string, number, boolean or list of strings", where,
                                 key.str()));
  }
  return out;
}

}  // namespace

Architecture architectureFrom(const toml::table& gguf, const std::string& family, std::vector<std::string> archNames,
                              const std::string& file, const Architecture* base) {
  const std::string where = file + ": [gguf]";
  static const char* const kKeys[] = {"extends", "ignored", "tensors", "layer_tensors", "permuted",
                                      "shifted", "config", "config_defaults"};
  for (const auto& entry : gguf) {
    const std::string_view key = entry.first.str();
    if (std::find_if(std::begin(kKeys), std::end(kKeys), [&](const char* k) { return key == k; }) == std::end(kKeys))
      throw Error(fmt::format("{} has no key `{}` (it has: extends, ignored, tensors, layer_tensors, permuted, "
                              "shifted, config, config_defaults)",
                              where, key));
  }
  Architecture a = base ? *base : Architecture{};
  a.family = family;
  a.names = std::move(archNames);
  merge(a.tensors, names(gguf, "tensors", where), &TensorName::gguf);
  merge(a.layerTensors, names(gguf, "layer_tensors", where), &TensorName::gguf);
  if (gguf.contains("ignored")) a.ignored = keyList(*gguf.get("ignored"), where + ".ignored");
  if (const toml::table* p = subtable(gguf, "permuted", where)) {
    a.permuted.clear();
    for (const auto& [stem, keys] : *p)
      a.permuted.push_back({std::string(stem.str()), keyList(keys, where + ".permuted." + std::string(stem.str()))});
  }
  if (const toml::table* s = subtable(gguf, "shifted", where)) {
    a.shifted.clear();
    for (const auto& [suffix, by] : *s) {
      auto v = by.value<double>();
      if (!v) throw Error(fmt::format("{}.shifted.\"{}\" must be a number", where, suffix.str()));
      a.shifted.push_back({std::string(suffix.str()), *v});
    }
  }
  if (const toml::table* c = subtable(gguf, "config", where)) {
    std::vector<ConfigKey> keys;
    for (const auto& [hf, gguf] : *c)
      keys.push_back({std::string(hf.str()), keyList(gguf, where + ".config." + std::string(hf.str()))});
    merge(a.config, std::move(keys), &ConfigKey::hf);
  }
  if (const toml::table* d = subtable(gguf, "config_defaults", where)) a.configDefaults = configDefaults(*d, where);
  return a;
}

toml::table parseDescriptor(const std::filesystem::path& descriptor) {
  const std::string file = descriptor.string();
  try {
    return toml::parse_file(file);
  } catch (const toml::parse_error& e) {
    throw Error(fmt::format("{}:{}:{}: malformed TOML: {}", file, e.source().begin.line, e.source().begin.column,
                            e.description()));
  }
}

Architecture readArchitecture(const std::filesystem::path& descriptor) {
  const std::string file = descriptor.string();
  const toml::table t = parseDescriptor(descriptor);
  const toml::table* family = t["family"].as_table();
  const toml::table* gguf = t["gguf"].as_table();
  if (!family || !gguf) throw Error(fmt::format("{}: a family descriptor needs [family] and [gguf] tables", file));
  std::vector<std::string> archNames;
  if (const toml::array* a = (*family)["gguf"].as_array())
    for (const auto& item : *a)
      if (auto s = item.value<std::string>()) archNames.push_back(*s);
  std::optional<Architecture> base;
  if (auto extends = (*gguf)["extends"].value<std::string>())
    base = readArchitecture(descriptor.parent_path() / (*extends + ".toml"));
  return architectureFrom(*gguf, (*family)["name"].value_or(std::string()), std::move(archNames), file,
                          base ? &*base : nullptr);
}

}  // namespace linnet::gguf
