#include "nest/families.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <toml++/toml.h>

#include "common/install.h"
#include "nest/backend.h"

namespace linnet::nest {

namespace fs = std::filesystem;

namespace {

// The descriptors a card sees: `families/` beside the card's folder (its
// zoo's), else the installed ones.
fs::path familiesDir(const std::string& package) {
  std::error_code ec;
  fs::path card = fs::absolute(package, ec).lexically_normal();
  if (card.filename().empty()) card = card.parent_path();  // "nest/qwen3-0.6b/"
  fs::path zoo = card.parent_path() / "families";
  return fs::is_directory(zoo, ec) ? zoo : fs::path(defaultFamiliesDir());
}

std::vector<std::string> strings(const toml::table& t, const char* key, const std::string& file) {
  std::vector<std::string> out;
  const toml::array* a = t[key].as_array();
  if (!a) throw Error(fmt::format("{}: [family] {} must be a list of names", file, key));
  for (const auto& item : *a) {
    auto s = item.value<std::string>();
    if (!s) throw Error(fmt::format("{}: [family] {} must be a list of names (strings)", file, key));
    out.push_back(*s);
  }
  return out;
}

bool has(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// The family among the zoo's descriptors whose `names` list `name`.
std::optional<Family> familyNaming(const fs::path& dir, const std::string& name,
                                   std::vector<std::string> Family::*names) {
  std::error_code ec;
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.path().extension() == ".toml") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  for (const fs::path& file : files) {
    Family f = readFamily(file.string());
    if (has(f.*names, name)) return f;
  }
  return std::nullopt;
}

}  // namespace

namespace {

// Descriptors extend each other this deep at most (a cycle ends here).
constexpr int kMaxExtends = 8;

toml::table parsed(const std::string& file) {
  try {
    return gguf::parseDescriptor(file);
  } catch (const gguf::Error& e) {
    throw Error(e.what());
  }
}

Family readFamilyAt(const std::string& file, int depth) {
  const toml::table t = parsed(file);
  const toml::table* f = t["family"].as_table();
  if (!f) throw Error(fmt::format("{}: no [family] table", file));
  Family out;
  out.name = (*f)["name"].value_or(std::string());
  if (out.name.empty()) throw Error(fmt::format("{}: [family] has no `name`", file));
  out.modelTypes = strings(*f, "model_types", file);
  out.ggufArchitectures = strings(*f, "gguf", file);
  const toml::table* g = t["gguf"].as_table();
  if (!g) throw Error(fmt::format("{}: no [gguf] table (how llama.cpp names the family's tensors and keys)", file));
  std::optional<gguf::Architecture> base;
  if (auto extends = (*g)["extends"].value<std::string>()) {
    if (depth >= kMaxExtends)
      throw Error(fmt::format("{}: [gguf] extends = \"{}\" goes {} descriptors deep: a cycle?", file, *extends,
                              kMaxExtends));
    base = readFamilyAt((fs::path(file).parent_path() / (*extends + ".toml")).string(), depth + 1).gguf;
  }
  try {
    out.gguf = gguf::architectureFrom(*g, out.name, out.ggufArchitectures, file, base ? &*base : nullptr);
  } catch (const gguf::Error& e) {
    throw Error(e.what());
  }
  return out;
}

}  // namespace

Family readFamily(const std::string& file) { return readFamilyAt(file, 0); }

std::optional<Family> cardFamily(const std::string& package, const CardConfig& card) {
  std::error_code ec;
  fs::path dir = familiesDir(package);
  if (card.family.empty()) return std::nullopt;
  fs::path file = dir / (card.family + ".toml");
  if (!fs::is_regular_file(file, ec))
    throw Error(fmt::format("{}: [model] family = \"{}\", but the zoo has no descriptor of it ({}); add one, "
                            "or name a family the zoo has",
                            card.nestToml, card.family, file.string()));
  return readFamily(file.string());
}

std::optional<Family> ggufFamily(const std::string& package, const std::string& arch) {
  return familyNaming(familiesDir(package), arch, &Family::ggufArchitectures);
}

namespace {

std::vector<std::string> ggufKeysOf(const std::string& configKey, const gguf::Architecture& arch) {
  if (size_t slash = configKey.find(" / "); slash != std::string::npos) {
    auto a = ggufKeysOf(configKey.substr(0, slash), arch), b = ggufKeysOf(configKey.substr(slash + 3), arch);
    if (a.empty() || b.empty()) return {};
    return {a.front() + " / " + b.front()};
  }
  const gguf::ConfigKey* k = arch.configKey(configKey);
  return k ? k->gguf : std::vector<std::string>{};
}

}  // namespace

KeyTable ggufTable(const KeyTable& config, const Family& family) {
  KeyTable out;
  out.section = "config";
  for (const KeyMapping& m : config.mappings) {
    KeyMapping g{m.name, {}};
    for (const std::string& key : m.keys)
      for (std::string& k : ggufKeysOf(key, family.gguf))
        if (std::find(g.keys.begin(), g.keys.end(), k) == g.keys.end()) g.keys.push_back(std::move(k));
    if (!g.keys.empty()) out.mappings.push_back(std::move(g));
  }
  // An absent object is absent from a GGUF when its `.type` key is (llama.cpp
  // writes `{arch}.rope.scaling.type` for any rope scaling it applies).
  for (const std::string& key : config.absent)
    for (const std::string& named : {key, key + ".type"})
      for (std::string& k : ggufKeysOf(named, family.gguf))
        if (std::find(out.absent.begin(), out.absent.end(), k) == out.absent.end()) out.absent.push_back(std::move(k));
  // An expectation of a key the family's GGUF says too (partial_rotary_factor).
  for (const auto& [key, want] : config.expected)
    for (std::string& k : ggufKeysOf(key, family.gguf)) out.expected.emplace_back(std::move(k), want);
  return out;
}

void checkFamily(const Family& family, const std::string& package, const ConfigValues& values) {
  bool json = values.dotted;
  std::string named;
  if (json) {
    auto it = values.values.find("model_type");
    if (it == values.values.end() || !it->is_string()) return;  // nothing to tell by
    named = it->get<std::string>();
  } else {
    named = values.arch;
  }
  std::vector<std::string> Family::*names = json ? &Family::modelTypes : &Family::ggufArchitectures;
  if (named.empty() || has(family.*names, named)) return;
  std::string key = json ? "model_type" : "general.architecture";
  std::string card = fmt::format("the card {} is the {} family's ({} {})", package, family.name, key,
                                 fmt::join(family.*names, ", "));
  const fs::path dir = familiesDir(package);
  if (auto other = familyNaming(dir, named, names))
    throw Error(fmt::format("{}: {} = \"{}\" is the {} family's, but {}; load it with a {} card", values.what, key,
                            named, other->name, card, other->name));
  throw Error(fmt::format("{}: {} = \"{}\" is no family the zoo knows ({}), and {}", values.what, key, named,
                          dir.string(), card));
}

}  // namespace linnet::nest
