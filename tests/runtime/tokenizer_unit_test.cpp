// Known values, error handling, streaming, long inputs and internals of the
// tokenizer library.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tokenizer/bpe.h"
#include "tokenizer/regex.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace tokenizer_test {
using nlohmann::json;
std::string dataPath(const std::string& relative);
std::string readData(const std::string& relative);
std::vector<std::string> jsonLines(const std::string& text);
const std::vector<std::string>& fixtureStrings();
const linnet::tokenizer::Tokenizer& cachedTokenizer(const std::string& tokenizerFile, const std::string& configFile,
                                                    const json& patch);
const linnet::tokenizer::Tokenizer& llama3();
const linnet::tokenizer::Tokenizer& spbpe();
const linnet::tokenizer::Tokenizer& bytebpe();
}  // namespace tokenizer_test

namespace {

namespace tk = linnet::tokenizer;
using nlohmann::json;
using tk::Tokenizer;
using namespace tokenizer_test;
using Ids = std::vector<int32_t>;

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Loads `doc` as a tokenizer.json and returns the error (or "" if it loaded).
std::string loadError(const json& doc) {
  try {
    Tokenizer::fromJson(doc.dump(), "", "test.json");
  } catch (const tk::Error& e) {
    return e.what();
  }
  return "";
}

json smallBpe() {
  return json::parse(R"({
    "version": "1.0", "truncation": null, "padding": null,
    "added_tokens": [{"id": 0, "content": "<s>", "single_word": false, "lstrip": false, "rstrip": false,
                      "normalized": false, "special": true}],
    "normalizer": null,
    "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
      {"type": "Split", "pattern": {"Regex": "\\s+|\\w+"}, "behavior": "Isolated", "invert": false},
      {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}]},
    "post_processor": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
    "decoder": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
    "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null,
              "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false,
              "vocab": {"<s>": 0, "a": 1, "b": 2, "ab": 3, "Ġ": 4, "c": 5, "abc": 6},
              "merges": ["a b", ["ab", "c"]]}
  })");
}

}  // namespace

TEST_CASE("tokenizer: Llama 3 known values", "[tokenizer]") {
  const Tokenizer& tok = llama3();
  CHECK(tok.encode("Hello world!") == Ids{9906, 1917, 0});
  // This file's post-processor is ByteLevel only: add_special_tokens adds nothing.
  CHECK(tok.encode("Hello world!", true) == Ids{9906, 1917, 0});
  CHECK(tok.decode(Ids{9906, 1917, 0}) == "Hello world!");
  CHECK(tok.idToToken(9906) == "Hello");
  CHECK(tok.idToToken(1917) == "Ġworld");
  CHECK(tok.idToToken(-1).empty());
  CHECK(tok.idToToken(1 << 30).empty());
  CHECK(tok.tokenToId("Ġworld") == 1917);
  CHECK(tok.tokenToId("<|begin_of_text|>") == 128000);
  CHECK(tok.tokenToId("<|eot_id|>") == 128009);
  CHECK_FALSE(tok.tokenToId("no such token").has_value());
  CHECK(tok.vocabSize() == 128256);
  CHECK(tok.addedTokens().size() == 256);
  CHECK(tok.isSpecial(128009));
  CHECK_FALSE(tok.isSpecial(9906));
  // tokenizer_config.json
  CHECK(tok.bosToken() == std::optional<std::string>("<|begin_of_text|>"));
  CHECK(tok.eosToken() == std::optional<std::string>("<|end_of_text|>"));
  CHECK(tok.bosTokenId() == 128000);
  CHECK(tok.eosTokenId() == 128001);
  REQUIRE(tok.chatTemplate().has_value());
  CHECK(tok.chatTemplate()->find("<|start_header_id|>") != std::string::npos);
  // Special tokens in the text, and skipping them when decoding.
  const Ids chat = tok.encode("<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>");
  CHECK(chat == Ids{128006, 882, 128007, 271, 13347, 128009});
  CHECK(tok.decode(chat, true) == "user\n\nHi");
  // ...or encoding them as plain text.
  const Ids plain = tok.encode("<|eot_id|>", false, false);
  CHECK(plain.size() > 1);
  CHECK(tok.decode(plain) == "<|eot_id|>");
  // Digits are split in groups of three.
  const Ids digits = tok.encode("1234567");
  REQUIRE(digits.size() == 3);
  CHECK(tok.idToToken(digits[0]) == "123");
  CHECK(tok.idToToken(digits[1]) == "456");
  CHECK(tok.idToToken(digits[2]) == "7");
  CHECK(tok.encode("").empty());
  CHECK(tok.decode(Ids{}).empty());
  CHECK(tok.decode(Ids{-5, 999999, 9906}) == "Hello");  // unknown ids are skipped
  CHECK(tok.describe().find("BPE") != std::string::npos);
}

TEST_CASE("tokenizer: Llama 3.1 template adds BOS with add_special_tokens", "[tokenizer]") {
  json patch = json::array();
  patch.push_back({{"path", "/post_processor"},
                   {"value", json::parse(R"({"type": "TemplateProcessing",
      "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
      "pair": [], "special_tokens": {"<|begin_of_text|>": {"id": "<|begin_of_text|>", "ids": [128000],
      "tokens": ["<|begin_of_text|>"]}}})")}});
  const Tokenizer& tok = cachedTokenizer("llama3/tokenizer.json.xz", "", patch);
  CHECK(tok.encode("Hello world!", true) == Ids{128000, 9906, 1917, 0});
  CHECK(tok.encode("Hello world!", false) == Ids{9906, 1917, 0});
  CHECK(tok.encode("", true) == Ids{128000});
}

TEST_CASE("tokenizer: SentencePiece-style BPE known behaviour", "[tokenizer]") {
  const Tokenizer& tok = spbpe();
  CHECK(tok.tokenToId("<unk>") == 0);
  CHECK(tok.tokenToId("<s>") == 1);
  CHECK(tok.tokenToId("<0x00>") == 3);
  CHECK(tok.tokenToId("<0xFF>") == 258);
  // LlamaTokenizer config: add_bos_token true, add_eos_token false.
  const Ids a = tok.encode("Hello world", true);
  const Ids b = tok.encode("Hello world", false);
  REQUIRE(a.size() == b.size() + 1);
  CHECK(a[0] == 1);
  CHECK(tok.decode(a, true) == "Hello world");
  CHECK(tok.decode(b) == "Hello world");  // Strip removes the prepended space
  // A character outside the vocabulary falls back to its UTF-8 bytes.
  const Ids emoji = tok.encode("\xF0\x9F\xA6\x80");  // U+1F980
  REQUIRE(emoji.size() >= 4);
  CHECK(tok.idToToken(emoji[emoji.size() - 4]) == "<0xF0>");
  CHECK(tok.idToToken(emoji.back()) == "<0x80>");
  CHECK(tok.decode(emoji) == "\xF0\x9F\xA6\x80");
  CHECK(tok.eosTokenId() == 2);
}

TEST_CASE("tokenizer: transformers' Llama config decides BOS/EOS", "[tokenizer]") {
  const std::string text = readData("spbpe/tokenizer.json");
  const auto withConfig = [&](const std::string& cfg) { return Tokenizer::fromJson(text, cfg, "spbpe"); };
  const Ids base = spbpe().encode("hi");
  CHECK(withConfig(R"({"tokenizer_class": "LlamaTokenizer", "bos_token": "<s>", "eos_token": "</s>",
                       "add_eos_token": true})")
            .encode("hi", true) == [&] { Ids v{1}; v.insert(v.end(), base.begin(), base.end()); v.push_back(2); return v; }());
  CHECK(withConfig(R"({"tokenizer_class": "LlamaTokenizerFast", "bos_token": "<s>", "add_bos_token": false})")
            .encode("hi", true) == base);
  // Other classes keep tokenizer.json's post-processor (here: <s> $A).
  CHECK(withConfig(R"({"tokenizer_class": "PreTrainedTokenizerFast", "add_bos_token": false})").encode("hi", true)[0] == 1);
  CHECK_THROWS_AS(withConfig(R"({"tokenizer_class": "LlamaTokenizer", "bos_token": "<nope>"})"), tk::Error);
}

TEST_CASE("tokenizer: streaming decode holds partial UTF-8", "[tokenizer]") {
  SECTION("byte-level") {
    const Tokenizer& tok = llama3();
    // U+1F980 is several byte-level tokens; none alone is a whole character.
    const Ids ids = tok.encode("a\xF0\x9F\xA6\x80 b");
    tk::StreamDecoder sd = tok.streamDecoder();
    std::vector<std::string> pieces;
    for (int32_t id : ids) pieces.push_back(sd.push(id));
    pieces.push_back(sd.finish());
    std::string all;
    for (const auto& p : pieces) {
      CHECK(tk::unicode::isValidUtf8(p));
      CHECK(p.find("\xEF\xBF\xBD") == std::string::npos);
      all += p;
    }
    CHECK(all == "a\xF0\x9F\xA6\x80 b");
    CHECK(pieces.front() == "a");
  }
  SECTION("byte fallback") {
    const Tokenizer& tok = spbpe();
    const int32_t f0 = *tok.tokenToId("<0xF0>"), x9f = *tok.tokenToId("<0x9F>"), a6 = *tok.tokenToId("<0xA6>"),
                  x80 = *tok.tokenToId("<0x80>");
    tk::StreamDecoder sd(tok);
    CHECK(sd.push(f0).empty());
    CHECK(sd.push(x9f).empty());
    CHECK(sd.push(a6).empty());
    CHECK(sd.push(x80) == "\xF0\x9F\xA6\x80");
    CHECK(sd.finish().empty());
    // An unfinished sequence comes out as U+FFFD at the end, as decode() gives.
    CHECK(sd.push(f0).empty());
    CHECK(sd.push(x9f).empty());
    CHECK(sd.finish() == tok.decode(Ids{f0, x9f}));
  }
  SECTION("skip special tokens, unknown ids, reset") {
    const Tokenizer& tok = llama3();
    tk::StreamDecoder sd = tok.streamDecoder(true);
    CHECK(sd.push(128000).empty());
    CHECK(sd.push(-1).empty());
    CHECK(sd.push(9906) == "Hello");
    CHECK(sd.push(1917) == " world");
    sd.reset();
    CHECK(sd.push(1917) == " world");
  }
  SECTION("the decoder outlives the tokenizer object") {
    tk::StreamDecoder sd = [] {
      Tokenizer copy = spbpe();
      return copy.streamDecoder();
    }();
    CHECK(sd.push(*spbpe().tokenToId("<0x41>")) == "A");
  }
  SECTION("stream of a long generation equals decode") {
    const Tokenizer& tok = llama3();
    std::string text;
    for (size_t i = 0; i < fixtureStrings().size(); i += 13) text += fixtureStrings()[i];
    const Ids ids = tok.encode(text);
    tk::StreamDecoder sd(tok);
    std::string all;
    for (int32_t id : ids) all += sd.push(id);
    all += sd.finish();
    CHECK(all == text);
  }
  SECTION("a decoder that depends on where the text starts") {
    // Fuse then Strip two leading spaces: a context of one space decodes to
    // "" alone, so trimming the context to it lost the next space (found by
    // tokenizer_fuzzer).
    json doc = smallBpe();
    doc["decoder"] = json::parse(R"({"type": "Sequence", "decoders": [
      {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
      {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 2, "stop": 0}]})");
    const Tokenizer tok = Tokenizer::fromJson(doc.dump());
    const int32_t a = 1, space = 4;
    const Ids ids{a, space, space, a};
    REQUIRE(tok.decode(ids) == "a  a");
    tk::StreamDecoder sd(tok);
    std::string all;
    for (int32_t id : ids) all += sd.push(id);
    all += sd.finish();
    CHECK(all == "a  a");
  }
}

TEST_CASE("tokenizer: long inputs match Hugging Face and stay linear", "[tokenizer][long]") {
  const std::vector<std::string> lines = jsonLines(readData("fixtures/long.jsonl.xz"));
  const json header = json::parse(lines.at(0));
  const auto strings = header["strings"].get<std::vector<std::string>>();
  size_t checked = 0;
  for (size_t l = 1; l < lines.size(); ++l) {
    const json r = json::parse(lines[l]);
    const std::string file = r["tokenizer"].get<std::string>();
    const Tokenizer& tok = cachedTokenizer(file, "", json::array());
    const std::string& s = strings.at(r["i"].get<size_t>());
    const auto t0 = std::chrono::steady_clock::now();
    const Ids ids = tok.encode(s);
    const double seconds = secondsSince(t0);
    INFO(fmt::format("{} string {} ({} bytes): {:.3f} s", file, r["i"].get<size_t>(), s.size(), seconds));
    CHECK(ids == r["ids"].get<Ids>());
    CHECK(seconds < 5.0);  // generous: linear time is ~10-100 ms
    ++checked;
  }
  CHECK(checked == 27);
}

TEST_CASE("tokenizer: errors name the file, the JSON path and the problem", "[tokenizer][errors]") {
  SECTION("missing files") {
    try {
      Tokenizer::load("/nonexistent/dir/tokenizer.json");
      FAIL("no exception");
    } catch (const tk::Error& e) {
      CHECK(e.file() == "/nonexistent/dir/tokenizer.json");
      CHECK(std::string(e.what()).find("/nonexistent/dir/tokenizer.json") != std::string::npos);
    }
    CHECK_THROWS_AS(Tokenizer::load(dataPath("spbpe/tokenizer.json"), "/nonexistent/tokenizer_config.json"), tk::Error);
  }
  SECTION("invalid JSON") {
    const auto path = std::filesystem::temp_directory_path() / fmt::format("linnet-tok-{}.json", ::getpid());
    {
      std::ofstream(path) << "{\"model\": {\"type\": \"BPE\", \"vocab\": {";
    }
    try {
      Tokenizer::load(path.string());
      FAIL("no exception");
    } catch (const tk::Error& e) {
      CHECK(e.file() == path.string());
      CHECK(std::string(e.what()).find("invalid JSON") != std::string::npos);
    }
    std::filesystem::remove(path);
    CHECK_THROWS_AS(Tokenizer::fromJson(""), tk::Error);
    CHECK_THROWS_AS(Tokenizer::fromJson("[1, 2]"), tk::Error);
    CHECK_THROWS_AS(Tokenizer::fromJson("{}"), tk::Error);
    // A number past double's range is nlohmann's out_of_range, not a parse
    // error; it must still be a tokenizer::Error (found by tokenizer_fuzzer).
    CHECK_THROWS_AS(Tokenizer::fromJson("{\"version\": 1e999}"), tk::Error);
    CHECK_THROWS_AS(Tokenizer::fromJson(smallBpe().dump(), "{\"model_max_length\": 1e999}"), tk::Error);
  }
  SECTION("unsupported model type") {
    json doc = smallBpe();
    doc["model"]["type"] = "WordPiece";
    try {
      Tokenizer::fromJson(doc.dump(), "", "my/tokenizer.json");
      FAIL("no exception");
    } catch (const tk::Error& e) {
      CHECK(e.file() == "my/tokenizer.json");
      CHECK(e.jsonPath() == "/model/type");
      const std::string what = e.what();
      CHECK(what.find("my/tokenizer.json") != std::string::npos);
      CHECK(what.find("/model/type") != std::string::npos);
      CHECK(what.find("WordPiece") != std::string::npos);
      CHECK(what.find("unsupported") != std::string::npos);
    }
  }
  SECTION("unsupported components") {
    json doc = smallBpe();
    doc["pre_tokenizer"]["pretokenizers"][1] = {{"type", "UnicodeScripts"}};
    CHECK(loadError(doc).find("/pre_tokenizer/pretokenizers/1/type: unsupported pre-tokenizer type \"UnicodeScripts\"") !=
          std::string::npos);
    doc = smallBpe();
    doc["normalizer"] = {{"type", "Precompiled"}, {"precompiled_charsmap", "AAAA"}};
    CHECK(loadError(doc).find("/normalizer/type: unsupported normalizer type \"Precompiled\"") != std::string::npos);
    doc = smallBpe();
    doc["decoder"] = {{"type", "CTC"}};
    CHECK(loadError(doc).find("/decoder/type") != std::string::npos);
    doc = smallBpe();
    doc["post_processor"] = {{"type", "Bogus"}};
    CHECK(loadError(doc).find("/post_processor/type") != std::string::npos);
    doc = smallBpe();
    doc["truncation"] = {{"max_length", 512}};
    CHECK(loadError(doc).find("/truncation") != std::string::npos);
    doc = smallBpe();
    doc["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(unclosed";
    CHECK(loadError(doc).find("/pre_tokenizer/pretokenizers/0/pattern/Regex") != std::string::npos);
    doc = smallBpe();
    doc["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Sideways";
    CHECK(loadError(doc).find("/pre_tokenizer/pretokenizers/0/behavior") != std::string::npos);
  }
  SECTION("malformed model") {
    json doc = smallBpe();
    doc["model"]["merges"][1] = json::array({"ab", "zz"});
    CHECK(loadError(doc).find("/model/merges/1") != std::string::npos);
    doc = smallBpe();
    doc["model"]["merges"][0] = "a b c";
    CHECK(loadError(doc).find("/model/merges/0") != std::string::npos);
    doc = smallBpe();
    doc["model"]["vocab"]["a"] = "one";
    CHECK(loadError(doc).find("/model/vocab/a") != std::string::npos);
    doc = smallBpe();
    doc["model"]["vocab"] = json::array();
    CHECK(loadError(doc).find("/model/vocab: expected an object") != std::string::npos);
    doc = smallBpe();
    doc.erase("model");
    CHECK(loadError(doc).find("/model: missing required field") != std::string::npos);
    doc = smallBpe();
    doc["added_tokens"][0]["content"] = 5;
    CHECK(loadError(doc).find("/added_tokens/0/content") != std::string::npos);
    doc = smallBpe();
    doc["post_processor"] = json::parse(R"({"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<x>",
        "type_id": 0}}], "pair": [], "special_tokens": {}})");
    CHECK(loadError(doc).find("/post_processor/single/0/SpecialToken/id") != std::string::npos);
  }
  SECTION("ids far beyond the number of entries are refused") {
    // One id of 10^9 used to size a dense table of 10^9 strings (32 GB); 10^6 here (32 MB if not refused).
    json doc = smallBpe();
    doc["model"]["vocab"]["c"] = 1000000;
    const std::string what = loadError(doc);
    CHECK_THAT(what, Catch::Contains("test.json"));
    CHECK_THAT(what, Catch::Contains("/model/vocab"));
    CHECK_THAT(what, Catch::Contains("token \"c\" has id 1000000,"));
    CHECK_THAT(what, Catch::Contains("beyond the limit 65550"));
    // Small gaps stay fine.
    doc = smallBpe();
    doc["model"]["vocab"]["c"] = 1000;
    CHECK(loadError(doc) == "");
  }
  SECTION("normalizers that grow the text without bound are stopped") {
    // Chained Replace "a" -> "aaaa" grow the text 4x each (12 of them: 16.7 MB per "a"); 8 here, so that
    // the test stays small (6.5 MB) even if the limit failed.
    json doc = smallBpe();
    json items = json::array();
    for (int i = 0; i < 8; ++i)
      items.push_back({{"type", "Replace"}, {"pattern", {{"String", "a"}}}, {"content", "aaaa"}});
    doc["normalizer"] = {{"type", "Sequence"}, {"normalizers", items}};
    const Tokenizer tok = Tokenizer::fromJson(doc.dump(), "", "grow/tokenizer.json");
    try {
      tok.encode(std::string(100, 'a'));
      FAIL("no exception");
    } catch (const tk::Error& e) {
      const std::string what = e.what();
      CHECK(e.file() == "grow/tokenizer.json");
      CHECK_THAT(what, Catch::Contains("grow/tokenizer.json"));
      CHECK_THAT(what, Catch::Contains("/normalizer/normalizers/"));
      CHECK_THAT(what, Catch::Contains("the Replace normalizer grows the text beyond 5696 bytes (16 x the input's 100 bytes + 4096)"));
    }
    // Modest growth is fine.
    CHECK_FALSE(tok.encode("b").empty());
  }
  SECTION("decoders that grow the text without bound are stopped") {
    json doc = smallBpe();
    json items = json::array();
    for (int i = 0; i < 8; ++i)
      items.push_back({{"type", "Replace"}, {"pattern", {{"String", "a"}}}, {"content", "aaaa"}});
    doc["decoder"] = {{"type", "Sequence"}, {"decoders", items}};
    const Tokenizer tok = Tokenizer::fromJson(doc.dump(), "", "grow/tokenizer.json");
    try {
      tok.decode(Ids(100, 1));  // 100 x "a"
      FAIL("no exception");
    } catch (const tk::Error& e) {
      const std::string what = e.what();
      CHECK_THAT(what, Catch::Contains("grow/tokenizer.json"));
      CHECK_THAT(what, Catch::Contains("/decoder/decoders/"));
      CHECK_THAT(what, Catch::Contains("the Replace decoder grows the text beyond 5696 bytes"));
    }
    CHECK(tok.decode(Ids{2}) == "b");
  }
  SECTION("config errors") {
    CHECK_THROWS_AS(Tokenizer::fromJson(smallBpe().dump(), "{not json"), tk::Error);
    CHECK_THROWS_AS(Tokenizer::fromJson(smallBpe().dump(), R"({"bos_token": 3})"), tk::Error);
  }
  SECTION("invalid UTF-8 input") {
    const Tokenizer tok = Tokenizer::fromJson(smallBpe().dump());
    CHECK_THROWS_AS(tok.encode("ab\xC3"), tk::Error);
    CHECK_THROWS_AS(tok.encode("\xED\xA0\x80"), tk::Error);  // a surrogate
    CHECK(tok.encode("abc ab") == Ids{6, 4, 3});
  }
}

TEST_CASE("tokenizer: mangled tokenizer.json never crashes", "[tokenizer][errors]") {
  // Random edits of a real (small) tokenizer.json: each load either works or
  // throws tokenizer::Error, and whatever loads can encode and decode.
  const json base = json::parse(readData("spbpe/tokenizer.json"));
  json small = base;
  small["model"]["merges"] = json::array();
  {
    json v = json::object();
    int n = 0;
    for (auto it = base["model"]["vocab"].begin(); it != base["model"]["vocab"].end() && n < 400; ++it, ++n)
      v[it.key()] = it.value();
    small["model"]["vocab"] = v;
  }
  small["model"]["vocab"]["<0x41>"] = 500;
  const json replacements[] = {nullptr, 0, -3, 1.5, true, "", "x", "BPE", json::array(), json::object(),
                               json::array({"a", "b"}), json::object({{"type", "Sequence"}})};
  std::mt19937 rng(12345);
  const auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  size_t loaded = 0, rejected = 0;
  for (int round = 0; round < 400; ++round) {
    json doc = (round % 4 == 0) ? json::parse(readData("bytebpe/tokenizer.json")) : small;
    for (int edit = 0; edit < 1 + round % 3; ++edit) {
      // Walk to a random node (not into the big vocab/merges) and replace it.
      json* node = &doc;
      std::string path;
      for (int depth = 0; depth < 4 && (node->is_object() || node->is_array()) && !node->empty(); ++depth) {
        if (node->is_object()) {
          auto it = node->begin();
          std::advance(it, static_cast<ptrdiff_t>(pick(node->size())));
          if (it.key() == "vocab" || it.key() == "merges") break;
          path += "/" + it.key();
          node = &it.value();
        } else {
          const size_t i = pick(node->size());
          path += fmt::format("/{}", i);
          node = &(*node)[i];
        }
        if (pick(3) == 0) break;
      }
      *node = replacements[pick(std::size(replacements))];
    }
    try {
      const Tokenizer tok = Tokenizer::fromJson(doc.dump(), "", "mangled.json");
      ++loaded;
      for (const char* s : {"Hello world!", "  <s>x</s> \xF0\x9F\x98\x80 123", ""}) {
        try {
          const Ids ids = tok.encode(s, true);
          (void)tok.decode(ids);
          (void)tok.decode(ids, true);
        } catch (const tk::Error&) {
        }
      }
      (void)tok.decode(Ids{0, 1, 2, 3, 500, 100000, -1});
    } catch (const tk::Error&) {
      ++rejected;
    }
  }
  CHECK(loaded + rejected == 400);
  CHECK(loaded > 0);
  CHECK(rejected > 0);
}

TEST_CASE("tokenizer: Unicode helpers match tokenizers' normalizers", "[tokenizer][unicode]") {
  namespace u = tk::unicode;
  const std::vector<std::string> lines = jsonLines(readData("fixtures/unicode.jsonl.xz"));
  size_t normalized = 0, lossy = 0, failures = 0;
  std::string firstFailure;
  for (size_t l = 1; l < lines.size(); ++l) {
    const json r = json::parse(lines[l]);
    const auto check = [&](const std::string& got, const std::string& want, const char* what) {
      if (got == want) return;
      if (failures++ == 0) firstFailure = fmt::format("{}: {} -> {} expected {}", what, lines[l], json(got).dump(), json(want).dump());
    };
    if (r.contains("s")) {
      ++normalized;
      const std::string s = r["s"].get<std::string>();
      const auto field = [&](const char* k) { return r.contains(k) ? r[k].get<std::string>() : s; };
      check(u::normalize(s, u::NormalForm::NFC), field("nfc"), "NFC");
      check(u::normalize(s, u::NormalForm::NFD), field("nfd"), "NFD");
      check(u::normalize(s, u::NormalForm::NFKC), field("nfkc"), "NFKC");
      check(u::normalize(s, u::NormalForm::NFKD), field("nfkd"), "NFKD");
      check(u::lowercase(s), field("lower"), "lowercase");
    } else {
      ++lossy;
      const std::string hex = r["bytes"].get<std::string>();
      std::string bytes;
      for (size_t i = 0; i + 1 < hex.size(); i += 2) bytes.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
      const std::string want = r["lossy"].get<std::string>();
      check(u::utf8Lossy(bytes), want, "lossy");
      CHECK(u::isValidUtf8(bytes) == (want == bytes));
      // Everything before the complete prefix converts the same on its own.
      const size_t k = u::completeUtf8Prefix(bytes);
      const std::string head = u::utf8Lossy(bytes.substr(0, k));
      check(want.substr(0, head.size()), head, "complete prefix");
    }
  }
  INFO(firstFailure);
  CHECK(normalized > 5000);
  CHECK(lossy >= 1500);
  CHECK(failures == 0);
  CHECK(std::string(u::tablesVersion()).find(json::parse(lines[0])["tokenizers_version"].get<std::string>()) !=
        std::string::npos);
}

TEST_CASE("tokenizer: regex translation follows Oniguruma", "[tokenizer][regex]") {
  using tk::detail::Regex;
  using tk::detail::RegexFlavor;
  const Regex space("\\s", RegexFlavor::Oniguruma);
  CHECK(space.search("\xC2\x85"));          // U+0085 is \s in Oniguruma
  CHECK_FALSE(space.search("\xE1\xA0\x8E"));  // U+180E is not (PCRE2's UCP \s says it is)
  CHECK_FALSE(space.search("\xE2\x80\x8B"));  // U+200B
  const Regex notSpace("[^\\S]", RegexFlavor::Oniguruma);
  CHECK(notSpace.search("\xE3\x80\x80"));
  const Regex hex("^\\h+$", RegexFlavor::Oniguruma);
  CHECK(hex.search("0fA9"));
  CHECK_FALSE(hex.search("xyz"));
  const Regex dotall("(?m:a.b)", RegexFlavor::Oniguruma);  // Ruby's m = dot matches newline
  CHECK(dotall.search("a\nb"));
  const Regex caseless("(?i:'s)", RegexFlavor::Oniguruma);
  CHECK(caseless.search("'S"));
  std::vector<std::pair<size_t, size_t>> m;
  Regex("a*", RegexFlavor::Oniguruma).findAll("baab", m);  // empty matches, as onig's find_iter
  CHECK(m == std::vector<std::pair<size_t, size_t>>{{0, 0}, {1, 3}, {4, 4}});
  CHECK_THROWS_AS(Regex("[a", RegexFlavor::Oniguruma), tk::detail::RegexError);
  CHECK_THROWS_AS(Regex("[a&&b]", RegexFlavor::Oniguruma), tk::detail::RegexError);
}

TEST_CASE("tokenizer: BPE merge loops agree", "[tokenizer][bpe]") {
  // The short-word loop and the heap loop must merge identically.
  const json doc = json::parse(readData("bytebpe/tokenizer.json"));
  std::vector<std::pair<std::string, int32_t>> vocab;
  for (auto it = doc["model"]["vocab"].begin(); it != doc["model"]["vocab"].end(); ++it)
    vocab.emplace_back(it.key(), it.value().get<int32_t>());
  std::vector<std::pair<std::string, std::string>> merges;
  for (const json& m : doc["model"]["merges"]) merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
  const tk::detail::BpeModel model(vocab, merges, {});
  // Words made of frequent byte-level pieces so that many merges apply.
  std::vector<std::string> alphabet;
  for (const auto& [t, id] : vocab)
    if (id < 600) alphabet.push_back(t);
  std::mt19937 rng(7);
  size_t words = 0;
  for (int n = 0; n < 3000; ++n) {
    std::string w;
    const size_t len = 1 + rng() % 40;
    for (size_t k = 0; k < len; ++k) w += alphabet[rng() % alphabet.size()];
    Ids a, b;
    model.tokenizeUncached(w, a, false);
    model.tokenizeUncached(w, b, true);
    INFO(w);
    REQUIRE(a == b);
    Ids c;
    model.tokenize(w, c);
    model.tokenize(w, c);  // second time from the cache
    REQUIRE(c.size() == 2 * a.size());
    REQUIRE(Ids(c.begin(), c.begin() + static_cast<ptrdiff_t>(a.size())) == a);
    REQUIRE(Ids(c.begin() + static_cast<ptrdiff_t>(a.size()), c.end()) == a);
    ++words;
  }
  CHECK(words == 3000);
}

TEST_CASE("tokenizer: concurrent encoding", "[tokenizer]") {
  const Tokenizer& tok = llama3();
  const auto& strings = fixtureStrings();
  std::vector<Ids> expected;
  for (const auto& s : strings) expected.push_back(tok.encode(s));
  std::atomic<size_t> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (size_t i = static_cast<size_t>(t); i < strings.size(); i += 2)
        if (tok.encode(strings[i]) != expected[i]) ++mismatches;
    });
  for (auto& th : threads) th.join();
  CHECK(mismatches == 0);
}
