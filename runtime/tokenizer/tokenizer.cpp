#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include <fmt/format.h>

#include "tokenizer/bpe.h"
#include "tokenizer/components.h"
#include "tokenizer/unicode.h"

namespace linnet::tokenizer {

namespace {

std::string errorMessage(const std::string& file, const std::string& path, const std::string& message) {
  std::string m;
  if (!file.empty()) m += file + ": ";
  if (!path.empty()) m += path + ": ";
  return m + message;
}

}  // namespace

Error::Error(std::string file, std::string jsonPath, const std::string& message)
    : std::runtime_error(errorMessage(file, jsonPath, message)), file_(std::move(file)), jsonPath_(std::move(jsonPath)) {}

namespace detail {

namespace {

// Byte trie of added tokens for leftmost-longest matching.
class AddedTrie {
 public:
  bool empty() const { return nodes_.size() <= 1; }
  void add(std::string_view s, int32_t tokenIndex) {
    if (nodes_.empty()) nodes_.emplace_back();
    first_[static_cast<unsigned char>(s[0])] = true;
    size_t n = 0;
    for (char c : s) {
      const auto b = static_cast<unsigned char>(c);
      int32_t child = findChild(n, b);
      if (child < 0) {
        child = static_cast<int32_t>(nodes_.size());
        nodes_[n].children.emplace_back(b, child);
        nodes_.emplace_back();
      }
      n = static_cast<size_t>(child);
    }
    nodes_[n].token = tokenIndex;
  }
  bool mayStart(unsigned char b) const { return first_[b]; }
  // Length of the longest token starting at text[pos] (0 if none).
  size_t longestAt(std::string_view text, size_t pos, int32_t& tokenIndex) const {
    size_t n = 0, best = 0;
    for (size_t i = pos; i < text.size(); ++i) {
      const int32_t child = findChild(n, static_cast<unsigned char>(text[i]));
      if (child < 0) break;
      n = static_cast<size_t>(child);
      if (nodes_[n].token >= 0) {
        best = i + 1 - pos;
        tokenIndex = nodes_[n].token;
      }
    }
    return best;
  }

 private:
  struct Node {
    int32_t token = -1;
    std::vector<std::pair<unsigned char, int32_t>> children;
  };
  int32_t findChild(size_t n, unsigned char b) const {
    for (const auto& [c, child] : nodes_[n].children)
      if (c == b) return child;
    return -1;
  }
  std::vector<Node> nodes_;
  bool first_[256] = {};
};

struct Segment {
  size_t start, end;
  int32_t id;  // -1: text
};

std::string readFile(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path, "", fmt::format("cannot open {}", what));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw Error(path, "", fmt::format("cannot read {}", what));
  return ss.str();
}

json parseJson(std::string_view text, const std::string& file) {
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number like 1e999
    throw Error(file, "", fmt::format("invalid JSON: {}", e.what()));
  }
}

// A token string from tokenizer_config.json: "..." or {"content": "..."}.
std::optional<std::string> configToken(const JsonContext& ctx, const json& cfg, const char* key) {
  const json* v = ctx.optionalMember(cfg, key);
  if (!v) return std::nullopt;
  if (v->is_string()) return v->get<std::string>();
  if (v->is_object()) return ctx.string(ctx.member(*v, std::string("/") + key, "content"), std::string("/") + key + "/content");
  ctx.fail(std::string("/") + key, "expected a string or an object with \"content\"");
}

}  // namespace

struct TokenizerImpl {
  std::string source;
  std::string description;
  std::unique_ptr<Normalizer> normalizer;
  std::unique_ptr<PreTokenizer> preTokenizer;
  std::unique_ptr<BpeModel> model;
  std::unique_ptr<PostProcessor> postProcessor;
  std::unique_ptr<Decoder> decoder;

  std::vector<AddedToken> added;                     // by ascending id
  std::vector<std::string> addedDecodeForm;          // parallel to `added`
  std::unordered_map<int32_t, size_t> addedIndexById;
  StringMap addedIdByContent;
  StringMap specialContents;
  AddedTrie rawTrie, normalizedTrie;
  Regex wordChar;  // Rust regex \w, for single_word

  std::optional<std::string> bosToken, eosToken, chatTemplate;
  int32_t maxId = -1;

  const std::string* tokenForDecode(int32_t id) const {
    if (auto it = addedIndexById.find(id); it != addedIndexById.end()) return &addedDecodeForm[it->second];
    return model->idToToken(id);
  }
  bool isSpecialString(const std::string& s) const { return specialContents.find(s) != nullptr; }

  bool isWordChar(std::string_view s, size_t pos) const { return wordChar.matchAt(s, pos) != std::string_view::npos; }
  bool endsWithWord(std::string_view s) const {
    if (s.empty()) return false;
    size_t i = s.size() - 1;
    while (i > 0 && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) --i;
    return isWordChar(s, i);
  }
  bool startsWithWord(std::string_view s) const { return !s.empty() && isWordChar(s, 0); }


  // AddedVocabulary::find_matches.
  void splitAdded(std::string_view s, const AddedTrie& trie, bool parseSpecial, std::vector<Segment>& out) const {
    out.clear();
    if (s.empty()) return;
    if (trie.empty()) {
      out.push_back({0, s.size(), -1});
      return;
    }
    size_t startOffset = 0;
    size_t pos = 0;
    while (pos < s.size()) {
      if (!trie.mayStart(static_cast<unsigned char>(s[pos]))) {
        ++pos;
        continue;
      }
      int32_t index = -1;
      const size_t len = trie.longestAt(s, pos, index);
      if (len == 0) {
        ++pos;
        continue;
      }
      size_t start = pos, stop = pos + len;
      pos = stop;
      const AddedToken& t = added[static_cast<size_t>(index)];
      if (!parseSpecial && t.special) continue;
      if (t.singleWord) {
        const bool startSpace = start == 0 || !endsWithWord(s.substr(0, start));
        const bool stopSpace = stop == s.size() || !startsWithWord(s.substr(stop));
        if (!startSpace || !stopSpace) continue;
      }
      if (t.lstrip) start = std::max(unicode::trailingWhitespaceStart(s.substr(0, start)), startOffset);
      if (t.rstrip) stop += unicode::leadingWhitespaceEnd(s.substr(stop));
      start = std::max(start, startOffset);
      if (startOffset < start) out.push_back({startOffset, start, -1});
      out.push_back({start, stop, t.id});
      startOffset = stop;
    }
    if (startOffset < s.size()) out.push_back({startOffset, s.size(), -1});
  }

  std::vector<int32_t> encode(std::string_view text, bool addSpecial, bool parseSpecial) const {
    if (const size_t bad = unicode::findInvalidUtf8(text); bad != std::string_view::npos)
      throw Error(fmt::format("encode: the text is not valid UTF-8 (at byte {})", bad));
    try {
      return encodeValid(text, addSpecial, parseSpecial);
    } catch (const RegexError& e) {  // e.g. a pattern that backtracks past PCRE2's limits
      throw Error(source, "", fmt::format("encode: {}", e.what()));
    }
  }

  std::vector<int32_t> encodeValid(std::string_view text, bool addSpecial, bool parseSpecial) const {
    std::vector<int32_t> ids;
    ids.reserve(text.size() / 3 + 4);
    std::vector<Segment> segments, sub;
    Pieces pieces;
    splitAdded(text, rawTrie, parseSpecial, segments);
    for (const Segment& seg : segments) {
      if (seg.id >= 0) {
        ids.push_back(seg.id);
        continue;
      }
      std::string norm(text.substr(seg.start, seg.end - seg.start));
      if (normalizer) normalizer->apply(norm);
      splitAdded(norm, normalizedTrie, parseSpecial, sub);
      for (const Segment& s2 : sub) {
        if (s2.id >= 0) {
          ids.push_back(s2.id);
          continue;
        }
        pieces.clear();
        pieces.push_back(Piece{norm.substr(s2.start, s2.end - s2.start), seg.start == 0 && s2.start == 0});
        if (preTokenizer) preTokenizer->preTokenize(pieces);
        try {
          for (const Piece& p : pieces) model->tokenize(p.text, ids);
        } catch (const std::runtime_error& e) {
          throw Error(source, "/model", fmt::format("encode: {}", e.what()));
        }
      }
    }
    if (postProcessor) postProcessor->process(ids, addSpecial);
    return ids;
  }

  std::string decode(std::span<const int32_t> ids, bool skipSpecial) const {
    try {
      return decodeTokens(ids, skipSpecial);
    } catch (const RegexError& e) {
      throw Error(source, "/decoder", fmt::format("decode: {}", e.what()));
    }
  }

  std::string decodeTokens(std::span<const int32_t> ids, bool skipSpecial) const {
    std::vector<std::string> tokens;
    tokens.reserve(ids.size());
    for (int32_t id : ids) {
      const std::string* t = tokenForDecode(id);
      if (t == nullptr) continue;
      if (skipSpecial && isSpecialString(*t)) continue;
      tokens.push_back(*t);
    }
    std::string out;
    if (!decoder) {
      for (size_t i = 0; i < tokens.size(); ++i) {
        if (i) out += ' ';
        out += tokens[i];
      }
      return out;
    }
    decoder->apply(tokens);
    for (const std::string& t : tokens) out += t;
    return out;
  }
};

namespace {

// "Sequence[Split, ByteLevel]" for a pipeline component.
std::string describeComponent(const json& v) {
  if (!v.is_object()) return "none";
  auto t = v.find("type");
  std::string name = (t != v.end() && t->is_string()) ? t->get<std::string>() : "?";
  for (const char* key : {"normalizers", "pretokenizers", "decoders", "processors"}) {
    auto it = v.find(key);
    if (it == v.end() || !it->is_array()) continue;
    std::string inner;
    for (const json& c : *it) inner += (inner.empty() ? "" : ", ") + describeComponent(c);
    name += "[" + inner + "]";
  }
  return name;
}

void parseModel(TokenizerImpl& impl, const JsonContext& ctx, const json& root) {
  const json& model = ctx.object(ctx.member(root, "", "model"), "/model");
  std::string type = "BPE";
  if (const json* t = ctx.optionalMember(model, "type")) type = ctx.string(*t, "/model/type");
  if (type != "BPE")
    ctx.fail("/model/type", fmt::format("unsupported model type {:?} (supported: BPE)", type));
  BpeOptions options;
  const auto optString = [&](const char* key) -> std::optional<std::string> {
    const json* v = ctx.optionalMember(model, key);
    if (!v) return std::nullopt;
    return ctx.string(*v, std::string("/model/") + key);
  };
  const auto optBool = [&](const char* key) {
    const json* v = ctx.optionalMember(model, key);
    return v ? ctx.boolean(*v, std::string("/model/") + key) : false;
  };
  options.unkToken = optString("unk_token");
  options.continuingSubwordPrefix = optString("continuing_subword_prefix");
  options.endOfWordSuffix = optString("end_of_word_suffix");
  options.fuseUnk = optBool("fuse_unk");
  options.byteFallback = optBool("byte_fallback");
  options.ignoreMerges = optBool("ignore_merges");
  if (const json* d = ctx.optionalMember(model, "dropout"); d && !d->is_number())
    ctx.fail("/model/dropout", "expected a number or null");
  // dropout only matters for training; encoding here is always deterministic.

  const json& vocabJson = ctx.object(ctx.member(model, "/model", "vocab"), "/model/vocab");
  std::vector<std::pair<std::string, int32_t>> vocab;
  vocab.reserve(vocabJson.size());
  for (auto it = vocabJson.begin(); it != vocabJson.end(); ++it) {
    const json& v = it.value();
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX)
      ctx.fail("/model/vocab/" + jsonPointerKey(it.key()), "expected a non-negative integer id");
    vocab.emplace_back(it.key(), static_cast<int32_t>(v.get<int64_t>()));
  }

  const json& mergesJson = ctx.array(ctx.member(model, "/model", "merges"), "/model/merges");
  std::vector<std::pair<std::string, std::string>> merges;
  merges.reserve(mergesJson.size());
  std::vector<size_t> mergeIndex;  // position in the JSON array, for errors
  mergeIndex.reserve(mergesJson.size());
  for (size_t i = 0; i < mergesJson.size(); ++i) {
    const json& m = mergesJson[i];
    if (m.is_string()) {
      const std::string& s = m.get_ref<const std::string&>();
      if (s.rfind("#version", 0) == 0) continue;
      const size_t sp = s.find(' ');
      if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
        ctx.fail(fmt::format("/model/merges/{}", i), fmt::format("a merge must be two tokens separated by one space, found {:?}", s));
      merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      ctx.fail(fmt::format("/model/merges/{}", i), "expected \"a b\" or [\"a\", \"b\"]");
    }
    mergeIndex.push_back(i);
  }
  try {
    impl.model = std::make_unique<BpeModel>(std::move(vocab), merges, std::move(options));
  } catch (const BpeMergeError& e) {
    ctx.fail(fmt::format("/model/merges/{}", mergeIndex[e.rank]), e.what());
  } catch (const std::runtime_error& e) {
    ctx.fail("/model/vocab", e.what());
  }
  impl.description = fmt::format("BPE (vocab {}, merges {}{}{})", impl.model->vocabSize(), merges.size(),
                                  impl.model->options().byteFallback ? ", byte_fallback" : "",
                                  impl.model->options().ignoreMerges ? ", ignore_merges" : "");
}

void parseAddedTokens(TokenizerImpl& impl, const JsonContext& ctx, const json& root) {
  const json* list = ctx.optionalMember(root, "added_tokens");
  if (!list) return;
  ctx.array(*list, "/added_tokens");
  // AddedVocabulary::add_tokens: a token takes the id its content already has
  // (earlier added token, then model vocabulary), else the next free id.
  const int32_t vocabSize = static_cast<int32_t>(impl.model->vocabSize());
  int32_t nextId = vocabSize;
  std::unordered_map<int32_t, size_t> byId;
  std::vector<AddedToken> tokens;
  for (size_t i = 0; i < list->size(); ++i) {
    const std::string p = fmt::format("/added_tokens/{}", i);
    const json& t = ctx.object((*list)[i], p);
    AddedToken a;
    a.content = ctx.string(ctx.member(t, p, "content"), p + "/content");
    const auto flag = [&](const char* key, bool dflt) {
      const json* v = ctx.optionalMember(t, key);
      return v ? ctx.boolean(*v, p + "/" + key) : dflt;
    };
    a.special = flag("special", false);
    a.singleWord = flag("single_word", false);
    a.lstrip = flag("lstrip", false);
    a.rstrip = flag("rstrip", false);
    a.normalized = flag("normalized", !a.special);
    if (const json* id = ctx.optionalMember(t, "id")) ctx.integer(*id, p + "/id");
    if (a.content.empty()) continue;
    if (!unicode::isValidUtf8(a.content)) ctx.fail(p + "/content", "not valid UTF-8");
    if (const int32_t* existing = impl.addedIdByContent.find(a.content)) {
      a.id = *existing;
    } else if (auto mid = impl.model->tokenToId(a.content)) {
      a.id = *mid;
    } else {
      a.id = nextId++;
    }
    impl.addedIdByContent.set(a.content, a.id);
    if (a.special) impl.specialContents.set(a.content, 1);
    if (auto it = byId.find(a.id); it != byId.end()) {
      tokens[it->second] = a;
    } else {
      byId[a.id] = tokens.size();
      tokens.push_back(a);
    }
  }
  std::sort(tokens.begin(), tokens.end(), [](const AddedToken& x, const AddedToken& y) { return x.id < y.id; });
  impl.added = std::move(tokens);
  for (size_t i = 0; i < impl.added.size(); ++i) {
    const AddedToken& a = impl.added[i];
    impl.addedIndexById[a.id] = i;
    std::string form = a.content;
    if (a.normalized && impl.normalizer) impl.normalizer->apply(form);
    impl.addedDecodeForm.push_back(form);
    if (a.normalized) {
      if (!form.empty()) impl.normalizedTrie.add(form, static_cast<int32_t>(i));
    } else {
      impl.rawTrie.add(a.content, static_cast<int32_t>(i));
    }
    impl.maxId = std::max(impl.maxId, a.id);
  }
}

void applyConfig(TokenizerImpl& impl, const json& cfg, const std::string& configName) {
  JsonContext ctx{configName};
  ctx.object(cfg, "");
  impl.bosToken = configToken(ctx, cfg, "bos_token");
  impl.eosToken = configToken(ctx, cfg, "eos_token");
  if (const json* ct = ctx.optionalMember(cfg, "chat_template")) {
    if (ct->is_string()) {
      impl.chatTemplate = ct->get<std::string>();
    } else if (ct->is_array()) {
      for (size_t i = 0; i < ct->size(); ++i) {
        const json& e = (*ct)[i];
        const std::string p = fmt::format("/chat_template/{}", i);
        if (ctx.string(ctx.member(e, p, "name"), p + "/name") == "default")
          impl.chatTemplate = ctx.string(ctx.member(e, p, "template"), p + "/template");
      }
    } else {
      ctx.fail("/chat_template", "expected a string or a list of {name, template}");
    }
  }
  // transformers' LlamaTokenizerFast / GemmaTokenizerFast rebuild the
  // post-processor from add_bos_token (default true) and add_eos_token
  // (default false); other classes use tokenizer.json's post-processor.
  std::string cls;
  if (const json* c = ctx.optionalMember(cfg, "tokenizer_class")) cls = ctx.string(*c, "/tokenizer_class");
  static const char* kLlamaLike[] = {"LlamaTokenizer", "LlamaTokenizerFast", "CodeLlamaTokenizer",
                                     "CodeLlamaTokenizerFast", "GemmaTokenizer", "GemmaTokenizerFast"};
  if (std::find(std::begin(kLlamaLike), std::end(kLlamaLike), cls) == std::end(kLlamaLike)) return;
  bool addBos = true, addEos = false;
  if (const json* v = ctx.optionalMember(cfg, "add_bos_token")) addBos = ctx.boolean(*v, "/add_bos_token");
  if (const json* v = ctx.optionalMember(cfg, "add_eos_token")) addEos = ctx.boolean(*v, "/add_eos_token");
  const auto idOf = [&](const std::optional<std::string>& tok, const char* key) -> std::vector<int32_t> {
    if (!tok) ctx.fail(std::string("/") + key, "the tokenizer class adds this token but it is not set");
    if (const int32_t* id = impl.addedIdByContent.find(*tok)) return {*id};
    if (auto id = impl.model->tokenToId(*tok)) return {*id};
    ctx.fail(std::string("/") + key, fmt::format("token {:?} is not in the vocabulary", *tok));
  };
  std::vector<int32_t> prefix, suffix;
  if (addBos) prefix = idOf(impl.bosToken, "bos_token");
  if (addEos) suffix = idOf(impl.eosToken, "eos_token");
  impl.description += fmt::format("; add_special_tokens from tokenizer_config.json ({}: bos {}, eos {})", cls,
                                  addBos, addEos);
  impl.postProcessor = makeWrapProcessor(std::move(prefix), std::move(suffix));
}

std::shared_ptr<TokenizerImpl> build(const json& root, const json* config, const std::string& source,
                                     const std::string& configName) {
  auto impl = std::make_shared<TokenizerImpl>();
  impl->source = source;
  JsonContext ctx{source};
  ctx.object(root, "");
  for (const char* key : {"truncation", "padding"})
    if (ctx.optionalMember(root, key))
      ctx.fail(std::string("/") + key, "unsupported: only null is supported (truncate or pad the ids yourself)");
  parseModel(*impl, ctx, root);
  if (const json* n = ctx.optionalMember(root, "normalizer")) impl->normalizer = parseNormalizer(ctx, *n, "/normalizer");
  if (const json* p = ctx.optionalMember(root, "pre_tokenizer"))
    impl->preTokenizer = parsePreTokenizer(ctx, *p, "/pre_tokenizer");
  if (const json* p = ctx.optionalMember(root, "post_processor"))
    impl->postProcessor = parsePostProcessor(ctx, *p, "/post_processor");
  if (const json* d = ctx.optionalMember(root, "decoder")) impl->decoder = parseDecoder(ctx, *d, "/decoder");
  impl->maxId = impl->model->maxId();
  parseAddedTokens(*impl, ctx, root);
  impl->wordChar = Regex("\\w", RegexFlavor::RustRegex);
  const auto component = [&](const char* key) {
    auto it = root.find(key);
    return it == root.end() ? std::string("none") : describeComponent(*it);
  };
  impl->description += fmt::format("; normalizer {}; pre_tokenizer {}; post_processor {}; decoder {}; {} added tokens",
                                   component("normalizer"), component("pre_tokenizer"), component("post_processor"),
                                   component("decoder"), impl->added.size());
  if (config) applyConfig(*impl, *config, configName);
  return impl;
}

std::shared_ptr<TokenizerImpl> build(std::string_view tokenizerJson, std::string_view configJson,
                                     const std::string& source, const std::string& configName) {
  const json root = parseJson(tokenizerJson, source);
  if (configJson.empty()) return build(root, nullptr, source, configName);
  const json config = parseJson(configJson, configName);
  return build(root, &config, source, configName);
}

}  // namespace

}  // namespace detail

// ---------------------------------------------------------------- Tokenizer

Tokenizer Tokenizer::load(const std::string& tokenizerJsonPath, const std::string& configPath) {
  const std::string text = detail::readFile(tokenizerJsonPath, "tokenizer.json");
  std::string config;
  if (!configPath.empty()) config = detail::readFile(configPath, "tokenizer_config.json");
  if (!configPath.empty() && config.empty()) throw Error(configPath, "", "empty tokenizer_config.json");
  return Tokenizer(detail::build(text, config, tokenizerJsonPath, configPath));
}

Tokenizer Tokenizer::fromJson(std::string_view tokenizerJson, std::string_view configJson,
                              const std::string& sourceName) {
  return Tokenizer(detail::build(tokenizerJson, configJson, sourceName, sourceName + " (config)"));
}

Tokenizer Tokenizer::fromJsonValue(const nlohmann::json& tokenizer, const nlohmann::json* config,
                                   const std::string& sourceName) {
  return Tokenizer(detail::build(tokenizer, config, sourceName, sourceName + " (config)"));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool addSpecialTokens, bool parseSpecialTokens) const {
  return impl_->encode(text, addSpecialTokens, parseSpecialTokens);
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skipSpecialTokens) const {
  return impl_->decode(ids, skipSpecialTokens);
}

std::optional<int32_t> Tokenizer::tokenToId(std::string_view token) const {
  if (const int32_t* id = impl_->addedIdByContent.find(token)) return *id;
  return impl_->model->tokenToId(token);
}

std::string Tokenizer::idToToken(int32_t id) const {
  const std::string* t = impl_->tokenForDecode(id);
  return t ? *t : std::string();
}

size_t Tokenizer::vocabSize() const { return static_cast<size_t>(impl_->maxId + 1); }

bool Tokenizer::isSpecial(int32_t id) const {
  auto it = impl_->addedIndexById.find(id);
  return it != impl_->addedIndexById.end() && impl_->added[it->second].special;
}

const std::vector<AddedToken>& Tokenizer::addedTokens() const { return impl_->added; }

std::optional<std::string> Tokenizer::bosToken() const { return impl_->bosToken; }
std::optional<std::string> Tokenizer::eosToken() const { return impl_->eosToken; }
std::optional<int32_t> Tokenizer::bosTokenId() const {
  return impl_->bosToken ? tokenToId(*impl_->bosToken) : std::nullopt;
}
std::optional<int32_t> Tokenizer::eosTokenId() const {
  return impl_->eosToken ? tokenToId(*impl_->eosToken) : std::nullopt;
}
std::optional<std::string> Tokenizer::chatTemplate() const { return impl_->chatTemplate; }

StreamDecoder Tokenizer::streamDecoder(bool skipSpecialTokens) const { return StreamDecoder(*this, skipSpecialTokens); }

std::string Tokenizer::describe() const { return impl_->description; }

// ---------------------------------------------------------------- StreamDecoder

namespace {
constexpr size_t kMaxPendingTokens = 64;

bool endsWithReplacement(const std::string& s) {
  return s.size() >= 3 && s.compare(s.size() - 3, 3, "\xEF\xBF\xBD") == 0;
}
}  // namespace

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, bool skipSpecialTokens)
    : impl_(tokenizer.impl_), skipSpecial_(skipSpecialTokens) {}

// tokenizers' DecodeStream::step: decode a window made of the tokens of the
// last emitted chunk (context) and the new ones; emit what the new tokens add
// once the text does not end in U+FFFD (an unfinished UTF-8 sequence).
std::string StreamDecoder::push(int32_t id) {
  const detail::TokenizerImpl& impl = *impl_;
  const std::string* token = impl.tokenForDecode(id);
  if (token == nullptr) return "";                                   // decode() skips it too
  if (skipSpecial_ && impl.isSpecialString(*token)) return "";      // likewise
  ids_.push_back(id);
  const std::string s = impl.decode(ids_, skipSpecial_);
  const bool force = ids_.size() - prefixIndex_ > kMaxPendingTokens;
  if (s.size() <= prefix_.size() || (endsWithReplacement(s) && !force)) return "";
  std::string out;
  if (s.compare(0, prefix_.size(), prefix_) == 0) {
    out = s.substr(prefix_.size());
  } else {
    // The new tokens changed how the context decodes (only for invalid byte
    // sequences); emit the new tokens on their own.
    out = impl.decode(std::span<const int32_t>(ids_).subspan(prefixIndex_), skipSpecial_);
  }
  // The context is the last emitted chunk alone, as tokenizers' DecodeStream
  // keeps it, once that gives this same output; a decoder that depends on
  // where the text starts (Fuse then Strip of two leading spaces, after a
  // chunk of one space) would otherwise lose text, so older context stays.
  if (lastStart_ > 0) {
    const std::string alone = impl.decode(std::span<const int32_t>(ids_).subspan(lastStart_), skipSpecial_);
    if (alone.compare(0, lastText_.size(), lastText_) == 0 && alone.substr(lastText_.size()) == out) {
      ids_.erase(ids_.begin(), ids_.begin() + static_cast<ptrdiff_t>(lastStart_));
      prefixIndex_ -= lastStart_;
      prefix_ = alone;
    } else {
      prefix_ = s;
    }
  } else {
    prefix_ = s;
  }
  lastStart_ = prefixIndex_;
  lastText_ = impl.decode(std::span<const int32_t>(ids_).subspan(lastStart_), skipSpecial_);
  prefixIndex_ = ids_.size();
  return out;
}

std::string StreamDecoder::finish() {
  std::string out;
  if (ids_.size() > prefixIndex_) {
    const std::string s = impl_->decode(ids_, skipSpecial_);
    if (s.compare(0, prefix_.size(), prefix_) == 0) out = s.substr(prefix_.size());
    else out = impl_->decode(std::span<const int32_t>(ids_).subspan(prefixIndex_), skipSpecial_);
  }
  reset();
  return out;
}

void StreamDecoder::reset() {
  ids_.clear();
  prefix_.clear();
  prefixIndex_ = 0;
  lastStart_ = 0;
  lastText_.clear();
}

}  // namespace linnet::tokenizer
