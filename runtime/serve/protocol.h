// The OpenAI protocol as `linnet serve` speaks it: request bodies parsed and
// validated into what the engine runs, and the answers (whole and streamed)
// built as the official client reads them. No HTTP and no model here: the
// server (serve/server.cpp) renders chat templates, tokenizes, and hands
// GenerationParams to the engine (serve/engine.h).
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "nest/text.h"

namespace linnet::serve {

// An error answered to a client: the HTTP status and OpenAI's error body
// {"error": {"message", "type", "param", "code"}}; param and code are null
// when empty.
struct ApiError : std::runtime_error {
  ApiError(int status, std::string message, std::string param = "", std::string code = "",
           std::string type = "");  // type "": from the status (400 invalid_request_error, ...)
  int status;
  std::string type, param, code;
};
nlohmann::json errorBody(const ApiError& e);

// Limits on a request body (before any field is read).
inline constexpr size_t kMaxBodyBytes = 8u << 20;  // larger: 413
inline constexpr int kMaxJsonDepth = 64;           // deeper: 400

// The body as a JSON object: invalid JSON, nesting deeper than kMaxJsonDepth,
// invalid UTF-8 in a string, or a non-object are each a 400 naming the
// problem (and the byte offset, for a syntax error).
nlohmann::json parseBody(std::string_view body);

// How one choice is generated: what the engine needs besides the prompt.
struct GenerationParams {
  std::vector<int64_t> prompt;  // token ids, filled by the server
  int64_t maxTokens = -1;       // -1: until the context is full
  nest::Sampling sampling;      // temperature 0 = greedy; seed below
  bool seeded = false;          // `seed` given: sampling.seed is it (else the server picks one)
  std::vector<std::string> stops;  // at most 4, none empty; never part of the output
  bool ignoreEos = false;          // `ignore_eos` (vLLM's extension): run to maxTokens
  int topLogprobs = -1;            // -1: no logprobs; else 0..20 alternatives per token
};

enum class Endpoint { Chat, Completion };

struct ParsedRequest {
  Endpoint endpoint = Endpoint::Chat;
  std::string model;  // as given (required); the server checks it names the model
  bool stream = false;
  bool includeUsage = false;  // stream_options.include_usage
  int n = 1;                  // choices, 1..16
  GenerationParams params;    // everything but prompt
  // Chat: the messages, each {"role", "content"} with content a string (or
  // an array of {"type": "text", "text"} parts, joined); roles system, user,
  // assistant (developer is taken as system).
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  // Completion: the prompt as text, or as token ids (an array of integers).
  std::optional<std::string> promptText;
  std::optional<std::vector<int64_t>> promptIds;
};

// Validate every field the endpoint knows, as OpenAI documents them:
//   model (string, required); messages (chat, non-empty array) or prompt
//   (completions: string, array of one string, or array of integers);
//   stream, stream_options.include_usage (only with stream);
//   max_tokens / max_completion_tokens (integer >= 1); n (1..16);
//   temperature [0, 2]; top_p (0, 1]; top_k (-1 or >= 0; -1 and 0 mean all);
//   min_p [0, 1]; presence_penalty, frequency_penalty [-2, 2];
//   repetition_penalty (0, 2]; seed (integer); stop (string or array of at
//   most 4 non-empty strings); ignore_eos (bool); chat: logprobs (bool) and
//   top_logprobs 0..20 (needs logprobs); completions: logprobs 0..5 (integer);
//   user (string, ignored).
// null for an optional field means absent. A field the server does not
// support (tools, tool_choice, functions, function_call, response_format
// other than {"type": "text"}, logit_bias with entries, echo: true,
// suffix, best_of > 1, parallel_tool_calls) is a 400 naming it; any other
// unknown field is a 400 too ("unknown field `x`"). Wrong types and values
// out of range are 400s with `param` set to the field's name.
ParsedRequest parseChatRequest(const nlohmann::json& body);
ParsedRequest parseCompletionRequest(const nlohmann::json& body);

struct Usage {
  int64_t promptTokens = 0;
  int64_t completionTokens = 0;
  int64_t cachedTokens = 0;  // prompt tokens found in the prefix cache
};
// {"prompt_tokens", "completion_tokens", "total_tokens",
//  "prompt_tokens_details": {"cached_tokens"}}
nlohmann::json usageJson(const Usage& u);

// One sampled token's log-probability and its best alternatives (log-softmax
// of the model's logits).
struct TokenLogprob {
  std::string token;  // the token's text (may be part of a UTF-8 character)
  double logprob = 0;
  std::vector<std::pair<std::string, double>> top;  // best first
};

// What a choice produced: the text (stops removed), why it ended
// ("stop" or "length"), and the logprobs when asked for.
struct ChoiceResult {
  std::string text;
  std::string finishReason;
  std::optional<std::vector<TokenLogprob>> logprobs;
};

// Whole answers ("chat.completion", "text_completion") with usage.
nlohmann::json chatCompletion(const std::string& id, int64_t created, const std::string& model,
                              const std::vector<ChoiceResult>& choices, const Usage& usage);
nlohmann::json textCompletion(const std::string& id, int64_t created, const std::string& model,
                              const std::vector<ChoiceResult>& choices, const Usage& usage);

// One streamed chunk of choice `index`. Chat chunks ("chat.completion.chunk")
// carry `delta` ({"role": "assistant", "content": ""} on the first chunk of a
// choice, then {"content": text}, then {} with the finish reason);
// completion chunks ("text_completion") carry `text`. `usage` is null in
// every chunk when the request asked for include_usage (and absent
// otherwise), except the last, which has `choices: []` (usageChunk).
struct ChunkPart {
  int index = 0;
  bool first = false;  // chat: the role chunk
  std::string text;
  std::optional<std::string> finishReason;
  std::optional<std::vector<TokenLogprob>> logprobs;
  // Completions: the characters (code points) of the choice's text before
  // this chunk, where the chunk's logprobs' `text_offset` starts.
  int64_t textOffset = 0;
};
nlohmann::json chatChunk(const std::string& id, int64_t created, const std::string& model, const ChunkPart& part,
                         bool includeUsage);
nlohmann::json completionChunk(const std::string& id, int64_t created, const std::string& model,
                               const ChunkPart& part, bool includeUsage);
nlohmann::json usageChunk(Endpoint endpoint, const std::string& id, int64_t created, const std::string& model,
                          const Usage& usage);

}  // namespace linnet::serve
