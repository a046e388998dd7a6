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
};

// From `path`: a tokenizer.json, a folder holding one, or a .gguf file.
TextModel loadText(const std::string& path);

// The conversation rendered by the chat template, ready for generation.
std::string renderChat(const TextModel& text, const nlohmann::ordered_json& messages);

struct Sampling {
  double temperature = 0.0;  // 0: greedy
  int topK = 0;              // 0: all tokens
  double topP = 1.0;
  uint64_t seed = 0;
};

// The next token from a row of logits, as `Sampling` asks.
int32_t sampleToken(const Tensor& logits, const Sampling& sampling, std::mt19937_64& rng);

}  // namespace linnet::nest
