// A model's hyperparameters as GGUF metadata, read from the zoo's tables
// rather than spelled here: the card's [config] says which config.json key
// each generic and constant is (`H = "hidden_size"`), and its family's
// descriptor which GGUF key holds that config.json key
// (nest/families/NAME.toml [gguf.config]: `hidden_size =
// "{arch}.embedding_length"`). Read backwards, the two give each GGUF key's
// value. Only flat config.json keys are written: a nested one
// (`rope_scaling.factor`) belongs to a scheme that llama.cpp encodes its own
// way (Llama 3's rope factors are the rope_freqs.weight tensor).
#pragma once

#include <string>
#include <vector>

#include "export/model_facts.h"
#include "gguf/gguf.h"
#include "nest/families.h"
#include "nest/model_config.h"

namespace linnet::exporter {

struct GgufEntry {
  std::string key;  // "qwen3.attention.key_length"
  gguf::Value value;
  std::string from;  // "the generic D", for messages
};

// The metadata of `facts` for a file of architecture `arch` (the family's
// general.architecture). Beside the table's keys: context_length from MaxSeq
// and rope.dimension_count from the head size when the table gives neither,
// and value_length beside key_length (llama.cpp reads both; the converter
// writes both from head_dim). Appends to `problems` (and writes nothing for
// it) when two generics give one key different values, or a value differs
// from what llama.cpp assumes for a key the format lacks (the family's
// [gguf.config_defaults]).
std::vector<GgufEntry> ggufHyperparameters(const ModelFacts& facts, const nest::CardConfig& card,
                                           const nest::Family& family, const std::string& arch,
                                           std::vector<std::string>& problems);

// The entry of `key` among `entries`; null when there is none.
const GgufEntry* findEntry(const std::vector<GgufEntry>& entries, const std::string& key);

}  // namespace linnet::exporter
