// The OpenAI protocol (serve/protocol.h). Requests: parsed with limits, then
// every field checked against what OpenAI documents (and vLLM's extensions),
// so a client's mistake is a 400 naming the field rather than something
// quietly ignored. Answers, whole and streamed: shaped as the OpenAI Python
// client's types read them (openai/types/chat/chat_completion*.py,
// completion*.py).
#include "serve/protocol.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <string>

#include <fmt/format.h>

#include "tokenizer/unicode.h"

namespace linnet::serve {

using json = nlohmann::json;

namespace {

// Text in answers (a token that is part of a character, say) with each
// maximal ill-formed subsequence replaced by U+FFFD, as Python's
// decode(errors="replace") does, so nlohmann can write it.
std::string validUtf8(std::string_view s) { return tokenizer::unicode::utf8Lossy(s); }

std::string typeFromStatus(int status) {
  switch (status) {
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 429: return "rate_limit_error";
    default: return status >= 500 ? "server_error" : "invalid_request_error";
  }
}

// What a value is, for messages: numbers as written, others by their type.
std::string got(const json& v) {
  if (v.is_number_float()) return fmt::format("{}", v.get<double>());
  if (v.is_number()) return v.dump();
  if (v.is_string()) return "a string";
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_object()) return "an object";
  if (v.is_array()) return "an array";
  return v.type_name();
}

// nlohmann's message without its "[json.exception.parse_error.101] " tag.
std::string jsonMessage(const json::exception& e) {
  std::string what = e.what();
  auto p = what.find("] ");
  return what.rfind("[json.exception", 0) == 0 && p != std::string::npos ? what.substr(p + 2) : what;
}

}  // namespace

ApiError::ApiError(int httpStatus, std::string message, std::string paramName, std::string errorCode,
                   std::string errorType)
    : std::runtime_error(std::move(message)), status(httpStatus),
      type(errorType.empty() ? typeFromStatus(httpStatus) : std::move(errorType)), param(std::move(paramName)),
      code(std::move(errorCode)) {}

json parseBody(std::string_view body) {
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos)
    throw ApiError(400, "the body is empty; expected a JSON object");
  // Checked over the whole body first: nlohmann reports bad UTF-8 inside a
  // string as a syntax error, and outside one as an invalid literal.
  if (size_t bad = tokenizer::unicode::findInvalidUtf8(body); bad != std::string_view::npos)
    throw ApiError(400, fmt::format("the body is not valid UTF-8 (at byte {})", bad + 1));
  // nlohmann's parser is iterative, so depth is bounded here only to keep
  // the tree (and what reads it) small; the callback stops it at the first
  // container too deep, so a body of 100,000 '[' costs 65 of them.
  json::parser_callback_t limitDepth = [](int depth, json::parse_event_t event, json&) {
    bool opens = event == json::parse_event_t::object_start || event == json::parse_event_t::array_start;
    if (opens && depth >= kMaxJsonDepth)  // `depth` counts the containers already open
      throw ApiError(400, fmt::format("the body nests deeper than {} levels", kMaxJsonDepth));
    return true;
  };
  json j;
  try {
    j = json::parse(body.data(), body.data() + body.size(), limitDepth);
  } catch (const json::parse_error& e) {
    throw ApiError(400, fmt::format("the body is not valid JSON: {} (at byte {})", jsonMessage(e), e.byte));
  } catch (const json::exception& e) {  // out_of_range.406: a number past double's range, as 1e999
    throw ApiError(400, fmt::format("the body is not valid JSON: {}", jsonMessage(e)));
  }
  if (!j.is_object()) throw ApiError(400, fmt::format("the body must be a JSON object, not {}", got(j)));
  return j;
}

namespace {

[[noreturn]] void fail(const std::string& param, std::string message) {
  throw ApiError(400, std::move(message), param);
}

[[noreturn]] void wrongType(const std::string& param, std::string_view expected, const json& v) {
  fail(param, fmt::format("`{}` must be {} (got {})", param, expected, got(v)));
}

// A field's value, or nullptr when it is absent or null (null means absent).
const json* field(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

bool boolean(const json& v, const std::string& param) {
  if (!v.is_boolean()) wrongType(param, "a boolean", v);
  return v.get<bool>();
}

const std::string& string(const json& v, const std::string& param) {
  if (!v.is_string()) wrongType(param, "a string", v);
  return v.get_ref<const std::string&>();
}

// JSON integers only: 1.5 and 2.0 are both numbers with a fraction in the
// text, and OpenAI's schema says integer. nlohmann keeps non-negative
// integers as unsigned, so those past int64 are out of range here.
int64_t integer(const json& v, const std::string& param, int64_t lo, int64_t hi, std::string_view range) {
  if (!v.is_number_integer()) wrongType(param, "an integer", v);
  bool inRange = v.is_number_unsigned()
                     ? v.get<uint64_t>() <= static_cast<uint64_t>(hi) && static_cast<int64_t>(v.get<uint64_t>()) >= lo
                     : v.get<int64_t>() >= lo && v.get<int64_t>() <= hi;
  if (!inRange) fail(param, fmt::format("`{}` must be {} (got {})", param, range, v.dump()));
  return v.get<int64_t>();
}

// A number in [lo, hi], or (lo, hi] when `openLow`.
double number(const json& v, const std::string& param, double lo, bool openLow, double hi, std::string_view range) {
  if (!v.is_number()) wrongType(param, "a number", v);
  double d = v.get<double>();
  if (!(openLow ? d > lo : d >= lo) || !(d <= hi))
    fail(param, fmt::format("`{}` must be {} (got {})", param, range, got(v)));
  return d;
}

// The fields both endpoints take (each read by parseCommon).
// clang-format off
const std::set<std::string, std::less<>> kCommonFields = {
    "model", "stream", "stream_options", "max_tokens", "max_completion_tokens", "n",
    "temperature", "top_p", "top_k", "min_p", "presence_penalty", "frequency_penalty", "repetition_penalty",
    "seed", "stop", "ignore_eos", "logprobs", "user"};
// clang-format on

// Fields OpenAI has that this server does not do; each is fine when it asks
// for nothing (null, or the value that means "none"), else a 400 naming it.
void checkUnsupported(const std::string& key, const json& v) {
  auto unsupported = [&](std::string what = "") {
    fail(key, fmt::format("`{}`{} is not supported by this server", key, what));
  };
  if (v.is_null()) return;
  if (key == "response_format") {
    if (!v.is_object()) wrongType(key, "an object", v);
    const json* t = field(v, "type");
    if (!t || !t->is_string()) fail(key, "`response_format` must have a string `type`");
    if (*t != "text") unsupported(fmt::format(" of type `{}`", t->get<std::string>()));
  } else if (key == "logit_bias") {
    if (!v.is_object()) wrongType(key, "an object", v);
    if (!v.empty()) unsupported(" with entries");
  } else if (key == "echo") {
    if (boolean(v, key)) unsupported(": true");
  } else if (key == "best_of") {
    if (integer(v, key, 1, std::numeric_limits<int64_t>::max(), "at least 1") > 1) unsupported(" > 1");
  } else if (key == "suffix") {
    if (!string(v, key).empty()) unsupported();
  } else {
    unsupported();
  }
}

void checkFieldNames(const json& body, Endpoint endpoint) {
  static const std::set<std::string, std::less<>> chatUnsupported = {
      "tools", "tool_choice", "functions", "function_call", "response_format", "logit_bias", "parallel_tool_calls"};
  static const std::set<std::string, std::less<>> completionUnsupported = {"echo", "suffix", "best_of", "logit_bias"};
  bool chat = endpoint == Endpoint::Chat;
  for (auto it = body.begin(); it != body.end(); ++it) {
    const std::string& key = it.key();
    if (kCommonFields.count(key) || key == (chat ? "messages" : "prompt") || (chat && key == "top_logprobs")) continue;
    if ((chat ? chatUnsupported : completionUnsupported).count(key)) checkUnsupported(key, it.value());
    else fail(key, fmt::format("unknown field `{}`", key));
  }
}

const std::set<std::string, std::less<>> kUnsupportedMessageFields = {"tool_calls", "tool_call_id", "function_call",
                                                                      "audio"};

// A message's content: a string, or text parts joined with no separator
// (as OpenAI joins them).
std::string messageContent(const json& v, const std::string& param) {
  if (v.is_string()) return v.get<std::string>();
  if (!v.is_array()) wrongType(param, "a string or an array of text parts", v);
  std::string text;
  for (size_t i = 0; i < v.size(); ++i) {
    std::string at = fmt::format("{}[{}]", param, i);
    const json& part = v[i];
    if (!part.is_object()) wrongType(at, "an object {\"type\": \"text\", \"text\": ...}", part);
    const json* type = field(part, "type");
    if (!type) fail(at + ".type", fmt::format("`{}.type` is required", at));
    const std::string& t = string(*type, at + ".type");
    if (t != "text")
      fail(at + ".type", fmt::format("content parts of type `{}` are not supported by this server (only `text`)", t));
    for (auto f = part.begin(); f != part.end(); ++f)
      if (f.key() != "type" && f.key() != "text" && !f.value().is_null())
        fail(at + "." + f.key(), fmt::format("unknown field `{}.{}`", at, f.key()));
    const json* partText = field(part, "text");
    if (!partText) fail(at + ".text", fmt::format("`{}.text` is required", at));
    text += string(*partText, at + ".text");
  }
  return text;
}

nlohmann::ordered_json parseMessages(const json& v) {
  if (!v.is_array()) wrongType("messages", "an array of messages", v);
  if (v.empty()) fail("messages", "`messages` must not be empty");
  auto out = nlohmann::ordered_json::array();
  for (size_t i = 0; i < v.size(); ++i) {
    std::string at = fmt::format("messages[{}]", i);
    const json& m = v[i];
    if (!m.is_object()) wrongType(at, "an object with `role` and `content`", m);
    for (auto f = m.begin(); f != m.end(); ++f) {
      const std::string& key = f.key();
      if (key == "role" || key == "content" || key == "name" || f.value().is_null()) continue;
      if (kUnsupportedMessageFields.count(key))
        fail(at + "." + key, fmt::format("`{}.{}` is not supported by this server", at, key));
      fail(at + "." + key, fmt::format("unknown field `{}.{}`", at, key));
    }
    const json* roleValue = field(m, "role");
    if (!roleValue) fail(at + ".role", fmt::format("`{}.role` is required", at));
    std::string role = string(*roleValue, at + ".role");
    if (role == "developer") role = "system";  // OpenAI's newer name for it; templates know system
    if (role != "system" && role != "user" && role != "assistant")
      fail(at + ".role",
           fmt::format("`{}.role` must be one of system, user, assistant, developer (got `{}`)", at, role));
    if (const json* name = field(m, "name")) string(*name, at + ".name");
    const json* content = field(m, "content");
    // An assistant turn may have no content in OpenAI's API (it had tool calls).
    if (!content && role != "assistant") fail(at + ".content", fmt::format("`{}.content` is required", at));
    nlohmann::ordered_json message;
    message["role"] = role;
    message["content"] = content ? messageContent(*content, at + ".content") : std::string();
    out.push_back(std::move(message));
  }
  return out;
}

constexpr int64_t kMaxTokenId = std::numeric_limits<int32_t>::max();

std::vector<int64_t> tokenIds(const json& v, const std::string& param) {
  if (v.empty()) fail(param, fmt::format("`{}` must not be an empty array", param));
  std::vector<int64_t> ids;
  for (size_t i = 0; i < v.size(); ++i)
    ids.push_back(
        integer(v[i], fmt::format("{}[{}]", param, i), 0, kMaxTokenId, "a token id between 0 and 2147483647"));
  return ids;
}

// A string, an array of one string, an array of token ids, or (as vLLM
// takes it) an array holding one array of token ids. Several prompts in one
// request (OpenAI's batch form) are not served.
void parsePrompt(const json& v, ParsedRequest& r) {
  const std::string expected = "a string, an array of one string, or an array of token ids";
  if (v.is_string()) {
    r.promptText = v.get<std::string>();
    return;
  }
  if (!v.is_array()) wrongType("prompt", expected, v);
  if (v.empty()) fail("prompt", "`prompt` must not be an empty array");
  const json& first = v[0];
  if (first.is_string() || first.is_array()) {
    if (v.size() > 1) fail("prompt", "only one prompt per request (`prompt` holds several)");
    if (first.is_string()) r.promptText = first.get<std::string>();
    else r.promptIds = tokenIds(first, "prompt[0]");
    return;
  }
  if (!first.is_number()) wrongType("prompt", expected, v);
  r.promptIds = tokenIds(v, "prompt");
}

std::vector<std::string> parseStop(const json& v) {
  std::vector<std::string> stops;
  if (v.is_string()) {
    stops.push_back(v.get<std::string>());
  } else if (v.is_array()) {
    if (v.size() > 4) fail("stop", fmt::format("`stop` may hold at most 4 strings (got {})", v.size()));
    for (size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_string()) fail("stop", fmt::format("`stop[{}]` must be a string (got {})", i, got(v[i])));
      stops.push_back(v[i].get<std::string>());
    }
  } else {
    wrongType("stop", "a string or an array of at most 4 strings", v);
  }
  for (const auto& s : stops)
    if (s.empty()) fail("stop", "`stop` strings must not be empty");
  return stops;
}

// Everything both endpoints read, in a fixed order so the first problem is
// always the one reported.
void parseCommon(const json& body, ParsedRequest& r) {
  constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();
  GenerationParams& p = r.params;
  nest::Sampling& s = p.sampling;
  s.temperature = 1.0;  // OpenAI's default; 0 (greedy) only when asked for

  if (const json* v = field(body, "stream")) r.stream = boolean(*v, "stream");
  if (const json* v = field(body, "stream_options")) {
    if (!r.stream) fail("stream_options", "`stream_options` is only allowed when `stream` is true");
    if (!v->is_object()) wrongType("stream_options", "an object", *v);
    for (auto f = v->begin(); f != v->end(); ++f)
      if (f.key() != "include_usage" && !f.value().is_null())
        fail("stream_options." + f.key(), fmt::format("unknown field `stream_options.{}`", f.key()));
    if (const json* u = field(*v, "include_usage")) r.includeUsage = boolean(*u, "stream_options.include_usage");
  }

  const json* maxTokens = field(body, "max_tokens");
  const json* maxCompletion = field(body, "max_completion_tokens");
  if (maxTokens) p.maxTokens = integer(*maxTokens, "max_tokens", 1, kMaxInt64, "at least 1");
  if (maxCompletion) {
    int64_t m = integer(*maxCompletion, "max_completion_tokens", 1, kMaxInt64, "at least 1");
    if (maxTokens && m != p.maxTokens)
      fail("max_completion_tokens",
           fmt::format("`max_tokens` ({}) and `max_completion_tokens` ({}) disagree; give one", p.maxTokens, m));
    p.maxTokens = m;
  }
  if (const json* v = field(body, "n")) r.n = static_cast<int>(integer(*v, "n", 1, 16, "between 1 and 16"));

  if (const json* v = field(body, "temperature"))
    s.temperature = number(*v, "temperature", 0, false, 2, "between 0 and 2");
  if (const json* v = field(body, "top_p")) s.topP = number(*v, "top_p", 0, true, 1, "greater than 0 and at most 1");
  if (const json* v = field(body, "top_k")) {
    int64_t k =
        integer(*v, "top_k", -1, std::numeric_limits<int>::max(), "-1 or 0 (all tokens) or a positive token count");
    s.topK = k < 0 ? 0 : static_cast<int>(k);
  }
  if (const json* v = field(body, "min_p")) s.minP = number(*v, "min_p", 0, false, 1, "between 0 and 1");
  if (const json* v = field(body, "presence_penalty"))
    s.presencePenalty = number(*v, "presence_penalty", -2, false, 2, "between -2 and 2");
  if (const json* v = field(body, "frequency_penalty"))
    s.frequencyPenalty = number(*v, "frequency_penalty", -2, false, 2, "between -2 and 2");
  if (const json* v = field(body, "repetition_penalty"))
    s.repetitionPenalty = number(*v, "repetition_penalty", 0, true, 2, "greater than 0 and at most 2");
  if (const json* v = field(body, "seed")) {
    if (!v->is_number_integer()) wrongType("seed", "an integer", *v);
    // Negative seeds are their two's complement: every int64 is a distinct seed.
    s.seed = v->is_number_unsigned() ? v->get<uint64_t>() : static_cast<uint64_t>(v->get<int64_t>());
    p.seeded = true;
  }
  if (const json* v = field(body, "stop")) p.stops = parseStop(*v);
  if (const json* v = field(body, "ignore_eos")) p.ignoreEos = boolean(*v, "ignore_eos");
  if (const json* v = field(body, "user")) string(*v, "user");
}

void parseModel(const json& body, ParsedRequest& r) {
  const json* model = field(body, "model");
  if (!model) fail("model", "`model` is required");
  r.model = string(*model, "model");
}

}  // namespace

ParsedRequest parseChatRequest(const json& body) {
  ParsedRequest r;
  r.endpoint = Endpoint::Chat;
  checkFieldNames(body, Endpoint::Chat);
  parseModel(body, r);
  const json* messages = field(body, "messages");
  if (!messages) fail("messages", "`messages` is required");
  r.messages = parseMessages(*messages);
  parseCommon(body, r);
  const json* logprobs = field(body, "logprobs");
  bool wantLogprobs = logprobs && boolean(*logprobs, "logprobs");
  if (const json* top = field(body, "top_logprobs")) {
    int64_t k = integer(*top, "top_logprobs", 0, 20, "between 0 and 20");
    if (!wantLogprobs) fail("top_logprobs", "`top_logprobs` needs `logprobs` set to true");
    r.params.topLogprobs = static_cast<int>(k);
  } else if (wantLogprobs) {
    r.params.topLogprobs = 0;
  }
  return r;
}

ParsedRequest parseCompletionRequest(const json& body) {
  ParsedRequest r;
  r.endpoint = Endpoint::Completion;
  checkFieldNames(body, Endpoint::Completion);
  parseModel(body, r);
  const json* prompt = field(body, "prompt");
  if (!prompt) fail("prompt", "`prompt` is required");
  parsePrompt(*prompt, r);
  parseCommon(body, r);
  // The legacy API's logprobs: how many alternatives per token (0..5).
  if (const json* v = field(body, "logprobs"))
    r.params.topLogprobs = static_cast<int>(integer(*v, "logprobs", 0, 5, "between 0 and 5"));
  return r;
}

// Answers.

json errorBody(const ApiError& e) {
  auto orNull = [](const std::string& s) { return s.empty() ? json(nullptr) : json(validUtf8(s)); };
  // A message may quote what a client sent; nlohmann refuses to write bad UTF-8.
  return {{"error",
           {{"message", validUtf8(e.what())}, {"type", e.type}, {"param", orNull(e.param)}, {"code", orNull(e.code)}}}};
}

json usageJson(const Usage& u) {
  return {{"prompt_tokens", u.promptTokens},
          {"completion_tokens", u.completionTokens},
          {"total_tokens", u.promptTokens + u.completionTokens},
          {"prompt_tokens_details", {{"cached_tokens", u.cachedTokens}}}};
}

namespace {

// nlohmann writes a non-finite number as null, which the client's float
// fields refuse; OpenAI reports "as unlikely as it gets" as -9999.
double finiteLogprob(double x) { return std::isfinite(x) ? x : -9999.0; }

json bytesOf(const std::string& s) {
  json bytes = json::array();
  for (char c : s) bytes.push_back(static_cast<unsigned char>(c));
  return bytes;
}

// Chat's form: {"content": [{token, logprob, bytes, top_logprobs}]}, the
// token as text (partial characters as U+FFFD) and its exact bytes.
json chatLogprobs(const std::optional<std::vector<TokenLogprob>>& logprobs) {
  if (!logprobs) return nullptr;
  json content = json::array();
  for (const auto& t : *logprobs) {
    json top = json::array();
    for (const auto& alt : t.top)
      top.push_back(
          {{"token", validUtf8(alt.first)}, {"logprob", finiteLogprob(alt.second)}, {"bytes", bytesOf(alt.first)}});
    content.push_back({{"token", validUtf8(t.token)},
                       {"logprob", finiteLogprob(t.logprob)},
                       {"bytes", bytesOf(t.token)},
                       {"top_logprobs", std::move(top)}});
  }
  return {{"content", std::move(content)}};
}

// Code points in `s` when it is read as part of a longer UTF-8 text: lead
// bytes counted, continuation bytes not, so a character split across
// tokens counts once, at its first token.
int64_t characters(const std::string& s) {
  int64_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

// The legacy form: parallel lists, text_offset in characters of the choice's
// text (Python's str indices), starting at `offset`.
json completionLogprobs(const std::optional<std::vector<TokenLogprob>>& logprobs, int64_t offset) {
  if (!logprobs) return nullptr;
  json tokens = json::array(), tokenLogprobs = json::array(), top = json::array(), offsets = json::array();
  for (const auto& t : *logprobs) {
    tokens.push_back(validUtf8(t.token));
    tokenLogprobs.push_back(finiteLogprob(t.logprob));
    json alternatives = json::object();
    for (const auto& alt : t.top) {
      std::string key = validUtf8(alt.first);
      // Two partial characters can both read as U+FFFD; the likelier (first) stays.
      if (!alternatives.contains(key)) alternatives[key] = finiteLogprob(alt.second);
    }
    top.push_back(std::move(alternatives));
    offsets.push_back(offset);
    offset += characters(t.token);
  }
  return {{"tokens", std::move(tokens)},
          {"token_logprobs", std::move(tokenLogprobs)},
          {"top_logprobs", std::move(top)},
          {"text_offset", std::move(offsets)}};
}

json finishReason(const std::optional<std::string>& reason) { return reason ? json(*reason) : json(nullptr); }

json envelope(const std::string& id, const char* object, int64_t created, const std::string& model, json choices) {
  return {{"id", validUtf8(id)},
          {"object", object},
          {"created", created},
          {"model", validUtf8(model)},
          {"choices", std::move(choices)}};
}

}  // namespace

json chatCompletion(const std::string& id, int64_t created, const std::string& model,
                    const std::vector<ChoiceResult>& choices, const Usage& usage) {
  json out = json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChoiceResult& c = choices[i];
    out.push_back({{"index", i},
                   {"message", {{"role", "assistant"}, {"content", validUtf8(c.text)}}},
                   {"logprobs", chatLogprobs(c.logprobs)},
                   {"finish_reason", c.finishReason}});
  }
  json answer = envelope(id, "chat.completion", created, model, std::move(out));
  answer["usage"] = usageJson(usage);
  return answer;
}

json textCompletion(const std::string& id, int64_t created, const std::string& model,
                    const std::vector<ChoiceResult>& choices, const Usage& usage) {
  json out = json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChoiceResult& c = choices[i];
    out.push_back({{"index", i},
                   {"text", validUtf8(c.text)},
                   {"logprobs", completionLogprobs(c.logprobs, 0)},
                   {"finish_reason", c.finishReason}});
  }
  json answer = envelope(id, "text_completion", created, model, std::move(out));
  answer["usage"] = usageJson(usage);
  return answer;
}

json chatChunk(const std::string& id, int64_t created, const std::string& model, const ChunkPart& part,
               bool includeUsage) {
  json delta = json::object();
  if (part.first) {
    delta["role"] = "assistant";
    delta["content"] = validUtf8(part.text);
  } else if (!part.text.empty()) {
    delta["content"] = validUtf8(part.text);
  }
  json choice = {{"index", part.index},
                 {"delta", std::move(delta)},
                 {"logprobs", chatLogprobs(part.logprobs)},
                 {"finish_reason", finishReason(part.finishReason)}};
  json chunk = envelope(id, "chat.completion.chunk", created, model, json::array({std::move(choice)}));
  if (includeUsage) chunk["usage"] = nullptr;
  return chunk;
}

json completionChunk(const std::string& id, int64_t created, const std::string& model, const ChunkPart& part,
                     bool includeUsage) {
  json choice = {{"index", part.index},
                 {"text", validUtf8(part.text)},
                 {"logprobs", completionLogprobs(part.logprobs, part.textOffset)},
                 {"finish_reason", finishReason(part.finishReason)}};
  // OpenAI streams completions as "text_completion" objects too.
  json chunk = envelope(id, "text_completion", created, model, json::array({std::move(choice)}));
  if (includeUsage) chunk["usage"] = nullptr;
  return chunk;
}

json usageChunk(Endpoint endpoint, const std::string& id, int64_t created, const std::string& model,
                const Usage& usage) {
  const char* object = endpoint == Endpoint::Chat ? "chat.completion.chunk" : "text_completion";
  json chunk = envelope(id, object, created, model, json::array());
  chunk["usage"] = usageJson(usage);
  return chunk;
}

}  // namespace linnet::serve
