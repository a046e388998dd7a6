#include "export/tokenizer_source.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "chat/chat_template.h"

namespace linnet::exporter {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

json readJson(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw gguf::Error(fmt::format("{}: cannot read", path.string()));
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return json::parse(ss.str());
  } catch (const json::exception& e) {
    throw gguf::Error(fmt::format("{}: not JSON: {}", path.string(), e.what()));
  }
}

// A pre-tokenizer or normalizer with the ByteLevel flags llama.cpp ignores
// (add_prefix_space, trim_offsets) left out, use_regex made explicit.
json canonical(json j) {
  if (j.is_object()) {
    if (j.value("type", "") == "ByteLevel") {
      j.erase("add_prefix_space");
      j.erase("trim_offsets");
      if (!j.contains("use_regex")) j["use_regex"] = true;
    }
    for (auto& [k, v] : j.items()) v = canonical(v);
  } else if (j.is_array()) {
    for (auto& v : j) v = canonical(v);
  }
  return j;
}

bool hasByteLevel(const json& j) {
  if (j.is_object()) {
    if (j.value("type", "") == "ByteLevel") return true;
    for (const auto& [k, v] : j.items())
      if (hasByteLevel(v)) return true;
  } else if (j.is_array()) {
    for (const auto& v : j)
      if (hasByteLevel(v)) return true;
  }
  return false;
}

// The tokenizer.ggml.pre whose tokenizer.json (runtime/gguf/tokenizer.cpp)
// has this normalizer and pre-tokenizer.
std::string detectPre(const json& tj, const fs::path& path) {
  json normalizer = tj.contains("normalizer") ? canonical(tj["normalizer"]) : json(nullptr);
  json pre = tj.contains("pre_tokenizer") ? canonical(tj["pre_tokenizer"]) : json(nullptr);
  std::vector<std::string> names;
  for (const char* candidate : {"gpt-2", "llama-bpe", "qwen2", "smollm"}) {
    gguf::TokenizerData probe;
    probe.model = "gpt2";
    probe.pre = candidate;
    probe.tokens = {"a"};
    probe.merges = {"a a"};
    json made = gguf::huggingFaceTokenizerJson(probe);
    if (canonical(made["normalizer"]) == normalizer && canonical(made["pre_tokenizer"]) == pre) return candidate;
    names.push_back(candidate);
  }
  throw gguf::Error(fmt::format(
      "{}: its normalizer {} and pre-tokenizer {} are none that llama.cpp names (tokenizer.ggml.pre: {}); llama.cpp "
      "would split text differently",
      path.string(), normalizer.dump(), pre.dump(), fmt::join(names, ", ")));
}

// convert_hf_to_gguf.py's does_token_look_special, for added tokens not marked special.
bool looksSpecial(const std::string& t) {
  if (t == "<pad>" || t == "<mask>" || t == "<2mass>" || t == "[@BOS@]") return true;
  auto wrapped = [&](std::string_view open, std::string_view close) {
    return t.size() >= open.size() + close.size() && t.starts_with(open) && t.ends_with(close);
  };
  return wrapped("<|", "|>") || wrapped("<\xef\xbd\x9c", "\xef\xbd\x9c>") || wrapped("<unused", ">");
}

std::string joinMerge(const json& m, const fs::path& path) {
  if (m.is_string()) return m.get<std::string>();
  if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string())
    return m[0].get<std::string>() + " " + m[1].get<std::string>();
  throw gguf::Error(fmt::format("{}: a merge is neither \"a b\" nor [\"a\", \"b\"]: {}", path.string(), m.dump()));
}

// add_bos_token / add_eos_token from a TemplateProcessing post-processor, as
// gguf's SpecialVocab reads them when tokenizer_config.json does not say.
void templateSpecials(const json& pp, std::optional<bool>& addBos, std::optional<bool>& addEos) {
  if (!pp.is_object()) return;
  if (pp.value("type", "") == "Sequence" && pp.contains("processors")) {
    for (const auto& p : pp["processors"]) templateSpecials(p, addBos, addEos);
    return;
  }
  if (pp.value("type", "") != "TemplateProcessing" || !pp.contains("single") || !pp["single"].is_array()) return;
  const json& single = pp["single"];
  if (single.empty()) return;
  if (!addBos) addBos = single.front().contains("SpecialToken");
  if (!addEos) addEos = single.back().contains("SpecialToken");
}

}  // namespace

ExportTokenizer tokenizerFromJson(const fs::path& given) {
  fs::path path = fs::is_directory(given) ? given / "tokenizer.json" : given;
  json tj = readJson(path);
  if (!tj.is_object() || !tj.contains("model") || !tj["model"].is_object())
    throw gguf::Error(fmt::format("{}: no \"model\" object: not a tokenizer.json", path.string()));
  const json& model = tj["model"];
  std::string type = model.value("type", "");
  if (type != "BPE" || !hasByteLevel(tj.value("pre_tokenizer", json(nullptr))))
    throw gguf::Error(fmt::format(
        "{}: a {} tokenizer{}; the GGUF export writes byte-level BPE tokenizers (llama.cpp's \"gpt2\") from a "
        "tokenizer.json, other tokenizers from a GGUF's own metadata (--tokenizer FILE.gguf)",
        path.string(), type.empty() ? "model-less" : type, type == "BPE" ? " without a ByteLevel pre-tokenizer" : ""));

  ExportTokenizer out;
  gguf::TokenizerData& t = out.data;
  t.source = path.string();
  t.model = "gpt2";
  t.pre = detectPre(tj, path);

  std::map<std::int64_t, std::string> byId;
  std::map<std::string, std::int64_t> byToken;
  if (!model.contains("vocab") || !model["vocab"].is_object())
    throw gguf::Error(fmt::format("{}: model.vocab is not an object", path.string()));
  for (const auto& [token, id] : model["vocab"].items()) {
    if (!id.is_number_integer() || id.get<std::int64_t>() < 0)
      throw gguf::Error(fmt::format("{}: model.vocab[{}] is not a token id", path.string(), json(token).dump()));
    byId[id.get<std::int64_t>()] = token;
    byToken.emplace(token, id.get<std::int64_t>());
  }
  std::map<std::int64_t, std::int32_t> types;
  if (tj.contains("added_tokens") && tj["added_tokens"].is_array()) {
    for (const auto& a : tj["added_tokens"]) {
      if (!a.contains("id") || !a["id"].is_number_integer() || !a.contains("content") || !a["content"].is_string())
        throw gguf::Error(fmt::format("{}: an added token without id and content: {}", path.string(), a.dump()));
      std::int64_t id = a["id"].get<std::int64_t>();
      std::string content = a["content"].get<std::string>();
      byId[id] = content;
      byToken[content] = id;
      bool special = a.value("special", false) || looksSpecial(content);
      types[id] = static_cast<std::int32_t>(special ? gguf::TokenType::Control : gguf::TokenType::UserDefined);
    }
  }
  std::int64_t n = byId.empty() ? 0 : byId.rbegin()->first + 1;
  if (n > (std::int64_t{1} << 31)) throw gguf::Error(fmt::format("{}: token id {} is too large", path.string(), n - 1));
  for (std::int64_t id = 0; id < n; ++id) {
    auto it = byId.find(id);
    if (it == byId.end()) {
      t.tokens.push_back(fmt::format("[PAD{}]", id));
      t.tokenTypes.push_back(static_cast<std::int32_t>(gguf::TokenType::Unused));
      continue;
    }
    t.tokens.push_back(it->second);
    auto ty = types.find(id);
    t.tokenTypes.push_back(ty != types.end() ? ty->second : static_cast<std::int32_t>(gguf::TokenType::Normal));
  }
  if (model.contains("merges") && model["merges"].is_array())
    for (const auto& m : model["merges"]) t.merges.push_back(joinMerge(m, path));
  if (t.merges.empty()) throw gguf::Error(fmt::format("{}: a BPE tokenizer without merges", path.string()));

  fs::path configPath = path.parent_path() / "tokenizer_config.json";
  std::optional<bool> addBos, addEos;
  if (fs::exists(configPath)) {
    json config = readJson(configPath);
    if (config.contains("add_bos_token") && config["add_bos_token"].is_boolean()) addBos = config["add_bos_token"].get<bool>();
    if (config.contains("add_eos_token") && config["add_eos_token"].is_boolean()) addEos = config["add_eos_token"].get<bool>();
    chat::TokenizerChatConfig chat;
    try {
      chat = chat::loadTokenizerConfig(configPath.string());
    } catch (const std::exception& e) {
      throw gguf::Error(fmt::format("{}: {}", configPath.string(), e.what()));
    }
    auto id = [&](const char* key) -> std::optional<std::int32_t> {
      if (!chat.specialTokens.contains(key) || !chat.specialTokens[key].is_string()) return std::nullopt;
      std::string token = chat.specialTokens[key].get<std::string>();
      auto it = byToken.find(token);
      if (it == byToken.end())
        throw gguf::Error(fmt::format("{}: {} {} is not in the vocabulary of {}", configPath.string(), key,
                                      json(token).dump(), path.string()));
      return static_cast<std::int32_t>(it->second);
    };
    t.bosId = id("bos_token");
    t.eosId = id("eos_token");
    t.unknownId = id("unk_token");
    t.paddingId = id("pad_token");
    t.separatorId = id("sep_token");
    for (const auto& [name, text] : chat.templates) {
      if (name == "default") t.chatTemplate = text;
      else out.namedTemplates[name] = text;
    }
  } else if (fs::exists(path.parent_path() / "chat_template.jinja")) {
    std::ifstream in(path.parent_path() / "chat_template.jinja", std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    t.chatTemplate = ss.str();
  }
  templateSpecials(tj.value("post_processor", json(nullptr)), addBos, addEos);
  t.addBos = addBos;
  t.addEos = addEos;
  return out;
}

ExportTokenizer loadExportTokenizer(const std::string& path) {
  if (path.ends_with(".gguf")) {
    gguf::File file = gguf::File::open(path);
    ExportTokenizer out{gguf::readTokenizer(file), {}};
    // Named templates (tokenizer.chat_template.NAME) travel too.
    for (const auto& [key, value] : file.metadata().entries())
      if (key.starts_with("tokenizer.chat_template.") && value.type() == gguf::ValueType::String)
        out.namedTemplates[key.substr(24)] = std::get<std::string>(value.data);
    return out;
  }
  return tokenizerFromJson(path);
}

std::size_t padVocabulary(ExportTokenizer& t, std::size_t vocab) {
  gguf::TokenizerData& d = t.data;
  if (d.tokens.size() > vocab)
    throw gguf::Error(fmt::format("{}: the tokenizer has {} tokens, more than the model's Vocab = {}; the ids past it "
                                  "have no embedding row (--set Vocab={} if the checkpoint has that many)",
                                  d.source, d.tokens.size(), vocab, d.tokens.size()));
  std::size_t added = vocab - d.tokens.size();
  if (!added) return 0;
  if (d.tokenTypes.empty()) d.tokenTypes.assign(d.tokens.size(), static_cast<std::int32_t>(gguf::TokenType::Normal));
  for (std::size_t id = d.tokens.size(); id < vocab; ++id) {
    d.tokens.push_back(fmt::format("[PAD{}]", id));
    d.tokenTypes.push_back(static_cast<std::int32_t>(gguf::TokenType::Unused));
    if (!d.scores.empty()) d.scores.push_back(-1000.0f);
  }
  return added;
}

void addTokenizerMetadata(GgufWriter& w, const ExportTokenizer& t) {
  using gguf::Array;
  using gguf::Value;
  const gguf::TokenizerData& d = t.data;
  w.add("tokenizer.ggml.model", Value{d.model});
  if (!d.pre.empty()) w.add("tokenizer.ggml.pre", Value{d.pre});
  w.add("tokenizer.ggml.tokens", Value{Array{d.tokens}});
  if (!d.scores.empty()) w.add("tokenizer.ggml.scores", Value{Array{d.scores}});
  if (!d.tokenTypes.empty()) w.add("tokenizer.ggml.token_type", Value{Array{d.tokenTypes}});
  if (!d.merges.empty()) w.add("tokenizer.ggml.merges", Value{Array{d.merges}});
  auto id = [&](const char* key, std::optional<std::int32_t> v) {
    if (v) w.add(key, Value{static_cast<std::uint32_t>(*v)});
  };
  id("tokenizer.ggml.bos_token_id", d.bosId);
  id("tokenizer.ggml.eos_token_id", d.eosId);
  id("tokenizer.ggml.unknown_token_id", d.unknownId);
  id("tokenizer.ggml.padding_token_id", d.paddingId);
  id("tokenizer.ggml.seperator_token_id", d.separatorId);
  id("tokenizer.ggml.eot_token_id", d.eotId);
  id("tokenizer.ggml.eom_token_id", d.eomId);
  if (d.addBos) w.add("tokenizer.ggml.add_bos_token", Value{*d.addBos});
  if (d.addEos) w.add("tokenizer.ggml.add_eos_token", Value{*d.addEos});
  if (d.addSpacePrefix) w.add("tokenizer.ggml.add_space_prefix", Value{*d.addSpacePrefix});
  if (d.chatTemplate) w.add("tokenizer.chat_template", Value{*d.chatTemplate});
  for (const auto& [name, text] : t.namedTemplates) w.add("tokenizer.chat_template." + name, Value{text});
}

}  // namespace linnet::exporter
