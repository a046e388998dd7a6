#include "gguf/tokenizer.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

namespace linnet::gguf {

using nlohmann::json;

namespace {

constexpr std::string_view kLlama3Split =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
    "\\s+(?!\\S)|\\s+";
constexpr std::string_view kQwen2Split =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
    "\\s+(?!\\S)|\\s+";

std::optional<std::int32_t> tokenId(const File& file, const TokenizerData& t, std::string_view key, bool required) {
  const std::optional<std::int64_t> v = file.metadata().findInt(key);
  if (!v) return std::nullopt;
  if (*v < 0 || static_cast<std::uint64_t>(*v) >= t.tokens.size()) {
    if (!required) return std::nullopt;
    throw Error(fmt::format("{}: metadata '{}' = {} is not a token id (the vocabulary has {} tokens)", file.label(), key,
                            *v, t.tokens.size()));
  }
  return static_cast<std::int32_t>(*v);
}

json addedToken(std::int32_t id, const std::string& content, bool special) {
  return json{{"id", id},         {"content", content}, {"single_word", false}, {"lstrip", false},
              {"rstrip", false},  {"normalized", false}, {"special", special}};
}

json byteLevel(bool addPrefixSpace, bool useRegex) {
  return json{{"type", "ByteLevel"}, {"add_prefix_space", addPrefixSpace}, {"trim_offsets", true}, {"use_regex", useRegex}};
}

json splitRegex(std::string_view regex) {
  return json{{"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", "Isolated"}, {"invert", false}};
}

json templateProcessing(const TokenizerData& t, bool addBos, bool addEos) {
  json single = json::array(), pair = json::array(), specials = json::object();
  auto special = [&](std::optional<std::int32_t> id, const char* what) -> std::string {
    if (!id) throw Error(fmt::format("the tokenizer adds a {} token but has no {} token id", what, what));
    const std::string& tok = t.tokens[static_cast<std::size_t>(*id)];
    specials[tok] = {{"id", tok}, {"ids", {*id}}, {"tokens", {tok}}};
    return tok;
  };
  auto seq = [](const char* id, int typeId) { return json{{"Sequence", {{"id", id}, {"type_id", typeId}}}}; };
  auto tok = [](const std::string& id, int typeId) { return json{{"SpecialToken", {{"id", id}, {"type_id", typeId}}}}; };
  std::string bos, eos;
  if (addBos) bos = special(t.bosId, "BOS");
  if (addEos) eos = special(t.eosId, "EOS");
  for (int typeId = 0; typeId < 2; ++typeId) {
    if (addBos) pair.push_back(tok(bos, typeId));
    pair.push_back(seq(typeId ? "B" : "A", typeId));
    if (addEos) pair.push_back(tok(eos, typeId));
  }
  if (addBos) single.push_back(tok(bos, 0));
  single.push_back(seq("A", 0));
  if (addEos) single.push_back(tok(eos, 0));
  return json{{"type", "TemplateProcessing"}, {"single", single}, {"pair", pair}, {"special_tokens", specials}};
}

constexpr std::size_t kMaxMergeTokenBytes = 1024;

bool validUtf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n;
    std::uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      n = 1;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (s.size() - i <= n) return false;
    for (std::size_t k = 1; k <= n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    static constexpr std::uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n + 1;
  }
  return true;
}

// JSON holds UTF-8 text only.
void requireUtf8(const TokenizerData& t) {
  for (std::size_t i = 0; i < t.tokens.size(); ++i)
    if (!validUtf8(t.tokens[i]))
      throw Error(fmt::format("token {} is not valid UTF-8, which a tokenizer.json cannot hold", i));
  for (std::size_t i = 0; i < t.merges.size(); ++i)
    if (!validUtf8(t.merges[i]))
      throw Error(fmt::format("merge {} is not valid UTF-8, which a tokenizer.json cannot hold", i));
  if (t.chatTemplate && !validUtf8(*t.chatTemplate))
    throw Error("the chat template is not valid UTF-8, which tokenizer_config.json cannot hold");
}

std::size_t codePoints(std::string_view s) {
  return static_cast<std::size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

}  // namespace

TokenType TokenizerData::typeOf(std::int32_t id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= tokenTypes.size()) return TokenType::Normal;
  return static_cast<TokenType>(tokenTypes[static_cast<std::size_t>(id)]);
}

TokenizerData readTokenizer(const File& file) {
  const Metadata& md = file.metadata();
  TokenizerData t;
  t.source = file.label();
  if (!md.contains("tokenizer.ggml.model"))
    throw Error(fmt::format("{}: the file carries no tokenizer (metadata key 'tokenizer.ggml.model' is missing)",
                            file.label()));
  t.model = md.getString("tokenizer.ggml.model");
  if (const std::string* p = md.findString("tokenizer.ggml.pre")) t.pre = *p;
  t.tokens = md.getArray("tokenizer.ggml.tokens", ValueType::String).as<std::string>();
  const std::size_t n = t.tokens.size();
  if (const Array* a = md.findArray("tokenizer.ggml.scores", ValueType::F32)) {
    if (a->size() != n)
      throw Error(fmt::format("{}: tokenizer.ggml.scores has {} entries for {} tokens", file.label(), a->size(), n));
    t.scores = a->as<float>();
  }
  if (const Array* a = md.findArray("tokenizer.ggml.token_type", ValueType::I32)) {
    if (a->size() != n)
      throw Error(fmt::format("{}: tokenizer.ggml.token_type has {} entries for {} tokens", file.label(), a->size(), n));
    t.tokenTypes = a->as<std::int32_t>();
  }
  if (const Array* a = md.findArray("tokenizer.ggml.merges", ValueType::String)) t.merges = a->as<std::string>();
  t.bosId = tokenId(file, t, "tokenizer.ggml.bos_token_id", true);
  t.eosId = tokenId(file, t, "tokenizer.ggml.eos_token_id", true);
  t.unknownId = tokenId(file, t, "tokenizer.ggml.unknown_token_id", true);
  t.paddingId = tokenId(file, t, "tokenizer.ggml.padding_token_id", false);
  t.separatorId = tokenId(file, t, "tokenizer.ggml.seperator_token_id", false);
  t.eotId = tokenId(file, t, "tokenizer.ggml.eot_token_id", false);
  t.eomId = tokenId(file, t, "tokenizer.ggml.eom_token_id", false);
  t.addBos = md.findBool("tokenizer.ggml.add_bos_token");
  t.addEos = md.findBool("tokenizer.ggml.add_eos_token");
  t.addSpacePrefix = md.findBool("tokenizer.ggml.add_space_prefix");
  if (const std::string* c = md.findString("tokenizer.chat_template")) t.chatTemplate = *c;
  return t;
}

std::vector<MergePair> mergesFromScores(const std::vector<std::string>& tokens, const std::vector<float>& scores) {
  std::unordered_map<std::string_view, std::int64_t> vocab;  // first id of each token
  std::unordered_map<std::string_view, float> score;         // last score (Python dict semantics)
  std::vector<std::string_view> order;                       // first-occurrence order
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const std::string_view tok = tokens[i];
    if (vocab.emplace(tok, static_cast<std::int64_t>(i)).second) order.push_back(tok);
    score[tok] = i < scores.size() ? scores[i] : 0.0f;
  }
  struct M {
    std::string_view l, r;
    float score;
    std::size_t ll, lr;
    std::int64_t il, ir;  // the halves' ids
  };
  std::vector<M> merges;
  std::vector<M> local;
  for (std::string_view tok : order) {
    local.clear();
    // Each split costs a lookup of both halves: quadratic in the token's
    // length. Real vocabularies stay far below this bound.
    if (tok.size() > kMaxMergeTokenBytes) continue;
    const float tokScore = score[tok];
    for (std::size_t k = 1; k < tok.size(); ++k) {
      if ((static_cast<unsigned char>(tok[k]) & 0xC0) == 0x80) continue;  // inside a code point
      const std::string_view l = tok.substr(0, k), r = tok.substr(k);
      auto il = vocab.find(l);
      if (il == vocab.end()) continue;
      auto ir = vocab.find(r);
      if (ir == vocab.end()) continue;
      local.push_back({l, r, tokScore, codePoints(l), codePoints(r), il->second, ir->second});
    }
    std::stable_sort(local.begin(), local.end(),
                     [](const M& a, const M& b) { return std::pair(a.il, a.ir) < std::pair(b.il, b.ir); });
    merges.insert(merges.end(), local.begin(), local.end());
  }
  std::stable_sort(merges.begin(), merges.end(), [](const M& a, const M& b) {
    return std::tuple(a.score, a.ll, a.lr) > std::tuple(b.score, b.ll, b.lr);
  });
  std::vector<MergePair> out;
  out.reserve(merges.size());
  for (const M& m : merges) out.emplace_back(m.l, m.r);
  return out;
}

namespace {
json tokenizerJson(const TokenizerData& t);
json tokenizerConfig(const TokenizerData& t);

template <class F>
json withSource(const TokenizerData& t, F&& f) {
  try {
    return f(t);
  } catch (const Error& e) {
    if (t.source.empty()) throw;
    throw Error(fmt::format("{}: {}", t.source, e.what()));
  }
}
}  // namespace

json huggingFaceTokenizerJson(const TokenizerData& t) { return withSource(t, tokenizerJson); }
json huggingFaceTokenizerConfig(const TokenizerData& t) { return withSource(t, tokenizerConfig); }

namespace {

json tokenizerJson(const TokenizerData& t) {
  const bool spm = t.model == "llama";
  if (!spm && t.model != "gpt2")
    throw Error(fmt::format("tokenizer model '{}' cannot be written as a tokenizer.json (supported: 'llama', 'gpt2')",
                            t.model));
  requireUtf8(t);
  json vocab = json::object();
  for (std::size_t i = 0; i < t.tokens.size(); ++i)
    if (!vocab.contains(t.tokens[i])) vocab[t.tokens[i]] = i;  // the first of duplicate tokens wins
  json merges = json::array();
  // A SentencePiece model merges by score, as llama.cpp does: merges the
  // file may also carry are not what it reads.
  if (spm) {
    // Pairs, not "a b" strings: SentencePiece vocabularies (Gemma's) have
    // tokens that hold spaces.
    for (auto& [l, r] : mergesFromScores(t.tokens, t.scores)) merges.push_back(json::array({std::move(l), std::move(r)}));
  } else if (!t.merges.empty()) {
    for (const std::string& m : t.merges) merges.push_back(m);
  } else {
    throw Error("a 'gpt2' tokenizer needs tokenizer.ggml.merges, which the file does not have");
  }

  json added = json::array();
  for (std::size_t i = 0; i < t.tokenTypes.size(); ++i) {
    const auto type = static_cast<TokenType>(t.tokenTypes[i]);
    if (type == TokenType::Control || type == TokenType::Unknown || type == TokenType::UserDefined)
      added.push_back(addedToken(static_cast<std::int32_t>(i), t.tokens[i], type != TokenType::UserDefined));
  }

  json model = {{"type", "BPE"},
                {"dropout", nullptr},
                {"unk_token", nullptr},
                {"continuing_subword_prefix", nullptr},
                {"end_of_word_suffix", nullptr},
                {"fuse_unk", spm},
                {"byte_fallback", spm},
                {"ignore_merges", false}};
  json out = {{"version", "1.0"}, {"truncation", nullptr}, {"padding", nullptr}, {"added_tokens", added}};
  if (spm) {
    if (t.unknownId) model["unk_token"] = t.tokens[static_cast<std::size_t>(*t.unknownId)];
    const bool prefix = t.addSpacePrefix.value_or(true);
    json replace = {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}};
    out["normalizer"] = prefix ? json{{"type", "Sequence"},
                                      {"normalizers", {{{"type", "Prepend"}, {"prepend", "\u2581"}}, replace}}}
                               : replace;
    out["pre_tokenizer"] = nullptr;
    out["post_processor"] = templateProcessing(t, t.addBos.value_or(true), t.addEos.value_or(false));
    json decoders = {{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
                     {{"type", "ByteFallback"}},
                     {{"type", "Fuse"}}};
    if (prefix) decoders.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
    out["decoder"] = {{"type", "Sequence"}, {"decoders", decoders}};
  } else {
    const std::string& pre = t.pre;
    out["normalizer"] = nullptr;
    if (pre.empty() || pre == "gpt-2" || pre == "gpt2") {
      out["pre_tokenizer"] = byteLevel(false, true);
    } else if (pre == "llama-bpe" || pre == "llama3" || pre == "llama-v3" || pre == "smaug-bpe" || pre == "falcon3" ||
               pre == "pixtral") {
      out["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", {splitRegex(kLlama3Split), byteLevel(false, false)}}};
      model["ignore_merges"] = true;
    } else if (pre == "qwen2" || pre == "deepseek-r1-qwen") {
      out["normalizer"] = {{"type", "NFC"}};
      out["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", {splitRegex(kQwen2Split), byteLevel(false, false)}}};
    } else if (pre == "smollm") {
      out["pre_tokenizer"] = {
          {"type", "Sequence"},
          {"pretokenizers", {{{"type", "Digits"}, {"individual_digits", true}}, byteLevel(false, true)}}};
    } else {
      throw Error(fmt::format(
          "pre-tokenizer '{}' (tokenizer.ggml.pre) is not supported; supported: gpt-2, llama-bpe, llama3, llama-v3, "
          "smaug-bpe, falcon3, pixtral, qwen2, deepseek-r1-qwen, smollm",
          pre));
    }
    out["post_processor"] = templateProcessing(t, t.addBos.value_or(false), t.addEos.value_or(false));
    out["decoder"] = byteLevel(true, true);
  }
  model["vocab"] = std::move(vocab);
  model["merges"] = std::move(merges);
  out["model"] = std::move(model);
  return out;
}

json tokenizerConfig(const TokenizerData& t) {
  requireUtf8(t);
  json c = json::object();
  auto tok = [&](const char* key, std::optional<std::int32_t> id) {
    if (id) c[key] = t.tokens[static_cast<std::size_t>(*id)];
  };
  tok("bos_token", t.bosId);
  tok("eos_token", t.eosId);
  tok("unk_token", t.unknownId);
  tok("pad_token", t.paddingId);
  const bool spm = t.model == "llama";
  c["add_bos_token"] = t.addBos.value_or(spm);
  c["add_eos_token"] = t.addEos.value_or(false);
  if (t.chatTemplate) c["chat_template"] = *t.chatTemplate;
  c["clean_up_tokenization_spaces"] = false;
  c["tokenizer_class"] = spm ? "LlamaTokenizerFast" : "PreTrainedTokenizerFast";
  return c;
}

}  // namespace

}  // namespace linnet::gguf
