// Checkpoints as they come: a Hugging Face model folder for --weights, and
// the card's nest.toml tables that tie its generics and constants to the
// folder's config.json ([config]) or a GGUF file's metadata ([gguf]):
//
//   [config]
//   H = "hidden_size"                         # a generic = a config.json key
//   "llama.rope.THETA" = "rope_theta"         # a constant, by its full name
//   "llama.rope.FACTOR" = "rope_scaling.factor"  # a dotted key reaches into an object
//   T = ["torch_dtype", "dtype"]              # several keys: the first present
//   absent = ["rope_scaling"]                 # keys the source assumes null or missing
//   [gguf]
//   H = "{arch}.embedding_length"             # {arch}: general.architecture
//   Vocab = "tokenizer.ggml.tokens"           # an array: its length
//
// Before anything is compiled or bound, every mapped value the config has is
// checked against the card's (nest.toml [generics], then --set; a constant
// as the package's source says, within a relative 1e-6), each mismatch one
// line of one Error; with LoadOptions::genericsFromConfig the mapped
// generics are taken from the config instead of nest.toml (docs/nest.md).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nest/nest.h"

namespace linnet::nest {

// What --weights names, resolved. A folder holds model.safetensors or
// model.safetensors.index.json (transformers' order); the files beside it
// are used when present (empty when not, or when --weights is a file).
struct WeightsPath {
  std::string checkpoint;        // the file to bind: as given, or found in the folder
  std::string folder;            // the folder --weights named; empty for a file
  std::string config;            // config.json
  std::string tokenizer;         // tokenizer.json (tokenizer_config.json beside it: the chat template)
  std::string generationConfig;  // generation_config.json
};

// Throws Error for a folder that holds no checkpoint, naming what it looked for.
WeightsPath findWeights(const std::string& weights);

// One row of a [config] or [gguf] table.
struct KeyMapping {
  std::string name;               // a generic (`H`), or a constant by its full name (`llama.rope.THETA`)
  std::vector<std::string> keys;  // read in order: the first one present gives the value
  bool isConstant() const { return name.find('.') != std::string::npos; }
};

struct KeyTable {
  std::string section;  // "config" or "gguf", for messages
  std::vector<KeyMapping> mappings;
  std::vector<std::string> absent;
  // Keys whose value the source assumes (`expect = { hidden_act = "silu" }`):
  // a checkpoint that says another computes otherwise.
  std::vector<std::pair<std::string, nlohmann::json>> expected;
};

// The nest.toml tables read here.
struct CardConfig {
  std::string nestToml;                          // its path, for messages; empty without one
  std::string family;                            // [model] family; empty when it names none
  std::map<std::string, GenericValue> generics;  // [generics]
  std::set<std::string> constants;               // the names [constants] sets
  std::optional<KeyTable> config, gguf;          // [config], [gguf]
};

// The package's nest.toml (none: an empty CardConfig). Error on a table
// that is not of the schema above.
CardConfig readCardConfig(const std::string& package);
CardConfig parseCardConfig(const std::string& nestTomlText, const std::string& nestTomlPath);

// A config.json, or a GGUF file's metadata as JSON (an array as its length).
struct ConfigValues {
  std::string what;              // names it in messages: "DIR/config.json", "m.gguf"
  nlohmann::json values;         // an object
  bool dotted = true;            // config.json: "a.b" reaches into objects; GGUF keys are flat
  std::string arch;              // a GGUF's general.architecture, for {arch}
  std::set<std::string> arrays;  // GGUF keys whose value stands for an array's length
};

ConfigValues readConfigJson(const std::string& path);
// Error for a build without the GGUF reader.
ConfigValues readGgufMetadata(const std::string& path);

// `key` with {arch} filled in; nullopt when it needs an architecture there is none of.
std::optional<std::string> fullConfigKey(const ConfigValues& values, const std::string& key);
// The value `key` gives ({arch} filled in); nullopt when missing or null.
std::optional<nlohmann::json> findConfigValue(const ConfigValues& values, const std::string& key);

// A transformers dtype name (`torch_dtype`: "bfloat16") as an element type
// name ("bf16"); nullopt for one the language has no type for.
std::optional<std::string> elementTypeOfTorch(const std::string& torchDtype);

struct ConfigCheck {
  std::map<std::string, GenericValue> generics;  // the generics to load with: `given`, plus the config's
  std::vector<std::string> problems;             // one line each
};

// A package constant's value by its full name (sema::Program::constantValue).
using ConstantLookup = std::function<std::optional<double>(const std::string& fullName)>;

// The checks against `table` of `card` for `values`, as prepareLoad makes
// them. `given`: LoadOptions::generics (--set). A generic the config gives
// and neither nest.toml nor --set does is taken from the config; an element
// type (T = "torch_dtype") is taken under `fromConfig` (a --set still wins)
// but not checked otherwise, since the checkpoint's own dtypes are checked
// tensor by tensor when it is bound (--convert). Constants are always checked.
ConfigCheck checkConfig(const CardConfig& card, const KeyTable& table, const ConfigValues& values,
                        const std::map<std::string, GenericValue>& given, bool fromConfig,
                        const ConstantLookup& constants);

// The options as load() uses them: --weights resolved to its checkpoint
// file, the config (a folder's config.json, a .gguf's metadata) checked
// against the card (one Error, a line per problem), and with
// genericsFromConfig its generics taken into `generics` (genericsFromConfig
// is then false: applying it twice is applying it once).
LoadOptions prepareLoad(const std::string& package, const LoadOptions& options);

}  // namespace linnet::nest
