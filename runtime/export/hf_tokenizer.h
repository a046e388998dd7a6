// The tokenizer files of a Hugging Face checkpoint folder, from
//  * --tokenizer: a tokenizer.json, a folder holding one, or a .gguf;
//  * else the folder of --weights (the folder itself, or the one a
//    checkpoint file lies in) when it holds a tokenizer.json;
//  * else a GGUF --weights file's own tokenizer metadata.
// A tokenizer.json's folder is copied as it is (tokenizer.json,
// tokenizer_config.json, special_tokens_map.json, chat_template.jinja); a
// GGUF's metadata is rebuilt as tokenizer.json and tokenizer_config.json
// (runtime/gguf/tokenizer.h). Without a chat template either way, the card's
// chat_template.jinja goes along when it has one.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace linnet::exporter {

struct HfTokenizerFiles {
  std::vector<std::pair<std::string, std::string>> files;  // file name -> bytes
  std::optional<std::int64_t> bosId, eosId;
  std::string source;  // what it came from, for messages
};

// nullopt when there is no tokenizer to be had. Throws (nest::Error,
// gguf::Error) naming the file for one that cannot be read.
std::optional<HfTokenizerFiles> hfTokenizerFiles(const std::string& tokenizer, const std::string& weights,
                                                 const std::string& package,
                                                 const std::function<void(const std::string&)>& note);

}  // namespace linnet::exporter
