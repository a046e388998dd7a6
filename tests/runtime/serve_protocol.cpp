// The OpenAI protocol of `linnet serve` (serve/protocol.h): bodies parsed
// with their limits, every request field's checks, and the shapes of the
// answers the official client reads.
#include <catch2/catch.hpp>

#include <chrono>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "serve/protocol.h"

using namespace linnet::serve;
using json = nlohmann::json;
using Catch::Matchers::Contains;

namespace {

ApiError errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const ApiError& e) {
    return e;
  }
  FAIL("no ApiError");
  return ApiError(0, "");
}

json chatBody(const json& extra = json::object()) {
  json b = {{"model", "m"}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}};
  b.update(extra);
  return b;
}
json completionBody(const json& extra = json::object()) {
  json b = {{"model", "m"}, {"prompt", "Once"}};
  b.update(extra);
  return b;
}
ApiError chatError(const json& extra) {
  return errorOf([&] { parseChatRequest(chatBody(extra)); });
}
ApiError completionError(const json& extra) {
  return errorOf([&] { parseCompletionRequest(completionBody(extra)); });
}

std::vector<std::string> keys(const json& j) {
  std::vector<std::string> out;
  for (auto it = j.begin(); it != j.end(); ++it) out.push_back(it.key());
  return out;  // nlohmann::json keeps keys sorted
}
using Keys = std::vector<std::string>;

}  // namespace

TEST_CASE("ApiError types and the error body", "[serve]") {
  CHECK(ApiError(400, "x").type == "invalid_request_error");
  CHECK(ApiError(404, "x").type == "invalid_request_error");
  CHECK(ApiError(405, "x").type == "invalid_request_error");
  CHECK(ApiError(413, "x").type == "invalid_request_error");
  CHECK(ApiError(401, "x").type == "authentication_error");
  CHECK(ApiError(500, "x").type == "server_error");
  CHECK(ApiError(503, "x").type == "server_error");
  CHECK(ApiError(503, "x", "", "", "overloaded").type == "overloaded");

  json e = errorBody(ApiError(404, "no model `x`", "model", "model_not_found"));
  CHECK(e == json::parse(R"({"error": {"message": "no model `x`", "type": "invalid_request_error",
                                       "param": "model", "code": "model_not_found"}})"));
  json plain = errorBody(ApiError(400, "bad"));
  CHECK(plain["error"]["param"].is_null());
  CHECK(plain["error"]["code"].is_null());
  // A message quoting bad bytes still writes.
  CHECK_NOTHROW(errorBody(ApiError(400, "got \xff")).dump());
}

TEST_CASE("parseBody: syntax errors, UTF-8, depth and the top level", "[serve]") {
  CHECK(parseBody(R"({"a": [1, {"b": null}]})")["a"][1]["b"].is_null());

  ApiError syntax = errorOf([] { parseBody(R"({"a": 1,})"); });
  CHECK(syntax.status == 400);
  CHECK_THAT(syntax.what(), Contains("not valid JSON") && Contains("at byte 9"));
  CHECK_THAT(syntax.what(), !Contains("json.exception"));
  CHECK_THAT(errorOf([] { parseBody(R"({"a": 1} x)"); }).what(), Contains("at byte 10"));
  CHECK_THAT(errorOf([] { parseBody(""); }).what(), Contains("empty"));
  CHECK_THAT(errorOf([] { parseBody(" \n"); }).what(), Contains("empty"));

  ApiError utf8 = errorOf([] { parseBody("{\"a\": \"x\xff\"}"); });
  CHECK(utf8.status == 400);
  CHECK_THAT(utf8.what(), Contains("not valid UTF-8") && Contains("at byte 9"));
  CHECK_THAT(errorOf([] { parseBody("{\"a\": \"\xed\xa0\x80\"}"); }).what(), Contains("UTF-8"));  // a surrogate
  CHECK_THAT(errorOf([] { parseBody("{\"a\": \"\xc0\xaf\"}"); }).what(), Contains("UTF-8"));      // overlong
  CHECK(parseBody("{\"a\": \"\xc3\xa9\xf0\x9f\x98\x80\"}")["a"] == "\xc3\xa9\xf0\x9f\x98\x80");

  ApiError overflow = errorOf([] { parseBody(R"({"temperature": 1e999})"); });
  CHECK(overflow.status == 400);
  CHECK_THAT(overflow.what(), Contains("not valid JSON") && Contains("1e999"));

  CHECK_THAT(errorOf([] { parseBody("[1]"); }).what(), Contains("JSON object") && Contains("array"));
  CHECK_THAT(errorOf([] { parseBody("\"s\""); }).what(), Contains("JSON object"));
  CHECK_THAT(errorOf([] { parseBody("3"); }).what(), Contains("JSON object"));

  auto nested = [](int levels) {  // {"a": [[...]]}, `levels` containers in all
    return R"({"a": )" + std::string(levels - 1, '[') + std::string(levels - 1, ']') + "}";
  };
  CHECK_NOTHROW(parseBody(nested(kMaxJsonDepth)));
  ApiError deep = errorOf([&] { parseBody(nested(kMaxJsonDepth + 1)); });
  CHECK(deep.status == 400);
  CHECK_THAT(deep.what(), Contains("deeper than 64"));
  std::string objects;
  for (int i = 0; i < kMaxJsonDepth + 1; ++i) objects += R"({"k": )";
  objects += "1" + std::string(kMaxJsonDepth + 1, '}');
  CHECK_THAT(errorOf([&] { parseBody(objects); }).what(), Contains("deeper"));

  auto start = std::chrono::steady_clock::now();
  ApiError huge = errorOf([] { parseBody(std::string(100000, '[')); });
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK_THAT(huge.what(), Contains("deeper"));
  CHECK(seconds < 0.5);
}

TEST_CASE("chat request: the minimal one and its defaults", "[serve]") {
  ParsedRequest r = parseChatRequest(chatBody());
  CHECK(r.endpoint == Endpoint::Chat);
  CHECK(r.model == "m");
  CHECK(!r.stream);
  CHECK(!r.includeUsage);
  CHECK(r.n == 1);
  CHECK(r.messages.dump() == R"([{"role":"user","content":"hi"}])");
  CHECK(r.params.maxTokens == -1);
  CHECK(r.params.sampling.temperature == 1.0);  // OpenAI's default
  CHECK(r.params.sampling.topP == 1.0);
  CHECK(r.params.sampling.topK == 0);
  CHECK(!r.params.seeded);
  CHECK(r.params.stops.empty());
  CHECK(!r.params.ignoreEos);
  CHECK(r.params.topLogprobs == -1);
  CHECK(!r.promptText);
  CHECK(!r.promptIds);
}

TEST_CASE("chat request: every field read", "[serve]") {
  ParsedRequest r = parseChatRequest(chatBody(json::parse(R"({
    "stream": true, "stream_options": {"include_usage": true}, "max_tokens": 7, "n": 3,
    "temperature": 0.5, "top_p": 0.9, "top_k": 40, "min_p": 0.05, "presence_penalty": -1.5,
    "frequency_penalty": 2, "repetition_penalty": 1.1, "seed": 42, "stop": ["a", "bc"],
    "ignore_eos": true, "logprobs": true, "top_logprobs": 5, "user": "u1"})")));
  CHECK(r.stream);
  CHECK(r.includeUsage);
  CHECK(r.params.maxTokens == 7);
  CHECK(r.n == 3);
  const auto& s = r.params.sampling;
  CHECK(s.temperature == 0.5);
  CHECK(s.topP == 0.9);
  CHECK(s.topK == 40);
  CHECK(s.minP == 0.05);
  CHECK(s.presencePenalty == -1.5);
  CHECK(s.frequencyPenalty == 2.0);
  CHECK(s.repetitionPenalty == 1.1);
  CHECK(s.seed == 42);
  CHECK(r.params.seeded);
  CHECK(r.params.stops == std::vector<std::string>{"a", "bc"});
  CHECK(r.params.ignoreEos);
  CHECK(r.params.topLogprobs == 5);

  CHECK(parseChatRequest(chatBody({{"temperature", 0}})).params.sampling.temperature == 0.0);
  CHECK(parseChatRequest(chatBody({{"top_k", -1}})).params.sampling.topK == 0);
  CHECK(parseChatRequest(chatBody({{"top_k", 0}})).params.sampling.topK == 0);
  CHECK(parseChatRequest(chatBody({{"logprobs", true}})).params.topLogprobs == 0);
  CHECK(parseChatRequest(chatBody({{"logprobs", false}})).params.topLogprobs == -1);
  CHECK(parseChatRequest(chatBody({{"max_completion_tokens", 9}})).params.maxTokens == 9);
  CHECK(parseChatRequest(chatBody({{"max_completion_tokens", 9}, {"max_tokens", 9}})).params.maxTokens == 9);
  CHECK(parseChatRequest(chatBody({{"stream", true}})).includeUsage == false);
  CHECK(parseChatRequest(chatBody({{"stream", true}, {"stream_options", json::object()}})).includeUsage == false);

  ParsedRequest negative = parseChatRequest(chatBody({{"seed", -1}}));
  CHECK(negative.params.seeded);
  CHECK(negative.params.sampling.seed == UINT64_MAX);
  CHECK(parseChatRequest(chatBody({{"seed", INT64_MIN}})).params.sampling.seed == (uint64_t{1} << 63));
  CHECK(parseChatRequest(chatBody({{"seed", 0}})).params.seeded);
}

TEST_CASE("request fields: wrong types and values out of range", "[serve]") {
  struct Bad {
    const char* body;  // merged into a valid chat request
    const char* param;
    const char* says;
  };
  const std::vector<Bad> cases = {
      {R"({"model": 3})", "model", "must be a string"},
      {R"({"stream": "yes"})", "stream", "must be a boolean"},
      {R"({"stream": 1})", "stream", "must be a boolean"},
      {R"({"stream_options": {"include_usage": true}})", "stream_options", "only allowed when `stream` is true"},
      {R"({"stream": false, "stream_options": {}})", "stream_options", "only allowed"},
      {R"({"stream": true, "stream_options": []})", "stream_options", "must be an object"},
      {R"({"stream": true, "stream_options": {"include_usage": 1}})", "stream_options.include_usage",
       "must be a boolean"},
      {R"({"stream": true, "stream_options": {"x": 1}})", "stream_options.x", "unknown field"},
      {R"({"max_tokens": 0})", "max_tokens", "at least 1"},
      {R"({"max_tokens": -5})", "max_tokens", "at least 1"},
      {R"({"max_tokens": 1.5})", "max_tokens", "must be an integer (got 1.5)"},
      {R"({"max_tokens": 2.0})", "max_tokens", "must be an integer"},
      {R"({"max_tokens": "8"})", "max_tokens", "must be an integer (got a string)"},
      {R"({"max_tokens": 18446744073709551615})", "max_tokens", "at least 1"},
      {R"({"max_completion_tokens": 0})", "max_completion_tokens", "at least 1"},
      {R"({"max_tokens": 5, "max_completion_tokens": 7})", "max_completion_tokens", "disagree"},
      {R"({"n": 0})", "n", "between 1 and 16"},
      {R"({"n": 17})", "n", "between 1 and 16"},
      {R"({"n": true})", "n", "must be an integer (got true)"},
      {R"({"temperature": -0.1})", "temperature", "between 0 and 2"},
      {R"({"temperature": 2.5})", "temperature", "between 0 and 2 (got 2.5)"},
      {R"({"temperature": "hot"})", "temperature", "must be a number"},
      {R"({"top_p": 0})", "top_p", "greater than 0 and at most 1"},
      {R"({"top_p": 1.01})", "top_p", "greater than 0 and at most 1"},
      {R"({"top_k": -2})", "top_k", "-1 or 0"},
      {R"({"top_k": 2147483648})", "top_k", "-1 or 0"},
      {R"({"top_k": 5.5})", "top_k", "must be an integer"},
      {R"({"min_p": -0.5})", "min_p", "between 0 and 1"},
      {R"({"min_p": 1.5})", "min_p", "between 0 and 1"},
      {R"({"presence_penalty": -2.01})", "presence_penalty", "between -2 and 2"},
      {R"({"presence_penalty": 3})", "presence_penalty", "between -2 and 2"},
      {R"({"frequency_penalty": 2.5})", "frequency_penalty", "between -2 and 2"},
      {R"({"frequency_penalty": []})", "frequency_penalty", "must be a number (got an array)"},
      {R"({"repetition_penalty": 0})", "repetition_penalty", "greater than 0 and at most 2"},
      {R"({"repetition_penalty": 2.1})", "repetition_penalty", "greater than 0 and at most 2"},
      {R"({"seed": 1.5})", "seed", "must be an integer"},
      {R"({"seed": "1"})", "seed", "must be an integer"},
      {R"({"ignore_eos": 1})", "ignore_eos", "must be a boolean"},
      {R"({"user": 5})", "user", "must be a string"},
      {R"({"logprobs": 1})", "logprobs", "must be a boolean"},
      {R"({"logprobs": true, "top_logprobs": 21})", "top_logprobs", "between 0 and 20"},
      {R"({"logprobs": true, "top_logprobs": -1})", "top_logprobs", "between 0 and 20"},
      {R"({"top_logprobs": 2})", "top_logprobs", "needs `logprobs`"},
      {R"({"logprobs": false, "top_logprobs": 2})", "top_logprobs", "needs `logprobs`"},
  };
  for (const auto& c : cases) {
    INFO(c.body);
    ApiError e = chatError(json::parse(c.body));
    CHECK(e.status == 400);
    CHECK(e.type == "invalid_request_error");
    CHECK(e.param == c.param);
    CHECK_THAT(e.what(), Contains(c.says) && Contains(std::string("`") + c.param));
  }

  // The same common fields on completions, and the legacy integer logprobs.
  CHECK(completionError({{"temperature", 3}}).param == "temperature");
  CHECK(completionError({{"n", 20}}).param == "n");
  CHECK(parseCompletionRequest(completionBody({{"max_completion_tokens", 4}})).params.maxTokens == 4);
  CHECK(parseCompletionRequest(completionBody({{"logprobs", 3}})).params.topLogprobs == 3);
  CHECK(parseCompletionRequest(completionBody({{"logprobs", 0}})).params.topLogprobs == 0);
  CHECK(parseCompletionRequest(completionBody()).params.topLogprobs == -1);
  ApiError lp = completionError({{"logprobs", 6}});
  CHECK(lp.param == "logprobs");
  CHECK_THAT(lp.what(), Contains("between 0 and 5"));
  CHECK(completionError({{"logprobs", true}}).param == "logprobs");
  CHECK_THAT(completionError({{"logprobs", 1.0}}).what(), Contains("must be an integer"));
}

TEST_CASE("request fields: required ones", "[serve]") {
  json noModel = chatBody();
  noModel.erase("model");
  ApiError e = errorOf([&] { parseChatRequest(noModel); });
  CHECK(e.param == "model");
  CHECK_THAT(e.what(), Contains("required"));
  json nullModel = chatBody({{"model", nullptr}});
  CHECK(errorOf([&] { parseChatRequest(nullModel); }).param == "model");

  json noMessages = chatBody();
  noMessages.erase("messages");
  CHECK(errorOf([&] { parseChatRequest(noMessages); }).param == "messages");
  json noPrompt = completionBody();
  noPrompt.erase("prompt");
  CHECK(errorOf([&] { parseCompletionRequest(noPrompt); }).param == "prompt");
}

TEST_CASE("request fields: null means absent", "[serve]") {
  const char* optional[] = {"stream",
                            "stream_options",
                            "max_tokens",
                            "max_completion_tokens",
                            "n",
                            "temperature",
                            "top_p",
                            "top_k",
                            "min_p",
                            "presence_penalty",
                            "frequency_penalty",
                            "repetition_penalty",
                            "seed",
                            "stop",
                            "ignore_eos",
                            "logprobs",
                            "user",
                            "tools",
                            "tool_choice",
                            "functions",
                            "function_call",
                            "response_format",
                            "logit_bias",
                            "parallel_tool_calls",
                            "top_logprobs"};
  json nulls = chatBody();
  for (const char* f : optional) nulls[f] = nullptr;
  ParsedRequest r = parseChatRequest(nulls);
  ParsedRequest d = parseChatRequest(chatBody());
  CHECK(r.n == d.n);
  CHECK(r.params.maxTokens == d.params.maxTokens);
  CHECK(r.params.sampling.temperature == d.params.sampling.temperature);
  CHECK(!r.params.seeded);
  CHECK(r.params.topLogprobs == -1);
  CHECK(r.params.stops.empty());

  json completion = completionBody(
      json::parse(R"({"logprobs": null, "echo": null, "suffix": null, "best_of": null, "logit_bias": null,
                      "max_tokens": null, "stop": null, "seed": null})"));
  CHECK(parseCompletionRequest(completion).params.topLogprobs == -1);
  // Inside stream_options too.
  CHECK(!parseChatRequest(chatBody({{"stream", true}, {"stream_options", {{"include_usage", nullptr}}}})).includeUsage);
}

TEST_CASE("request fields: unsupported and unknown ones", "[serve]") {
  for (const char* body :
       {R"({"tools": [{"type": "function", "function": {"name": "f"}}]})", R"({"tool_choice": "auto"})",
        R"({"functions": []})", R"({"function_call": "none"})", R"({"parallel_tool_calls": false})",
        R"({"logit_bias": {"12": 5}})", R"({"response_format": {"type": "json_object"}})",
        R"({"response_format": {"type": "json_schema", "json_schema": {}}})"}) {
    INFO(body);
    json extra = json::parse(body);
    std::string name = extra.begin().key();
    ApiError e = chatError(extra);
    CHECK(e.status == 400);
    CHECK(e.param == name);
    CHECK_THAT(e.what(), Contains("`" + name + "`") && Contains("not supported by this server"));
  }
  CHECK_THAT(chatError({{"tools", json::array()}}).what(), Contains("`tools` is not supported by this server"));
  CHECK_THAT(chatError({{"response_format", {{"type", "json_object"}}}}).what(), Contains("json_object"));
  CHECK(chatError({{"response_format", "text"}}).param == "response_format");
  // What asks for nothing is fine.
  CHECK_NOTHROW(parseChatRequest(chatBody({{"response_format", {{"type", "text"}}}, {"logit_bias", json::object()}})));

  for (const char* body :
       {R"({"echo": true})", R"({"suffix": "end"})", R"({"best_of": 2})", R"({"logit_bias": {"1": -100}})"}) {
    INFO(body);
    json extra = json::parse(body);
    ApiError e = completionError(extra);
    CHECK(e.param == extra.begin().key());
    CHECK_THAT(e.what(), Contains("not supported by this server"));
  }
  CHECK_NOTHROW(parseCompletionRequest(completionBody({{"echo", false}, {"best_of", 1}, {"suffix", ""}})));
  CHECK(completionError({{"echo", "yes"}}).param == "echo");
  CHECK(completionError({{"best_of", 0}}).param == "best_of");

  ApiError unknown = chatError({{"foo", 1}});
  CHECK(unknown.param == "foo");
  CHECK(std::string(unknown.what()) == "unknown field `foo`");
  CHECK(chatError({{"foo", nullptr}}).param == "foo");  // an unknown field is unknown even when null
  CHECK_THAT(chatError({{"echo", true}}).what(), Contains("unknown field `echo`"));  // completions only
  CHECK_THAT(chatError({{"prompt", "x"}}).what(), Contains("unknown field `prompt`"));
  CHECK_THAT(completionError({{"messages", json::array()}}).what(), Contains("unknown field `messages`"));
  CHECK_THAT(completionError({{"top_logprobs", 2}}).what(), Contains("unknown field `top_logprobs`"));
  CHECK_THAT(completionError({{"tools", json::array()}}).what(), Contains("unknown field `tools`"));
}

TEST_CASE("request fields: stop", "[serve]") {
  auto stops = [](const json& stop) { return parseChatRequest(chatBody({{"stop", stop}})).params.stops; };
  CHECK(stops("\n") == std::vector<std::string>{"\n"});
  CHECK(stops(json::array({"a", "b", "c", "d"})).size() == 4);
  CHECK(stops(json::array()).empty());
  CHECK(parseCompletionRequest(completionBody({{"stop", "x"}})).params.stops == std::vector<std::string>{"x"});

  for (const char* stop : {R"("")", R"(["a", ""])", R"(["a", "b", "c", "d", "e"])", R"(["a", 1])", "5", "{}"}) {
    INFO(stop);
    ApiError e = chatError({{"stop", json::parse(stop)}});
    CHECK(e.param == "stop");
    CHECK_THAT(e.what(), Contains("`stop"));
  }
  CHECK_THAT(chatError({{"stop", ""}}).what(), Contains("must not be empty"));
  CHECK_THAT(chatError({{"stop", json::array({"a", "b", "c", "d", "e"})}}).what(), Contains("at most 4"));
}

TEST_CASE("completion request: prompt forms", "[serve]") {
  auto prompt = [](const char* p) { return parseCompletionRequest(completionBody({{"prompt", json::parse(p)}})); };
  ParsedRequest text = prompt(R"("Once upon")");
  CHECK(text.endpoint == Endpoint::Completion);
  CHECK(text.promptText == std::optional<std::string>("Once upon"));
  CHECK(!text.promptIds);
  CHECK(prompt(R"([""])").promptText == std::optional<std::string>(""));
  CHECK(prompt(R"(["one"])").promptText == std::optional<std::string>("one"));
  ParsedRequest ids = prompt("[1, 2, 2147483647]");
  CHECK(!ids.promptText);
  CHECK(ids.promptIds == std::optional<std::vector<int64_t>>({1, 2, 2147483647}));
  CHECK(prompt("[[0, 5]]").promptIds == std::optional<std::vector<int64_t>>({0, 5}));

  struct Bad {
    const char* prompt;
    const char* param;
    const char* says;
  };
  for (const Bad& c : std::vector<Bad>{{"[]", "prompt", "must not be an empty array"},
                                       {R"(["a", "b"])", "prompt", "only one prompt per request"},
                                       {"[[1], [2]]", "prompt", "only one prompt per request"},
                                       {"[[]]", "prompt[0]", "must not be an empty array"},
                                       {"[1, -1]", "prompt[1]", "token id"},
                                       {"[2147483648]", "prompt[0]", "token id"},
                                       {"[1, 2.5]", "prompt[1]", "must be an integer"},
                                       {R"([1, "a"])", "prompt[1]", "must be an integer"},
                                       {"[true]", "prompt", "must be a string, an array of one string"},
                                       {"5", "prompt", "must be a string"},
                                       {"{}", "prompt", "must be a string"}}) {
    INFO(c.prompt);
    ApiError e = completionError({{"prompt", json::parse(c.prompt)}});
    CHECK(e.status == 400);
    CHECK(e.param == c.param);
    CHECK_THAT(e.what(), Contains(c.says));
  }
}

TEST_CASE("chat request: messages forms", "[serve]") {
  auto messages = [](const char* m) { return parseChatRequest(chatBody({{"messages", json::parse(m)}})).messages; };
  CHECK(messages(R"([{"role": "developer", "content": "be brief"}, {"role": "user", "content": "hi", "name": "ann"},
                     {"role": "assistant", "content": "hello"}, {"role": "system", "content": "s"}])")
            .dump() == R"([{"role":"system","content":"be brief"},{"role":"user","content":"hi"},)"
                       R"({"role":"assistant","content":"hello"},{"role":"system","content":"s"}])");
  CHECK(messages(R"([{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}])")
            .dump() == R"([{"role":"user","content":"ab"}])");
  CHECK(messages(R"([{"role": "user", "content": []}])").dump() == R"([{"role":"user","content":""}])");
  CHECK(messages(R"([{"content": "x", "role": "user"}])").dump() == R"([{"role":"user","content":"x"}])");
  // An assistant turn echoed back by a client: null content and null extras.
  CHECK(messages(R"([{"role": "assistant", "content": null, "refusal": null, "tool_calls": null}])").dump() ==
        R"([{"role":"assistant","content":""}])");

  struct Bad {
    const char* messages;
    const char* param;
    const char* says;
  };
  for (const Bad& c : std::vector<Bad>{
           {"[]", "messages", "must not be empty"},
           {R"({"role": "user"})", "messages", "must be an array"},
           {R"("hi")", "messages", "must be an array"},
           {R"(["hi"])", "messages[0]", "must be an object"},
           {R"([{"content": "x"}])", "messages[0].role", "required"},
           {R"([{"role": 1, "content": "x"}])", "messages[0].role", "must be a string"},
           {R"([{"role": "tool", "content": "x"}])", "messages[0].role", "system, user, assistant, developer"},
           {R"([{"role": "function", "content": "x"}])", "messages[0].role", "got `function`"},
           {R"([{"role": "user"}])", "messages[0].content", "required"},
           {R"([{"role": "user", "content": "a"}, {"role": "user", "content": 5}])", "messages[1].content",
            "a string or an array of text parts"},
           {R"([{"role": "user", "content": ["a"]}])", "messages[0].content[0]", "must be an object"},
           {R"([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "u"}}]}])",
            "messages[0].content[0].type", "`image_url` are not supported"},
           {R"([{"role": "user", "content": [{"text": "a"}]}])", "messages[0].content[0].type", "required"},
           {R"([{"role": "user", "content": [{"type": "text"}]}])", "messages[0].content[0].text", "required"},
           {R"([{"role": "user", "content": [{"type": "text", "text": 3}]}])", "messages[0].content[0].text",
            "must be a string"},
           {R"([{"role": "user", "content": [{"type": "text", "text": "a", "x": 1}]}])", "messages[0].content[0].x",
            "unknown field"},
           {R"([{"role": "user", "content": "x", "name": 5}])", "messages[0].name", "must be a string"},
           {R"([{"role": "user", "content": "x", "extra": 1}])", "messages[0].extra", "unknown field"},
           {R"([{"role": "assistant", "content": "", "tool_calls": []}])", "messages[0].tool_calls",
            "not supported by this server"},
       }) {
    INFO(c.messages);
    ApiError e = chatError({{"messages", json::parse(c.messages)}});
    CHECK(e.status == 400);
    CHECK(e.param == c.param);
    CHECK_THAT(e.what(), Contains(c.says));
  }
}

namespace {

ChoiceResult plainChoice(std::string text, std::string reason) { return {std::move(text), std::move(reason), {}}; }

// "é" split across two tokens, then "!".
std::vector<TokenLogprob> splitLogprobs() {
  return {{"\xc3", -0.5, {{"\xc3", -0.5}, {"\xc2", -1.5}, {"a", -2.0}}},
          {"\xa9", -0.25, {{"\xa9", -0.25}}},
          {"!", -std::numeric_limits<double>::infinity(), {}}};
}

}  // namespace

TEST_CASE("whole answers: exact shapes", "[serve]") {
  Usage usage{10, 4, 6};
  json usageExpected = json::parse(R"({"prompt_tokens": 10, "completion_tokens": 4, "total_tokens": 14,
                                       "prompt_tokens_details": {"cached_tokens": 6}})");
  CHECK(usageJson(usage) == usageExpected);

  json chat =
      chatCompletion("chatcmpl-1", 1700000000, "m", {plainChoice("Hello", "stop"), plainChoice("Hi", "length")}, usage);
  CHECK(chat == json::parse(R"({"id": "chatcmpl-1", "object": "chat.completion", "created": 1700000000, "model": "m",
    "choices": [
      {"index": 0, "message": {"role": "assistant", "content": "Hello"}, "logprobs": null, "finish_reason": "stop"},
      {"index": 1, "message": {"role": "assistant", "content": "Hi"}, "logprobs": null, "finish_reason": "length"}],
    "usage": {"prompt_tokens": 10, "completion_tokens": 4, "total_tokens": 14,
              "prompt_tokens_details": {"cached_tokens": 6}}})"));

  json text = textCompletion("cmpl-1", 5, "m", {plainChoice(" upon", "length")}, usage);
  CHECK(text == json::parse(R"({"id": "cmpl-1", "object": "text_completion", "created": 5, "model": "m",
    "choices": [{"index": 0, "text": " upon", "logprobs": null, "finish_reason": "length"}],
    "usage": {"prompt_tokens": 10, "completion_tokens": 4, "total_tokens": 14,
              "prompt_tokens_details": {"cached_tokens": 6}}})"));
}

TEST_CASE("logprobs: partial UTF-8 tokens keep their bytes", "[serve]") {
  ChoiceResult c{"\xc3\xa9!", "stop", splitLogprobs()};
  json chat = chatCompletion("id", 1, "m", {c}, {});
  CHECK_NOTHROW(chat.dump());
  const json& content = chat["choices"][0]["logprobs"]["content"];
  CHECK(keys(chat["choices"][0]["logprobs"]) == Keys{"content"});
  REQUIRE(content.size() == 3);
  CHECK(keys(content[0]) == Keys{"bytes", "logprob", "token", "top_logprobs"});
  CHECK(content[0]["token"] == "\xef\xbf\xbd");  // U+FFFD
  CHECK(content[0]["bytes"] == json::array({0xc3}));
  CHECK(content[0]["logprob"] == -0.5);
  CHECK(content[1]["token"] == "\xef\xbf\xbd");
  CHECK(content[1]["bytes"] == json::array({0xa9}));
  CHECK(content[2]["token"] == "!");
  CHECK(content[2]["bytes"] == json::array({33}));
  CHECK(content[2]["logprob"] == -9999.0);  // not null: the client reads a float
  CHECK(content[2]["top_logprobs"] == json::array());
  const json& top = content[0]["top_logprobs"];
  REQUIRE(top.size() == 3);
  CHECK(keys(top[0]) == Keys{"bytes", "logprob", "token"});
  CHECK(top[1]["bytes"] == json::array({0xc2}));
  CHECK(top[2] == json::parse(R"({"token": "a", "logprob": -2.0, "bytes": [97]})"));

  json text = textCompletion("id", 1, "m", {c}, {});
  CHECK_NOTHROW(text.dump());
  const json& lp = text["choices"][0]["logprobs"];
  CHECK(keys(lp) == Keys{"text_offset", "token_logprobs", "tokens", "top_logprobs"});
  CHECK(lp["tokens"] == json::array({"\xef\xbf\xbd", "\xef\xbf\xbd", "!"}));
  CHECK(lp["token_logprobs"] == json::array({-0.5, -0.25, -9999.0}));
  CHECK(lp["text_offset"] == json::array({0, 1, 1}));                                    // characters: é is one
  CHECK(lp["top_logprobs"][0] == json::parse("{\"\xef\xbf\xbd\": -0.5, \"a\": -2.0}"));  // the likelier U+FFFD kept
  CHECK(lp["top_logprobs"][2] == json::object());

  // Text cut inside a character still writes.
  CHECK(chatCompletion("id", 1, "m", {plainChoice("a\xe2\x82", "length")}, {})["choices"][0]["message"]["content"] ==
        "a\xef\xbf\xbd");
  CHECK(textCompletion("id", 1, "m", {plainChoice("\xff\xfe", "length")}, {})["choices"][0]["text"] ==
        "\xef\xbf\xbd\xef\xbf\xbd");
}

TEST_CASE("streamed chunks, with and without include_usage", "[serve]") {
  ChunkPart first{0, true, "", std::nullopt, std::nullopt};
  ChunkPart middle{1, false, "Hel", std::nullopt, std::nullopt};
  ChunkPart last{1, false, "", std::string("stop"), std::nullopt};

  json c0 = chatChunk("chatcmpl-1", 7, "m", first, false);
  CHECK(c0 == json::parse(R"({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 7, "model": "m",
    "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": null,
                 "finish_reason": null}]})"));
  json c1 = chatChunk("chatcmpl-1", 7, "m", middle, false);
  CHECK(c1["choices"][0]["delta"] == json::parse(R"({"content": "Hel"})"));
  CHECK(c1["choices"][0]["index"] == 1);
  CHECK(c1["choices"][0]["finish_reason"].is_null());
  json c2 = chatChunk("chatcmpl-1", 7, "m", last, false);
  CHECK(c2["choices"][0]["delta"] == json::object());
  CHECK(c2["choices"][0]["finish_reason"] == "stop");
  for (const json& c : {c0, c1, c2}) CHECK(keys(c) == Keys{"choices", "created", "id", "model", "object"});

  json u1 = chatChunk("chatcmpl-1", 7, "m", middle, true);
  CHECK(keys(u1) == Keys{"choices", "created", "id", "model", "object", "usage"});
  CHECK(u1["usage"].is_null());

  ChunkPart withLogprobs{0, false, "\xc3\xa9", std::nullopt, std::vector<TokenLogprob>{splitLogprobs()[0]}};
  json lc = chatChunk("chatcmpl-1", 7, "m", withLogprobs, false);
  CHECK(lc["choices"][0]["logprobs"]["content"][0]["bytes"] == json::array({0xc3}));

  json t = completionChunk("cmpl-1", 7, "m", middle, false);
  CHECK(t == json::parse(R"({"id": "cmpl-1", "object": "text_completion", "created": 7, "model": "m",
    "choices": [{"index": 1, "text": "Hel", "logprobs": null, "finish_reason": null}]})"));
  json tu = completionChunk("cmpl-1", 7, "m", last, true);
  CHECK(tu["usage"].is_null());
  CHECK(tu["choices"][0]["finish_reason"] == "stop");
  CHECK(keys(tu) == Keys{"choices", "created", "id", "model", "object", "usage"});

  // A later chunk's text_offset continues from the characters sent before it.
  ChunkPart later{0, false, "\xc3\xa9!", std::nullopt, splitLogprobs()};
  later.textOffset = 5;
  CHECK(completionChunk("cmpl-1", 7, "m", later, false)["choices"][0]["logprobs"]["text_offset"] ==
        json::array({5, 6, 6}));

  Usage usage{3, 2, 0};
  json chatUsage = usageChunk(Endpoint::Chat, "chatcmpl-1", 7, "m", usage);
  CHECK(chatUsage == json::parse(R"({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 7,
    "model": "m", "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5,
                                           "prompt_tokens_details": {"cached_tokens": 0}}})"));
  json textUsage = usageChunk(Endpoint::Completion, "cmpl-1", 7, "m", usage);
  CHECK(textUsage["object"] == "text_completion");
  CHECK(textUsage["choices"] == json::array());
  CHECK(textUsage["usage"]["total_tokens"] == 5);
}
