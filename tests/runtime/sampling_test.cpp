// Sampling on a row of logits: greedy, seeds, top-k, top-p, min-p and the
// repetition penalty, with fixed seeds (so every result here is exact).
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <map>

#include "gguf_test_util.h"
#include "nest/text.h"

using linnet::nest::Sampling;
using linnet::nest::DType;
using linnet::nest::Tensor;

namespace {

Tensor row(std::vector<double> logits) {
  return Tensor::fromFloats(DType::F32, {1, static_cast<int64_t>(logits.size())}, logits);
}

// Logits whose softmax is exactly `p`.
Tensor fromProbabilities(const std::vector<double>& p) {
  std::vector<double> l;
  for (double x : p) l.push_back(std::log(x));
  return row(l);
}

std::map<int32_t, int> draw(const Tensor& logits, const Sampling& s, int n) {
  std::mt19937_64 rng(s.seed);
  std::map<int32_t, int> counts;
  for (int k = 0; k < n; ++k) ++counts[linnet::nest::sampleToken(logits, s, rng)];
  return counts;
}

}  // namespace

TEST_CASE("temperature 0 is greedy", "[sampling]") {
  std::mt19937_64 rng(1);
  CHECK(linnet::nest::sampleToken(row({0.1, 3.0, 2.9}), {}, rng) == 1);
}

TEST_CASE("a seed reproduces a run", "[sampling]") {
  Sampling s{.temperature = 1.0, .seed = 42};
  Tensor logits = fromProbabilities({0.25, 0.25, 0.25, 0.25});
  CHECK(draw(logits, s, 200) == draw(logits, s, 200));
}

TEST_CASE("plain sampling follows the softmax", "[sampling]") {
  auto counts = draw(fromProbabilities({0.5, 0.3, 0.2}), {.temperature = 1.0, .seed = 7}, 20000);
  CHECK(std::abs(counts[0] / 20000.0 - 0.5) < 0.02);
  CHECK(std::abs(counts[1] / 20000.0 - 0.3) < 0.02);
  CHECK(std::abs(counts[2] / 20000.0 - 0.2) < 0.02);
}

TEST_CASE("top-k, top-p and min-p keep only the likely tokens", "[sampling]") {
  Tensor logits = fromProbabilities({0.5, 0.3, 0.2});
  auto k1 = draw(logits, {.temperature = 1.0, .topK = 1, .seed = 3}, 500);
  CHECK(k1.size() == 1);
  CHECK(k1[0] == 500);
  auto p5 = draw(logits, {.temperature = 1.0, .topP = 0.5, .seed = 3}, 500);
  CHECK(p5.size() == 1);  // token 0 alone reaches 0.5
  auto p7 = draw(logits, {.temperature = 1.0, .topP = 0.7, .seed = 3}, 2000);
  CHECK(p7.size() == 2);
  CHECK(p7.count(2) == 0);
  auto minP = draw(logits, {.temperature = 1.0, .minP = 0.5, .seed = 3}, 2000);
  CHECK(minP.count(2) == 0);  // 0.2 < 0.5 * 0.5
  CHECK(minP.count(1) == 1);  // 0.3 >= 0.25
}

TEST_CASE("the repetition penalty discourages tokens in the context", "[sampling]") {
  std::mt19937_64 rng(0);
  Tensor logits = row({2.0, 1.9, -1.0});
  CHECK(linnet::nest::sampleToken(logits, {}, rng, {0}) == 0);
  CHECK(linnet::nest::sampleToken(logits, {.repetitionPenalty = 2.0}, rng, {0, 0}) == 1);
  // A negative logit is multiplied: -1.0 -> -2.0, still last.
  Tensor negative = row({-1.0, -1.5});
  CHECK(linnet::nest::sampleToken(negative, {.repetitionPenalty = 2.0}, rng, {0}) == 1);
}

#include <stdexcept>
#include <string>

#include "temp_dir.h"

TEST_CASE("text: chat template errors name the tokenizer_config.json they came from", "[text]") {
  linnet::test::TempDir dir;
  dir.write("tokenizer.json", R"({"version": "1.0", "added_tokens": [], "normalizer": null, "pre_tokenizer": null,
      "post_processor": null, "decoder": null,
      "model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": []}})");
  dir.write("tokenizer_config.json",
            R"({"chat_template": "{% if messages|length > 1 %}{{ raise_exception('one message only') }}{% endif %}"})");
  linnet::nest::TextModel text = linnet::nest::loadText(dir.path().string());
  CHECK(text.chatTemplateSource == (dir.path() / "tokenizer_config.json").string() + " (chat_template)");
  const auto messages = nlohmann::ordered_json::parse(R"([{"role": "user", "content": "a"},
                                                          {"role": "user", "content": "b"}])");
  try {
    linnet::nest::renderChat(text, messages);
    FAIL("no exception");
  } catch (const std::exception& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("tokenizer_config.json (chat_template):1:") &&
                                          Catch::Contains("raise_exception: one message only"));
  }
}

TEST_CASE("settings out of range are refused, not sampled with", "[sampling]") {
  std::mt19937_64 rng(1);
  Tensor logits = row({0.1, 3.0});
  CHECK_THROWS_WITH(linnet::nest::sampleToken(logits, {.temperature = std::nan("")}, rng),
                    Catch::Contains("temperature nan must be a finite number >= 0"));
  CHECK_THROWS_WITH(linnet::nest::sampleToken(logits, {.temperature = 1, .topK = -5}, rng),
                    Catch::Contains("top-k -5 must be >= 0"));
  CHECK_THROWS_WITH(linnet::nest::sampleToken(logits, {.temperature = 1, .topP = 5}, rng),
                    Catch::Contains("top-p 5 must be in (0, 1]"));
  CHECK_THROWS_WITH(linnet::nest::sampleToken(logits, {.minP = 2}, rng), Catch::Contains("min-p 2"));
  CHECK_THROWS_WITH(linnet::nest::sampleToken(logits, {.repetitionPenalty = 0}, rng),
                    Catch::Contains("repetition penalty 0 must be"));
  CHECK_THROWS_WITH(linnet::nest::sampleToken(Tensor::zeros(DType::F32, {1, 0}), {}, rng),
                    Catch::Contains("the logits are empty"));
}

TEST_CASE("a tokenizer without a chat template takes the card's", "[text]") {
  std::string tokenizer = std::string(LINNET_SOURCE_DIR) + "/tests/data/tokenizer/bytebpe/tokenizer.json";
  std::string card = std::string(LINNET_SOURCE_DIR) + "/nest/tinyllama-1.1b-chat";
  linnet::nest::TextModel text = linnet::nest::loadText(tokenizer);
  REQUIRE(!text.chatTemplate);
  linnet::nest::useCardChatTemplate(text, card);
  REQUIRE(text.chatTemplate);
  CHECK(text.chatTemplateSource == card + "/chat_template.jinja");
  text.specialTokens["eos_token"] = "</s>";
  nlohmann::ordered_json messages = nlohmann::ordered_json::array({{{"role", "user"}, {"content", "Hi"}}});
  CHECK(linnet::nest::renderChat(text, messages) == "<|user|>\nHi</s>\n<|assistant|>\n");
  // The tokenizer's own template wins; a card without one changes nothing.
  text.chatTemplate = "own";
  linnet::nest::useCardChatTemplate(text, card);
  CHECK(*text.chatTemplate == "own");
  linnet::nest::TextModel bare = linnet::nest::loadText(tokenizer);
  linnet::nest::useCardChatTemplate(bare, std::string(LINNET_SOURCE_DIR) + "/nest/llama-3.1-8b-instruct");
  CHECK(!bare.chatTemplate);
}

TEST_CASE("a GGUF vocabulary's turn end stops a reply, as a tokenizer.json's does", "[text]") {
  // Gemma 3's GGUF names <eos> but no end-of-turn id; its chat template ends
  // each turn with <end_of_turn>.
  using namespace linnet::gguf::test;
  Builder g;
  g.string("tokenizer.ggml.model", "llama");
  const std::vector<std::string> tokens = {"<unk>", "<s>", "</s>", "<end_of_turn>", "a"};
  Out list;
  list.put<std::uint32_t>(8).put<std::uint64_t>(tokens.size());
  for (const std::string& t : tokens) list.str(t);
  g.key("tokenizer.ggml.tokens", 9, list.b);
  Out scores, types;
  scores.put<std::uint32_t>(6).put<std::uint64_t>(tokens.size());
  types.put<std::uint32_t>(5).put<std::uint64_t>(tokens.size());
  for (std::int32_t type : {2, 3, 3, 3, 1}) scores.put(0.0f), types.put(type);
  g.key("tokenizer.ggml.scores", 9, scores.b);
  g.key("tokenizer.ggml.token_type", 9, types.b);
  g.u32("tokenizer.ggml.bos_token_id", 1);
  g.u32("tokenizer.ggml.eos_token_id", 2);
  linnet::test::TempDir dir;
  dir.write("t.gguf", g.build());
  linnet::nest::TextModel text = linnet::nest::loadText((dir / "t.gguf").string());
  CHECK(text.stopIds == std::vector<int32_t>{2, 3});
}
