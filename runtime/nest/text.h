// Text in, text out: a model's tokenizer and chat template, and sampling.
//
// The tokenizer comes from a Hugging Face tokenizer.json (with the
// tokenizer_config.json beside it, when there is one) or from a GGUF file's
// metadata; so does the chat template.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nest/nest.h"
#include "tokenizer/tokenizer.h"

namespace linnet::nest {

struct TextModel {
  tokenizer::Tokenizer tokenizer;
  std::optional<std::string> chatTemplate;
  nlohmann::ordered_json specialTokens = nlohmann::ordered_json::object();  // bos_token, eos_token, ...
  std::vector<int32_t> stopIds;  // the end-of-turn and end-of-text tokens
  // Where chatTemplate came from, naming it in the template's errors:
  // "a/tokenizer_config.json (chat_template)", "m.gguf (tokenizer.chat_template)".
  std::string chatTemplateSource = "chat_template";
};

// From `path`: a tokenizer.json, a folder holding one, or a .gguf file.
TextModel loadText(const std::string& path);

// A tokenizer without a chat template takes the card's: `package`'s
// chat_template.jinja, when it has one. A template the tokenizer carries
// (tokenizer_config.json, GGUF metadata) is the checkpoint's and wins.
void useCardChatTemplate(TextModel& text, const std::string& package);

// The conversation rendered by the chat template, ready for generation.
std::string renderChat(const TextModel& text, const nlohmann::ordered_json& messages);

// How the next token is chosen, in transformers' order: the repetition
// penalty, then temperature, top-k, top-p and min-p. Temperature 0 is greedy.
struct Sampling {
  double temperature = 0.0;
  int topK = 0;                    // 0: all tokens
  double topP = 1.0;               // nucleus: the smallest set reaching this probability
  double minP = 0.0;               // drop tokens below minP times the best one's probability
  double repetitionPenalty = 1.0;  // > 1 discourages tokens already in the context
  // OpenAI's penalties, on generated tokens only (the context after
  // `promptLength`): a logit drops by presence once a token has appeared and
  // by frequency times its count. Applied first.
  double presencePenalty = 0.0;
  double frequencyPenalty = 0.0;
  uint64_t seed = 0;
};

// The sampling a model is meant to be run with, as `linnet chat` uses it by
// default: the weights folder's generation_config.json when it sets any of
// do_sample, temperature, top_k, top_p, min_p, repetition_penalty (read as
// transformers' generate() reads it: greedy unless do_sample is true, and
// then temperature 1, top-k 50, top-p 1 where it says nothing); else the
// card's nest.toml [sampling] table (temperature, top_k, top_p, min_p,
// repetition_penalty; docs/nest.md); else greedy. `weights` is
// LoadOptions::weights as given.
struct RecommendedSampling {
  Sampling sampling;
  std::string source;  // "DIR/generation_config.json", "PKG/nest.toml [sampling]", or "" (greedy)
};
RecommendedSampling recommendedSampling(const std::string& package, const std::string& weights);

// "temperature 0.2, top-p 0.9" (only what differs from no filtering); "greedy".
std::string describe(const Sampling& sampling);

// Throws Error naming the first setting out of range: a temperature or
// penalty that is not finite, top-k < 0, top-p outside (0, 1], min-p outside
// [0, 1], a repetition penalty <= 0. sampleToken checks it too.
void validate(const Sampling& sampling);

// The next token from a row of logits. `context` holds the tokens so far
// (prompt and generated), for the repetition penalty; the generated ones
// start at `promptLength`, for the presence and frequency penalties.
int32_t sampleToken(const Tensor& logits, const Sampling& sampling, std::mt19937_64& rng,
                    const std::vector<int64_t>& context = {}, size_t promptLength = 0);
// The same from logits already read as doubles (a row of a larger result).
int32_t sampleToken(std::vector<double> logits, const Sampling& sampling, std::mt19937_64& rng,
                    const std::vector<int64_t>& context = {}, size_t promptLength = 0);

}  // namespace linnet::nest
