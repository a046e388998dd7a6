#include "nest/families.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <toml++/toml.h>

#include "nest/backend.h"

namespace linnet::nest {

namespace fs = std::filesystem;

namespace {

// The zoo's descriptors: `families/` beside the card's folder.
fs::path familiesDir(const std::string& package) {
  std::error_code ec;
  fs::path card = fs::absolute(package, ec).lexically_normal();
  if (card.filename().empty()) card = card.parent_path();  // "nest/qwen3-0.6b/"
  return card.parent_path() / "families";
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

Family readFamily(const std::string& file) {
  toml::table t;
  try {
    t = toml::parse_file(file);
  } catch (const toml::parse_error& e) {
    throw Error(fmt::format("{}:{}:{}: malformed TOML: {}", file, e.source().begin.line, e.source().begin.column,
                            e.description()));
  }
  const toml::table* f = t["family"].as_table();
  if (!f) throw Error(fmt::format("{}: no [family] table", file));
  Family out;
  out.name = (*f)["name"].value_or(std::string());
  if (out.name.empty()) throw Error(fmt::format("{}: [family] has no `name`", file));
  out.modelTypes = strings(*f, "model_types", file);
  out.ggufArchitectures = strings(*f, "gguf", file);
  return out;
}

std::optional<Family> cardFamily(const std::string& package, const CardConfig& card) {
  std::error_code ec;
  fs::path dir = familiesDir(package);
  if (card.family.empty() || !fs::is_directory(dir, ec)) return std::nullopt;
  fs::path file = dir / (card.family + ".toml");
  if (!fs::is_regular_file(file, ec))
    throw Error(fmt::format("{}: [model] family = \"{}\", but the zoo has no descriptor of it ({}); add one, "
                            "or name a family the zoo has",
                            card.nestToml, card.family, file.string()));
  return readFamily(file.string());
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
