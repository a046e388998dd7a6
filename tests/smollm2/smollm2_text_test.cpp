// SmolLM2's tokenizer and chat template, read from the GGUF file's metadata,
// against transformers' own GGUF tokenizer (tests/smollm2/make_text_fixtures.py):
// 2,000 strings encoded and decoded, and chat renderings byte for byte.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "chat/chat_template.h"
#include "nest/text.h"

namespace {

std::string modelPath() {
  std::ifstream in(std::string(LINNET_TEST_DATA) + "/smollm2/greedy.json");
  return std::string(LINNET_SOURCE_DIR) + "/" + nlohmann::json::parse(in)["model"].get<std::string>();
}

std::vector<nlohmann::json> xzLines(const std::string& path) {
  std::vector<nlohmann::json> out;
  FILE* pipe = popen(("xz -dc '" + path + "'").c_str(), "r");
  REQUIRE(pipe);
  std::string text;
  char buffer[65536];
  for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) text.append(buffer, n);
  REQUIRE(pclose(pipe) == 0);
  size_t start = 0;
  for (size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1)
    out.push_back(nlohmann::json::parse(text.substr(start, end - start)));
  return out;
}

}  // namespace

TEST_CASE("SmolLM2's tokenizer from GGUF equals transformers'", "[smollm2][tokenizer]") {
  auto text = linnet::nest::loadText(modelPath());
  auto cases = xzLines(std::string(LINNET_TEST_DATA) + "/smollm2/tokenizer_cases.jsonl.xz");
  REQUIRE(cases.size() == 2000);
  size_t same = 0, roundTrips = 0;
  for (const auto& c : cases) {
    std::string s = c["text"].get<std::string>();
    std::vector<int32_t> ids = text.tokenizer.encode(s, false);
    std::vector<int32_t> want = c["ids"].get<std::vector<int32_t>>();
    if (ids == want) ++same;
    else FAIL_CHECK("encode(" << nlohmann::json(s).dump() << ")");
    if (text.tokenizer.decode(want) == c["decoded"].get<std::string>()) ++roundTrips;
  }
  CHECK(same == cases.size());
  CHECK(roundTrips == cases.size());
  CHECK(text.stopIds.size() >= 1);
}

TEST_CASE("SmolLM2's chat template renders as transformers'", "[smollm2][chat]") {
  auto text = linnet::nest::loadText(modelPath());
  REQUIRE(text.chatTemplate.has_value());
  std::ifstream in(std::string(LINNET_TEST_DATA) + "/smollm2/chat_cases.json");
  nlohmann::ordered_json fixture = nlohmann::ordered_json::parse(in);
  for (const auto& c : fixture["cases"]) {
    std::string got = linnet::chat::applyChatTemplate(*text.chatTemplate, c["messages"],
                                                      c["add_generation_prompt"].get<bool>(),
                                                      fixture["special_tokens"]);
    CHECK(got == c["text"].get<std::string>());
  }
}
