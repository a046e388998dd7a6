#include "nest/model_config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <toml++/toml.h>

#include "base/diagnostics.h"
#include "common/dtype.h"
#include "nest/backend.h"
#include "nest/families.h"
#include "sema/program.h"

#ifdef LINNET_HAVE_GGUF
#include "gguf/gguf.h"
#endif

namespace linnet::nest {

namespace fs = std::filesystem;

namespace {

// `p` when it is a file this process can read; empty when nothing has that
// name. Anything else there (a folder, a link to nothing, a file it may not
// read) is an Error: reported as missing, it would send the user looking
// for the wrong fault.
std::string readableInFolder(const fs::path& p) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(p, ec))) return {};
  fs::file_status target = fs::status(p, ec);
  const char* what = !fs::exists(target)             ? "a link to nothing"
                     : fs::is_directory(target)      ? "a folder"
                     : !fs::is_regular_file(target)  ? "not a regular file"
                                                     : nullptr;
  if (!what && ::access(p.c_str(), R_OK) != 0) what = std::strerror(errno);
  if (what)
    throw Error(fmt::format("{}: cannot be read ({}); the folder's {} must be a readable file: replace it, or "
                            "remove it",
                            p.string(), what, p.filename().string()));
  return p.string();
}

}  // namespace

WeightsPath findWeights(const std::string& weights) {
  WeightsPath w;
  std::error_code ec;
  if (!fs::is_directory(weights, ec)) {
    w.checkpoint = weights;
    return w;
  }
  w.folder = weights;
  fs::path dir(weights);
  auto present = [&](const char* name) { return readableInFolder(dir / name); };
  // transformers' order: the single file first, then the index of shards.
  for (const char* name : {"model.safetensors", "model.safetensors.index.json"})
    if (w.checkpoint.empty()) w.checkpoint = present(name);
  if (w.checkpoint.empty())
    throw Error(fmt::format("{}: no checkpoint in this folder: it has neither model.safetensors nor "
                            "model.safetensors.index.json (with its shards); pass --weights a folder with one, or "
                            "a checkpoint file (.safetensors, *.safetensors.index.json, .gguf)",
                            weights));
  w.config = present("config.json");
  w.tokenizer = present("tokenizer.json");
  w.generationConfig = present("generation_config.json");
  return w;
}

namespace {

KeyTable readTable(const toml::table& t, const std::string& section, const std::string& nestToml) {
  KeyTable out;
  out.section = section;
  std::vector<uint32_t> lines;  // where each mapping is written
  auto bad = [&](const std::string& key, const char* expected) {
    return Error(fmt::format("{}: [{}] {} must be {}", nestToml, section, key, expected));
  };
  for (const auto& [k, value] : t) {
    std::string key(k.str());
    if (key == "absent") {
      const toml::array* a = value.as_array();
      if (!a) throw bad(key, "a list of keys the source assumes null or missing");
      for (const auto& item : *a) {
        auto s = item.value<std::string>();
        if (!s) throw bad(key, "a list of keys (strings)");
        out.absent.push_back(*s);
      }
      continue;
    }
    if (key == "expect") {
      const toml::table* e = value.as_table();
      if (!e) throw bad(key, "a table of keys and the values the source assumes");
      for (const auto& [k, v] : *e) {
        nlohmann::json j;
        if (auto b = v.value_exact<bool>()) j = *b;
        else if (auto i = v.value_exact<int64_t>()) j = *i;
        else if (auto f = v.value_exact<double>()) j = *f;
        else if (auto str = v.value_exact<std::string>()) j = *str;
        else throw bad(key + "." + std::string(k.str()), "a string, a number or a boolean");
        out.expected.emplace_back(std::string(k.str()), std::move(j));
      }
      continue;
    }
    KeyMapping m{key, {}};
    if (auto s = value.value<std::string>()) {
      m.keys.push_back(*s);
    } else if (const toml::array* a = value.as_array()) {
      for (const auto& item : *a) {
        auto one = item.value<std::string>();
        if (!one) throw bad(key, "a key (a string) or a list of keys, the first present one read");
        m.keys.push_back(*one);
      }
    }
    if (m.keys.empty()) throw bad(key, "a key (a string) or a list of keys, the first present one read");
    lines.push_back(value.source().begin.line);
    out.mappings.push_back(std::move(m));
  }
  // In the card's order (a toml::table iterates sorted by key), so its messages are too.
  std::vector<size_t> order(out.mappings.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return lines[a] < lines[b]; });
  std::vector<KeyMapping> sorted;
  for (size_t k : order) sorted.push_back(std::move(out.mappings[k]));
  out.mappings = std::move(sorted);
  return out;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("{}: cannot read it", path));
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A config value as the messages print it: JSON, long ones cut short.
std::string shown(const nlohmann::json& v) {
  std::string s = v.dump();
  return s.size() > 80 ? s.substr(0, 77) + "..." : s;
}

// A card's number as the messages print it: 500000, not 500000.000000.
std::string shown(double v) { return fmt::format("{}", v); }

bool close(double a, double b) { return a == b || std::fabs(a - b) <= 1e-6 * std::max(std::fabs(a), std::fabs(b)); }

}  // namespace

CardConfig parseCardConfig(const std::string& text, const std::string& nestToml) {
  CardConfig card;
  card.nestToml = nestToml;
  toml::table t;
  try {
    t = toml::parse(text, nestToml);
  } catch (const toml::parse_error& e) {
    throw Error(fmt::format("{}:{}:{}: malformed TOML: {}", nestToml, e.source().begin.line, e.source().begin.column,
                            e.description()));
  }
  card.family = t["model"]["family"].value_or(std::string());
  if (const toml::table* g = t["generics"].as_table())
    for (const auto& [k, value] : *g) {
      if (auto i = value.value<int64_t>()) card.generics.emplace(std::string(k.str()), GenericValue(*i));
      else if (auto s = value.value<std::string>()) card.generics.emplace(std::string(k.str()), GenericValue(*s));
    }
  if (const toml::table* c = t["constants"].as_table())
    for (const auto& [k, value] : *c) card.constants.insert(std::string(k.str()));
  for (const char* section : {"config", "gguf"}) {
    if (!t.contains(section)) continue;
    const toml::table* table = t[section].as_table();
    if (!table) throw Error(fmt::format("{}: [{}] must be a table", nestToml, section));
    (std::string(section) == "config" ? card.config : card.gguf) = readTable(*table, section, nestToml);
  }
  return card;
}

CardConfig readCardConfig(const std::string& package) {
  fs::path nestToml = fs::path(package) / "nest.toml";
  std::error_code ec;
  if (!fs::is_regular_file(nestToml, ec)) return {};
  return parseCardConfig(readFile(nestToml.string()), nestToml.string());
}

ConfigValues readConfigJson(const std::string& path) {
  ConfigValues v;
  v.what = path;
  try {
    v.values = nlohmann::json::parse(readFile(path));
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("{}: malformed JSON: {}", path, e.what()));
  }
  if (!v.values.is_object()) throw Error(fmt::format("{}: not a JSON object", path));
  return v;
}

ConfigValues readGgufMetadata(const std::string& path) {
#ifdef LINNET_HAVE_GGUF
  ConfigValues v;
  v.what = path;
  v.dotted = false;
  v.values = nlohmann::json::object();
  try {
    gguf::File file = gguf::File::open(path);
    for (const auto& [key, value] : file.metadata().entries()) {
      nlohmann::json j;
      if (auto i = value.asInt()) j = *i;
      else if (auto f = value.asFloat()) j = *f;
      else if (auto* b = std::get_if<bool>(&value.data)) j = *b;
      else if (auto* s = std::get_if<std::string>(&value.data)) j = *s;
      else if (auto* a = std::get_if<gguf::Array>(&value.data)) {
        j = a->size();
        v.arrays.insert(key);
      } else continue;
      v.values[key] = j;
    }
    v.arch = file.architecture();
  } catch (const std::exception& e) {
    throw Error(e.what());
  }
  return v;
#else
  throw Error(fmt::format("{}: this build has no GGUF reader", path));
#endif
}

std::optional<std::string> fullConfigKey(const ConfigValues& values, const std::string& key) {
  std::string full = key;
  for (size_t at; (at = full.find("{arch}")) != std::string::npos;) {
    if (values.arch.empty()) return std::nullopt;
    full.replace(at, 6, values.arch);
  }
  return full;
}

namespace {

// "a / b": the floor quotient of two whole-number keys, as transformers
// derives a value that a config leaves out (a Qwen2 config has no head_dim:
// hidden_size / num_attention_heads). Absent unless both are present and
// the divisor is positive.
std::optional<nlohmann::json> quotientOf(const ConfigValues& values, const std::string& key, size_t slash) {
  std::optional<nlohmann::json> a = findConfigValue(values, key.substr(0, slash));
  std::optional<nlohmann::json> b = findConfigValue(values, key.substr(slash + 3));
  if (!a || !b || !a->is_number_integer() || !b->is_number_integer() || b->get<int64_t>() <= 0) return std::nullopt;
  return a->get<int64_t>() / b->get<int64_t>();
}

}  // namespace

std::optional<nlohmann::json> findConfigValue(const ConfigValues& values, const std::string& key) {
  std::optional<std::string> fullKey = fullConfigKey(values, key);
  if (!fullKey) return std::nullopt;
  const std::string& full = *fullKey;
  if (size_t slash = full.find(" / "); slash != std::string::npos) return quotientOf(values, full, slash);
  const nlohmann::json* node = nullptr;
  if (auto it = values.values.find(full); it != values.values.end()) node = &*it;
  if (!node && values.dotted) {
    node = &values.values;
    size_t start = 0;
    while (node) {
      size_t dot = full.find('.', start);
      std::string part = full.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      auto it = node->is_object() ? node->find(part) : node->end();
      node = node->is_object() && it != node->end() ? &*it : nullptr;
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
  }
  if (!node || node->is_null()) return std::nullopt;
  return *node;
}

std::optional<std::string> elementTypeOfTorch(const std::string& torchDtype) {
  std::string name = torchDtype.starts_with("torch.") ? torchDtype.substr(6) : torchDtype;
  static const std::map<std::string, std::string> torch = {{"float32", "f32"}, {"float", "f32"}, {"bfloat16", "bf16"},
                                                           {"float16", "f16"}, {"half", "f16"},  {"float64", "f64"},
                                                           {"double", "f64"}};
  if (auto it = torch.find(name); it != torch.end()) name = it->second;
  auto d = dtypeNamed(name);
  if (!d || !isLanguageType(*d) || !isFloat(*d)) return std::nullopt;
  return name;
}

ConfigCheck checkConfig(const CardConfig& card, const KeyTable& table, const ConfigValues& values,
                        const std::map<std::string, GenericValue>& given, bool fromConfig,
                        const ConstantLookup& constants) {
  ConfigCheck out;
  out.generics = given;
  std::string source = values.dotted ? "config.json" : "the GGUF's metadata";
  for (const KeyMapping& m : table.mappings) {
    std::optional<nlohmann::json> v;
    std::string key;
    for (const std::string& k : m.keys)
      if ((v = findConfigValue(values, k))) {
        key = *fullConfigKey(values, k);
        break;
      }
    if (!v) continue;
    std::string at = values.arrays.count(key) ? fmt::format("{}: {} has {} items", values.what, key, shown(*v))
                                              : fmt::format("{}: {} = {}", values.what, key, shown(*v));
    if (m.isConstant()) {
      if (!v->is_number()) {
        out.problems.push_back(fmt::format("{} is not a number, as the constant {} must be", at, m.name));
        continue;
      }
      std::optional<double> c = constants ? constants(m.name) : std::nullopt;
      if (!c) {
        if (constants)
          out.problems.push_back(fmt::format("{}: [{}] maps `{}`, which is not a number constant of the package "
                                             "(`pub const NAME: f32 = 1.0` in module `{}`)",
                                             card.nestToml, table.section, m.name,
                                             m.name.substr(0, m.name.rfind('.'))));
        continue;
      }
      double want = v->get<double>();
      std::string origin = card.constants.count(m.name) ? fmt::format("set by {} [constants]", card.nestToml)
                                                        : std::string("the package's source");
      if (!close(want, *c))
        out.problems.push_back(fmt::format("{}, but the model's {} = {} ({}); this card computes with its own "
                                           "value, so it does not fit this checkpoint",
                                           at, m.name, shown(*c), origin));
      continue;
    }
    // A generic: a dimension, or an element type named by transformers.
    std::optional<GenericValue> fromSource;
    if (v->is_string()) {
      if (auto t = elementTypeOfTorch(v->get<std::string>())) fromSource = GenericValue(*t);
    } else if (v->is_number_integer()) {
      fromSource = GenericValue(v->get<int64_t>());
    } else if (v->is_number_float() && std::trunc(v->get<double>()) == v->get<double>() &&
               std::fabs(v->get<double>()) < 9e18) {
      fromSource = GenericValue(static_cast<int64_t>(v->get<double>()));
    }
    auto set = given.find(m.name);
    auto inCard = card.generics.find(m.name);
    bool isType = v->is_string();
    if (!fromSource) {
      // Only a value that would be used, or checked, is worth a word.
      bool used =
          isType ? (fromConfig && set == given.end()) || (set == given.end() && inCard == card.generics.end()) : true;
      if (used)
        out.problems.push_back(isType ? fmt::format("{} names no element type the generic {} can take", at, m.name)
                                      : fmt::format("{} is not a whole number, as the generic {} must be", at, m.name));
      continue;
    }
    if (isType) {
      // How the card computes, not the checkpoint's shape: taken when asked
      // (or when nothing sets it), never an error; binding checks the dtypes.
      if (set == given.end() && (fromConfig || inCard == card.generics.end()))
        out.generics.insert_or_assign(m.name, *fromSource);
      continue;
    }
    if (set != given.end()) {
      if (set->second.value != fromSource->value)
        out.problems.push_back(fmt::format("{}, but the model's {} = {} (set by --set {}={}); drop that --set, or "
                                           "give --set {}={}",
                                           at, m.name, set->second.str(), m.name, set->second.str(), m.name,
                                           fromSource->str()));
      continue;
    }
    if (fromConfig || inCard == card.generics.end()) {
      out.generics.insert_or_assign(m.name, *fromSource);
      continue;
    }
    if (inCard->second.value != fromSource->value)
      out.problems.push_back(fmt::format("{}, but the model's {} = {} (set by {} [generics]); load with "
                                         "--generics-from-config to take it from {}, or --set {}={}",
                                         at, m.name, inCard->second.str(), card.nestToml, source, m.name,
                                         fromSource->str()));
  }
  for (const auto& [key, want] : table.expected)
    if (auto v = findConfigValue(values, key); v && *v != want)
      out.problems.push_back(fmt::format("{}: {} = {}, but the card assumes {} ({} [{}] expect): its source "
                                         "computes otherwise",
                                         values.what, *fullConfigKey(values, key), shown(*v), shown(want),
                                         card.nestToml, table.section));
  for (const std::string& key : table.absent)
    if (auto v = findConfigValue(values, key); v && !(!values.dotted && *v == "none"))  // GGUF's word for no scaling
      out.problems.push_back(fmt::format("{}: {} = {}, but the card assumes it is null or missing ({} [{}] "
                                         "absent): its source does not implement it",
                                         values.what, *fullConfigKey(values, key), shown(*v), card.nestToml,
                                         table.section));
  return out;
}

LoadOptions prepareLoad(const std::string& package, const LoadOptions& options) {
  LoadOptions out = options;
  out.genericsFromConfig = false;
  const char* flag = "--generics-from-config (LoadOptions::genericsFromConfig)";
  if (options.weights.empty()) {
    if (options.genericsFromConfig)
      throw Error(fmt::format("{}: no config to take the generics from: pass --weights a Hugging Face folder "
                              "(with config.json) or a .gguf file",
                              flag));
    return out;
  }
  WeightsPath w = findWeights(options.weights);
  out.weights = w.checkpoint;
  std::optional<ConfigValues> values;
  if (!w.config.empty()) values = readConfigJson(w.config);
  else if (w.folder.empty() && w.checkpoint.ends_with(".gguf") && fs::exists(w.checkpoint))
    values = readGgufMetadata(w.checkpoint);
  if (!values) {
    if (options.genericsFromConfig)
      throw Error(fmt::format("{}: {} has no config to take the generics from: {}", flag, options.weights,
                              w.folder.empty() ? "a .safetensors file or index is read alone; pass its folder, "
                                                 "with config.json beside it"
                                               : "the folder has no config.json"));
    return out;
  }
  CardConfig card = readCardConfig(package);
  // A checkpoint of another family is told by its name before its numbers.
  std::optional<Family> family = cardFamily(package, card);
  if (family) checkFamily(*family, package, *values);
  // A GGUF's metadata: the card's own [gguf], else its [config] read
  // through the family's descriptor.
  if (!values->dotted && !card.gguf && card.config && family) card.gguf = ggufTable(*card.config, *family);
  const std::optional<KeyTable>& table = values->dotted ? card.config : card.gguf;
  if (!table) {
    if (options.genericsFromConfig)
      throw Error(fmt::format("{}: {} has no [{}] table mapping the model's generics to {} keys (docs/nest.md)", flag,
                              card.nestToml.empty() ? package + "/nest.toml" : card.nestToml,
                              values->dotted ? "config" : "gguf", values->dotted ? "config.json" : "GGUF metadata"));
    return out;
  }
  // The package's constants, read only when the config has a mapped one; a
  // package that does not load is left to the backend to report in full.
  bool needed = false;
  for (const KeyMapping& m : table->mappings)
    for (const std::string& k : m.keys)
      if (m.isConstant() && findConfigValue(*values, k)) needed = true;
  SourceManager sources;
  Diagnostics diags{sources};
  sema::Program program(sources, diags, stdlibFor(options));
  ConstantLookup constants;
  if (needed && program.loadPackage(package))
    constants = [&program](const std::string& name) { return program.constantValue(name); };
  ConfigCheck check = checkConfig(card, *table, *values, options.generics, options.genericsFromConfig, constants);
  if (!check.problems.empty()) throw Error(fmt::format("{}", fmt::join(check.problems, "\n")));
  out.generics = check.generics;
  return out;
}

}  // namespace linnet::nest
