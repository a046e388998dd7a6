// The tokenizer a GGUF file carries: read from metadata into a plain struct,
// and written out as Hugging Face tokenizer.json / tokenizer_config.json.
#include <catch2/catch.hpp>

#include "gguf/tokenizer.h"
#include "gguf_test_util.h"

using namespace linnet::gguf;
using namespace linnet::gguf::test;
using Catch::Matchers::Contains;
using nlohmann::json;

TEST_CASE("SentencePiece ('llama') tokenizer from metadata", "[gguf][tokenizer]") {
  File f = File::open(dataDir() / "llama.gguf");
  TokenizerData t = readTokenizer(f);
  CHECK(t.model == "llama");
  CHECK(t.pre == "default");
  REQUIRE(t.tokens.size() == 287);
  CHECK(t.tokens[0] == "<unk>");
  CHECK(t.tokens[1] == "<s>");
  CHECK(t.tokens[3] == "<0x00>");
  CHECK(t.tokens[258] == "<0xFF>");
  CHECK(t.tokens[259] == "\xe2\x96\x81");  // "▁"
  CHECK(t.tokens[267] == "\xe2\x96\x81the");
  REQUIRE(t.scores.size() == 287);
  CHECK(t.scores[259] == 0.0f);
  CHECK(t.scores[267] == -8.0f);
  REQUIRE(t.tokenTypes.size() == 287);
  CHECK(t.typeOf(0) == TokenType::Unknown);
  CHECK(t.typeOf(1) == TokenType::Control);
  CHECK(t.typeOf(3) == TokenType::Byte);
  CHECK(t.typeOf(259) == TokenType::Normal);
  CHECK(t.merges.empty());
  CHECK(t.bosId == 1);
  CHECK(t.eosId == 2);
  CHECK(t.unknownId == 0);
  CHECK(t.paddingId == std::nullopt);
  CHECK(t.addBos == true);
  CHECK(t.addEos == false);
  CHECK(t.addSpacePrefix == true);
  REQUIRE(t.chatTemplate);
  CHECK_THAT(*t.chatTemplate, Contains("{% for message in messages %}"));

  const json j = huggingFaceTokenizerJson(t);
  CHECK(j["model"]["type"] == "BPE");
  CHECK(j["model"]["byte_fallback"] == true);
  CHECK(j["model"]["fuse_unk"] == true);
  CHECK(j["model"]["unk_token"] == "<unk>");
  CHECK(j["model"]["vocab"].size() == 287);
  CHECK(j["model"]["vocab"]["\xe2\x96\x81the"] == 267);
  CHECK(j["model"]["vocab"]["<0x41>"] == 3 + 0x41);
  // Merges generated from the scores exactly as transformers does.
  const json manifest = readJson(dataDir() / "llama.json");
  // (written as pairs; transformers' strings split at their one space)
  json generated = json::array();
  for (const std::string m : manifest["generated_merges"]) {
    REQUIRE(std::count(m.begin(), m.end(), ' ') == 1);
    generated.push_back({m.substr(0, m.find(' ')), m.substr(m.find(' ') + 1)});
  }
  CHECK(j["model"]["merges"] == generated);
  CHECK(j["normalizer"]["type"] == "Sequence");
  CHECK(j["normalizer"]["normalizers"][0] == json({{"type", "Prepend"}, {"prepend", "\xe2\x96\x81"}}));
  CHECK(j["normalizer"]["normalizers"][1]["type"] == "Replace");
  CHECK(j["pre_tokenizer"].is_null());
  CHECK(j["decoder"]["decoders"].size() == 4);
  CHECK(j["decoder"]["decoders"][3]["type"] == "Strip");
  CHECK(j["post_processor"]["single"][0]["SpecialToken"]["id"] == "<s>");
  CHECK(j["post_processor"]["special_tokens"]["<s>"]["ids"] == json::array({1}));
  REQUIRE(j["added_tokens"].size() == 3);
  CHECK(j["added_tokens"][0]["content"] == "<unk>");
  CHECK(j["added_tokens"][0]["special"] == true);
  CHECK(j["added_tokens"][2]["id"] == 2);

  const json c = huggingFaceTokenizerConfig(t);
  CHECK(c["bos_token"] == "<s>");
  CHECK(c["eos_token"] == "</s>");
  CHECK(c["unk_token"] == "<unk>");
  CHECK(c["add_bos_token"] == true);
  CHECK(c["add_eos_token"] == false);
  CHECK(c["tokenizer_class"] == "LlamaTokenizerFast");
  CHECK(c["chat_template"] == *t.chatTemplate);

  TokenizerData noPrefix = t;
  noPrefix.addSpacePrefix = false;
  const json j2 = huggingFaceTokenizerJson(noPrefix);
  CHECK(j2["normalizer"]["type"] == "Replace");
  CHECK(j2["decoder"]["decoders"].size() == 3);
}

TEST_CASE("byte-level BPE ('gpt2') tokenizer from metadata", "[gguf][tokenizer]") {
  File f = File::open(dataDir() / "tied.gguf");
  TokenizerData t = readTokenizer(f);
  CHECK(t.model == "gpt2");
  CHECK(t.source == f.label());
  CHECK(t.pre == "llama-bpe");
  REQUIRE(t.tokens.size() == 271);
  CHECK(t.tokens[65] == "A");  // the byte alphabet, in byte order
  CHECK(t.tokens[32] == "\xc4\xa0");  // byte 0x20 is "Ġ"
  CHECK(t.tokens[0] == "\xc4\x80");  // byte 0 is "Ā"
  CHECK(t.scores.empty());
  REQUIRE(t.merges.size() == 12);
  CHECK(t.merges[0] == "\xc4\xa0 t");  // "Ġ t"
  CHECK(t.bosId == 268);
  CHECK(t.eosId == 269);
  CHECK(t.paddingId == 269);
  CHECK(t.typeOf(270) == TokenType::UserDefined);
  CHECK(t.addBos == true);
  CHECK(t.addEos == std::nullopt);

  const json j = huggingFaceTokenizerJson(t);
  CHECK(j["model"]["byte_fallback"] == false);
  CHECK(j["model"]["ignore_merges"] == true);
  CHECK(j["model"]["merges"][0] == "\xc4\xa0 t");
  CHECK(j["model"]["vocab"].size() == 271);
  CHECK(j["pre_tokenizer"]["pretokenizers"][0]["type"] == "Split");
  CHECK(j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"].get<std::string>().substr(0, 28) ==
        "(?i:'s|'t|'re|'ve|'m|'ll|'d)");
  CHECK(j["pre_tokenizer"]["pretokenizers"][1]["type"] == "ByteLevel");
  CHECK(j["decoder"]["type"] == "ByteLevel");
  CHECK(j["post_processor"]["single"][0]["SpecialToken"]["id"] == "<|begin_of_text|>");
  REQUIRE(j["added_tokens"].size() == 3);
  CHECK(j["added_tokens"][2]["content"] == "<think>");
  CHECK(j["added_tokens"][2]["special"] == false);
  const json c = huggingFaceTokenizerConfig(t);
  CHECK(c["pad_token"] == "<|end_of_text|>");
  CHECK(c["tokenizer_class"] == "PreTrainedTokenizerFast");

  for (const char* pre : {"gpt-2", "", "qwen2", "smollm"}) {
    TokenizerData o = t;
    o.pre = pre;
    CHECK_NOTHROW(huggingFaceTokenizerJson(o));
  }
  TokenizerData bad = t;
  bad.pre = "starcoder2-xyz";
  CHECK_THROWS_WITH(huggingFaceTokenizerJson(bad), Contains("'starcoder2-xyz'") && Contains("not supported"));
  bad = t;
  bad.merges.clear();
  CHECK_THROWS_WITH(huggingFaceTokenizerJson(bad), Contains("needs tokenizer.ggml.merges"));
  bad = t;
  bad.model = "bert";
  CHECK_THROWS_WITH(huggingFaceTokenizerJson(bad), Contains("tied.gguf: tokenizer model 'bert'"));
  bad = t;
  bad.tokens[100] = "\xff\xfe";
  CHECK_THROWS_WITH(huggingFaceTokenizerJson(bad), Contains("tied.gguf: token 100 is not valid UTF-8"));
  CHECK_THROWS_WITH(huggingFaceTokenizerConfig(bad), Contains("token 100 is not valid UTF-8"));
  bad = t;
  bad.merges[3] = "a \xc0\x80";  // overlong
  CHECK_THROWS_WITH(huggingFaceTokenizerJson(bad), Contains("merge 3 is not valid UTF-8"));
}

TEST_CASE("mergesFromScores follows transformers' generate_merges", "[gguf][tokenizer]") {
  // Ordered by score of the merged token, then by lengths, ties in vocab order.
  std::vector<std::string> tokens = {"a", "b", "c", "ab", "bc", "abc", "\xc3\xa9", "\xc3\xa9" "a"};
  std::vector<float> scores = {0, 0, 0, -1, -2, -0.5f, 0, -3};
  CHECK(mergesFromScores(tokens, scores) ==
        std::vector<MergePair>{{"ab", "c"}, {"a", "bc"}, {"a", "b"}, {"b", "c"}, {"\xc3\xa9", "a"}});
}

TEST_CASE("tokenizer metadata errors name the file and key", "[gguf][tokenizer]") {
  CHECK_THROWS_WITH(readTokenizer(File::open(dataDir() / "types.gguf")),
                    Contains("types.gguf") && Contains("carries no tokenizer"));
  auto base = [] {
    Builder g;
    g.string("tokenizer.ggml.model", "llama");
    return g;
  };
  auto strings = [](std::vector<std::string> s) {
    Out o;
    o.put<std::uint32_t>(8).put<std::uint64_t>(s.size());
    for (auto& x : s) o.str(x);
    return o.b;
  };
  {
    Builder g = base();
    CHECK_THROWS_WITH(readTokenizer(File::parseCopy(g.build(), "t.gguf")),
                      Contains("t.gguf") && Contains("'tokenizer.ggml.tokens' is missing"));
  }
  {
    Builder g = base();
    g.key("tokenizer.ggml.tokens", 9, strings({"a", "b"}));
    g.key("tokenizer.ggml.scores", 9, Out().put<std::uint32_t>(6).put<std::uint64_t>(1).put(0.5f).b);
    CHECK_THROWS_WITH(readTokenizer(File::parseCopy(g.build(), "t.gguf")),
                      Contains("tokenizer.ggml.scores has 1 entries for 2 tokens"));
  }
  {
    Builder g = base();
    g.key("tokenizer.ggml.tokens", 9, strings({"a", "b"}));
    g.u32("tokenizer.ggml.bos_token_id", 2);
    CHECK_THROWS_WITH(readTokenizer(File::parseCopy(g.build(), "t.gguf")),
                      Contains("'tokenizer.ggml.bos_token_id' = 2 is not a token id"));
  }
  {
    Builder g = base();
    g.key("tokenizer.ggml.tokens", 9, strings({"a", "b"}));
    g.i32("tokenizer.ggml.padding_token_id", -1);  // "none": dropped
    g.key("tokenizer.ggml.token_type", 9, Out().put<std::uint32_t>(6).put<std::uint64_t>(2).put(1.0f).put(1.0f).b);
    CHECK_THROWS_WITH(readTokenizer(File::parseCopy(g.build(), "t.gguf")),
                      Contains("'tokenizer.ggml.token_type' is ARRAY of FLOAT32") && Contains("ARRAY of INT32"));
  }
  {
    Builder g = base();
    g.key("tokenizer.ggml.tokens", 9, strings({"a", "b"}));
    g.i32("tokenizer.ggml.padding_token_id", -1);
    TokenizerData t = readTokenizer(File::parseCopy(g.build(), "t.gguf"));
    CHECK(t.paddingId == std::nullopt);
    CHECK(t.addBos == std::nullopt);
    CHECK_THROWS_WITH(huggingFaceTokenizerJson(t), Contains("adds a BOS token but has no BOS token id"));
  }
}
