// Renders every case of tests/data/chat/fixtures.json (made by
// tests/chat/make_fixtures.py with transformers' apply_chat_template) and
// compares byte for byte.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <string>

#include "chat/chat_template.h"

using linnet::chat::applyChatTemplate;
using linnet::chat::ChatTemplate;
using linnet::chat::ChatTemplateError;
using linnet::chat::RenderOptions;
using linnet::chat::TemplateRaisedError;
using linnet::chat::TemplateRuntimeError;
using json = nlohmann::ordered_json;

namespace {

std::string dataPath(const std::string& rel) { return std::string(LINNET_TEST_DATA) + "/chat/" + rel; }

std::string readFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  REQUIRE(f.good());
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

const json& fixtures() {
  static const json j = json::parse(readFile(dataPath("fixtures.json")));
  return j;
}

// The fixture's fixed clock ("YYYY-MM-DDTHH:MM:SS") as local broken-down time.
RenderOptions fixtureOptions() {
  std::string s = fixtures()["fixed_now"].get<std::string>();
  std::tm tm{};
  tm.tm_year = std::stoi(s.substr(0, 4)) - 1900;
  tm.tm_mon = std::stoi(s.substr(5, 2)) - 1;
  tm.tm_mday = std::stoi(s.substr(8, 2));
  tm.tm_hour = std::stoi(s.substr(11, 2));
  tm.tm_min = std::stoi(s.substr(14, 2));
  tm.tm_sec = std::stoi(s.substr(17, 2));
  tm.tm_isdst = -1;
  std::tm probe = tm;
  timegm(&probe);  // fills tm_wday / tm_yday
  tm.tm_wday = probe.tm_wday;
  tm.tm_yday = probe.tm_yday;
  RenderOptions o;
  o.clock = [tm] { return tm; };
  return o;
}

struct Outcome {
  bool threw = false;
  std::string output;
  std::string kind;     // exception kind for runtime errors
  std::string message;  // message() for raised and runtime errors
};

Outcome renderCase(const json& spec, const json& c) {
  const std::string source = spec["source"].get<std::string>();
  json extra = json::object();
  std::string templateText;
  if (spec["from_tokenizer_config"].get<bool>()) {
    auto cfg = linnet::chat::loadTokenizerConfig(dataPath(source));
    for (auto it = cfg.specialTokens.begin(); it != cfg.specialTokens.end(); ++it) extra[it.key()] = it.value();
    templateText = cfg.select("", c.contains("tools") && !c["tools"].is_null());
  } else {
    templateText = readFile(dataPath(source));
    for (auto it = spec["special_tokens"].begin(); it != spec["special_tokens"].end(); ++it)
      extra[it.key()] = it.value();
  }
  if (c.contains("kwargs"))
    for (auto it = c["kwargs"].begin(); it != c["kwargs"].end(); ++it) extra[it.key()] = it.value();
  if (c.contains("tools")) extra["tools"] = c["tools"];
  if (c.contains("documents")) extra["documents"] = c["documents"];

  Outcome r;
  try {
    auto tmpl = ChatTemplate::parse(templateText, source);
    r.output = applyChatTemplate(tmpl, c["messages"], c["add_generation_prompt"].get<bool>(), extra, fixtureOptions());
  } catch (const TemplateRaisedError& e) {
    r.threw = true;
    r.kind = "TemplateError";
    r.message = e.message();
  } catch (const TemplateRuntimeError& e) {
    r.threw = true;
    r.kind = e.kind();
    r.message = e.message();
  } catch (const ChatTemplateError& e) {
    r.threw = true;
    r.kind = "ChatTemplateError";
    r.message = e.what();
  }
  return r;
}

}  // namespace

TEST_CASE("chat fixtures: every case renders as transformers does", "[chat][fixtures]") {
  const json& all = fixtures();
  REQUIRE(all["templates"].size() >= 10);
  size_t total = 0;
  for (const auto& spec : all["templates"]) {
    for (const auto& c : spec["cases"]) {
      ++total;
      const std::string label = spec["source"].get<std::string>() + " / " + c["name"].get<std::string>() +
                                (c["add_generation_prompt"].get<bool>() ? " (+gen)" : "");
      INFO(label);
      Outcome r = renderCase(spec, c);
      if (c.contains("expected")) {
        INFO("error: " << r.kind << ": " << r.message);
        REQUIRE_FALSE(r.threw);
        CHECK(r.output == c["expected"].get<std::string>());
      } else {
        const std::string type = c["error"]["type"].get<std::string>();
        const std::string message = c["error"]["message"].get<std::string>();
        INFO("expected " << type << ": " << message << "; got output: " << r.output);
        REQUIRE(r.threw);
        if (type == "TemplateError" || type == "UndefinedError") {
          // raise_exception() and undefined-attribute errors carry jinja2's exact message.
          CHECK(r.kind == type);
          CHECK(r.message == message);
        }
      }
    }
  }
  CHECK(total == 610);
}

TEST_CASE("chat fixtures: the Llama 3.1 template writes its dated system block", "[chat][fixtures]") {
  std::string src = readFile(dataPath("templates/llama-3.1-8b-instruct.jinja"));
  json messages = json::parse(R"([{"role": "user", "content": "Hi"}])");
  json extra = json::parse(R"({"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"})");
  std::string out = applyChatTemplate(src, messages, true, extra);
  CHECK(out ==
        "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
        "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n<|eot_id|>"
        "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST_CASE("chat fixtures: Llama 3.2 reads today's date through strftime_now", "[chat][fixtures]") {
  std::string src = readFile(dataPath("templates/llama-3.2-3b-instruct.jinja"));
  json messages = json::parse(R"([{"role": "user", "content": "Hi"}])");
  json extra = json::parse(R"({"bos_token": "<|begin_of_text|>"})");
  RenderOptions o;
  o.clock = [] {
    std::tm tm{};
    tm.tm_year = 2031 - 1900;
    tm.tm_mon = 11;
    tm.tm_mday = 24;
    return tm;
  };
  std::string out = applyChatTemplate(src, messages, false, extra, o);
  CHECK(out.find("Today Date: 24 Dec 2031\n") != std::string::npos);
}

TEST_CASE("chat fixtures: tokenizer_config.json loading", "[chat][fixtures]") {
  auto cfg = linnet::chat::loadTokenizerConfig(dataPath("llama3/tokenizer_config.json"));
  CHECK(cfg.templates.size() == 1);
  CHECK(cfg.specialTokens["bos_token"] == "<|begin_of_text|>");
  CHECK(cfg.specialTokens["eos_token"] == "<|end_of_text|>");
  CHECK_FALSE(cfg.specialTokens.contains("pad_token"));
  CHECK(cfg.select().find("<|start_header_id|>") != std::string::npos);

  auto named = linnet::chat::loadTokenizerConfig(dataPath("named_templates_tokenizer_config.json"));
  CHECK(named.templates.size() == 2);
  CHECK(named.specialTokens["bos_token"] == "<s>");  // an AddedToken object
  CHECK(named.specialTokens["unk_token"] == "<unk>");
  CHECK_FALSE(named.specialTokens.contains("pad_token"));  // null
  CHECK(named.select("", false) == named.templates.at("default"));
  CHECK(named.select("", true) == named.templates.at("tool_use"));
  CHECK(named.select("tool_use") == named.templates.at("tool_use"));
  CHECK_THROWS_AS(named.select("nope"), ChatTemplateError);
  // Where each template came from, for the template's errors.
  const std::string namedPath = dataPath("named_templates_tokenizer_config.json");
  CHECK(named.selectSource("", true) == namedPath + " (chat_template 'tool_use')");
  CHECK(cfg.selectSource() == dataPath("llama3/tokenizer_config.json") + " (chat_template)");
  try {
    ChatTemplate::parse("{{ raise_exception('bad role') }}", cfg.selectSource()).render(json::object());
    FAIL("no exception");
  } catch (const TemplateRaisedError& e) {
    CHECK(e.message() == "bad role");
    CHECK_THAT(std::string(e.what()), Catch::Contains("llama3/tokenizer_config.json (chat_template):1:"));
    CHECK_THAT(std::string(e.what()), Catch::Contains("raise_exception: bad role"));
  }

  linnet::chat::TokenizerChatConfig none;
  CHECK_THROWS_AS(none.select(), ChatTemplateError);
  auto noDefault = linnet::chat::parseTokenizerConfig(
      json::parse(R"({"chat_template": [{"name": "a", "template": "x"}, {"name": "b", "template": "y"}]})"));
  CHECK_THROWS_WITH(noDefault.select(), Catch::Contains("multiple chat templates"));
}
