#include "export/hf_tokenizer.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "export/tokenizer_source.h"
#include "nest/nest.h"

namespace linnet::exporter {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kCopied[] = {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                                   "chat_template.jinja"};

std::string readBytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw nest::Error(fmt::format("{}: cannot read it", p.string()));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The id of a special token named by tokenizer_config.json (a string or
// {"content": ...}) in tokenizer.json's added tokens, else its vocabulary.
std::optional<std::int64_t> tokenId(const json& tokenizer, const nlohmann::ordered_json& specials, const char* key) {
  if (!specials.contains(key)) return std::nullopt;
  const auto& v = specials[key];
  std::string text = v.is_string() ? v.get<std::string>() : v.is_object() ? v.value("content", "") : "";
  if (text.empty()) return std::nullopt;
  if (tokenizer.contains("added_tokens") && tokenizer["added_tokens"].is_array())
    for (const auto& a : tokenizer["added_tokens"])
      if (a.value("content", "") == text && a.contains("id") && a["id"].is_number_integer())
        return a["id"].get<std::int64_t>();
  if (tokenizer.contains("model") && tokenizer["model"].contains("vocab") && tokenizer["model"]["vocab"].is_object()) {
    const json& vocab = tokenizer["model"]["vocab"];
    if (auto it = vocab.find(text); it != vocab.end() && it->is_number_integer()) return it->get<std::int64_t>();
  }
  return std::nullopt;
}

HfTokenizerFiles copiedFolder(const fs::path& folder) {
  HfTokenizerFiles out;
  out.source = folder.string();
  for (const char* name : kCopied)
    if (fs::is_regular_file(folder / name)) out.files.emplace_back(name, readBytes(folder / name));
  json tokenizer;
  try {
    tokenizer = json::parse(out.files.front().second);
  } catch (const json::exception& e) {
    throw nest::Error(fmt::format("{}: not JSON: {}", (folder / "tokenizer.json").string(), e.what()));
  }
  if (fs::is_regular_file(folder / "tokenizer_config.json")) {
    chat::TokenizerChatConfig config = chat::loadTokenizerConfig((folder / "tokenizer_config.json").string());
    out.bosId = tokenId(tokenizer, config.specialTokens, "bos_token");
    out.eosId = tokenId(tokenizer, config.specialTokens, "eos_token");
  }
  return out;
}

HfTokenizerFiles rebuiltFromGguf(const std::string& path) {
  ExportTokenizer t = loadExportTokenizer(path);
  HfTokenizerFiles out;
  out.source = path;
  json config = gguf::huggingFaceTokenizerConfig(t.data);
  if (!t.namedTemplates.empty() && t.data.chatTemplate) {
    // transformers' list form keeps the named templates beside the default one.
    json list = json::array({{{"name", "default"}, {"template", *t.data.chatTemplate}}});
    for (const auto& [name, text] : t.namedTemplates) list.push_back({{"name", name}, {"template", text}});
    config["chat_template"] = list;
  }
  out.files.emplace_back("tokenizer.json", gguf::huggingFaceTokenizerJson(t.data).dump(2));
  out.files.emplace_back("tokenizer_config.json", config.dump(2));
  if (t.data.bosId) out.bosId = *t.data.bosId;
  if (t.data.eosId) out.eosId = *t.data.eosId;
  return out;
}

bool hasChatTemplate(const HfTokenizerFiles& t) {
  for (const auto& [name, bytes] : t.files) {
    if (name == "chat_template.jinja") return true;
    if (name == "tokenizer_config.json" && bytes.find("\"chat_template\"") != std::string::npos) return true;
  }
  return false;
}

}  // namespace

std::optional<HfTokenizerFiles> hfTokenizerFiles(const std::string& tokenizer, const std::string& weights,
                                                 const std::string& package,
                                                 const std::function<void(const std::string&)>& note) {
  std::optional<HfTokenizerFiles> out;
  std::error_code ec;
  if (!tokenizer.empty()) {
    if (tokenizer.ends_with(".gguf")) out = rebuiltFromGguf(tokenizer);
    else {
      fs::path folder = fs::is_directory(tokenizer, ec) ? fs::path(tokenizer) : fs::path(tokenizer).parent_path();
      if (folder.empty()) folder = ".";
      if (!fs::is_regular_file(folder / "tokenizer.json", ec))
        throw nest::Error(fmt::format("--tokenizer {}: no tokenizer.json there; pass a tokenizer.json, a folder "
                                      "holding one, or a .gguf",
                                      tokenizer));
      out = copiedFolder(folder);
    }
  } else if (!weights.empty()) {
    fs::path folder = fs::is_directory(weights, ec) ? fs::path(weights) : fs::path(weights).parent_path();
    if (folder.empty()) folder = ".";
    if (fs::is_regular_file(folder / "tokenizer.json", ec)) out = copiedFolder(folder);
    else if (weights.ends_with(".gguf")) {
      // A GGUF written without a tokenizer says tokenizer.ggml.model = "none" (or has no keys).
      gguf::File file = gguf::File::open(weights);
      const std::string* model = file.metadata().findString("tokenizer.ggml.model");
      if (model && *model != "none")
        out = rebuiltFromGguf(weights);
    }
  }
  if (!out) return out;
  fs::path cardTemplate = fs::path(package) / "chat_template.jinja";
  if (!hasChatTemplate(*out) && fs::is_regular_file(cardTemplate, ec)) {
    out->files.emplace_back("chat_template.jinja", readBytes(cardTemplate));
    note(fmt::format("note: the chat template is the card's {}", cardTemplate.string()));
  }
  return out;
}

}  // namespace linnet::exporter
