#include "nest/text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "chat/chat_template.h"
#include "gguf/gguf.h"
#include "gguf/tokenizer.h"

namespace fs = std::filesystem;

namespace linnet::nest {

TextModel loadText(const std::string& path) {
  try {
    if (path.ends_with(".gguf")) {
      gguf::TokenizerData data = gguf::readTokenizer(gguf::File::open(path));
      nlohmann::json tokenizerJson = gguf::huggingFaceTokenizerJson(data);
      nlohmann::json config = gguf::huggingFaceTokenizerConfig(data);
      TextModel text{tokenizer::Tokenizer::fromJson(tokenizerJson.dump(), config.dump(), path), data.chatTemplate};
      text.chatTemplateSource = path + " (tokenizer.chat_template)";
      for (const char* key : {"bos_token", "eos_token", "unk_token", "pad_token"})
        if (config.contains(key) && config[key].is_string()) text.specialTokens[key] = config[key];
      for (auto id : {data.eosId, data.eotId, data.eomId})
        if (id) text.stopIds.push_back(*id);
      return text;
    }
    fs::path file = fs::is_directory(path) ? fs::path(path) / "tokenizer.json" : fs::path(path);
    fs::path config = file.parent_path() / "tokenizer_config.json";
    std::string configPath = fs::exists(config) ? config.string() : "";
    TextModel text{tokenizer::Tokenizer::load(file.string(), configPath), std::nullopt};
    if (!configPath.empty()) {
      chat::TokenizerChatConfig chat = chat::loadTokenizerConfig(configPath);
      if (!chat.templates.empty()) {
        text.chatTemplate = chat.select();
        text.chatTemplateSource = chat.selectSource();
      }
      text.specialTokens = chat.specialTokens;
    }
    if (auto eos = text.tokenizer.eosTokenId()) text.stopIds.push_back(*eos);
    for (const char* name : {"<|eot_id|>", "<|im_end|>", "<|end_of_text|>", "<|eom_id|>"})
      if (auto id = text.tokenizer.tokenToId(name)) text.stopIds.push_back(*id);
    return text;
  } catch (const std::exception& e) {
    throw Error(e.what());
  }
}

std::string renderChat(const TextModel& text, const nlohmann::ordered_json& messages) {
  if (!text.chatTemplate)
    throw Error(fmt::format("{} has no chat template; pass a tokenizer with one",
                            text.tokenizer.describe()));
  try {
    return chat::applyChatTemplate(chat::ChatTemplate::parse(*text.chatTemplate, text.chatTemplateSource), messages,
                                   /*addGenerationPrompt=*/true, text.specialTokens, chat::RenderOptions{});
  } catch (const std::exception& e) {
    throw Error(e.what());
  }
}

void validate(const Sampling& s) {
  if (!std::isfinite(s.temperature) || s.temperature < 0)
    throw Error(fmt::format("sampling: temperature {} must be a finite number >= 0", s.temperature));
  if (s.topK < 0) throw Error(fmt::format("sampling: top-k {} must be >= 0 (0: all tokens)", s.topK));
  if (!(s.topP > 0 && s.topP <= 1)) throw Error(fmt::format("sampling: top-p {} must be in (0, 1]", s.topP));
  if (!(s.minP >= 0 && s.minP <= 1)) throw Error(fmt::format("sampling: min-p {} must be in [0, 1]", s.minP));
  if (!std::isfinite(s.repetitionPenalty) || !(s.repetitionPenalty > 0))
    throw Error(fmt::format("sampling: repetition penalty {} must be a finite number > 0", s.repetitionPenalty));
  if (!std::isfinite(s.presencePenalty) || !std::isfinite(s.frequencyPenalty))
    throw Error(fmt::format("sampling: presence penalty {} and frequency penalty {} must be finite numbers",
                            s.presencePenalty, s.frequencyPenalty));
}

int32_t sampleToken(const Tensor& logits, const Sampling& s, std::mt19937_64& rng,
                    const std::vector<int64_t>& context, size_t promptLength) {
  return sampleToken(logits.toFloats(), s, rng, context, promptLength);
}

int32_t sampleToken(std::vector<double> v, const Sampling& s, std::mt19937_64& rng,
                    const std::vector<int64_t>& context, size_t promptLength) {
  validate(s);
  if (v.empty()) throw Error("sampling: the logits are empty (a model with Vocab = 0?)");
  if (s.presencePenalty != 0.0 || s.frequencyPenalty != 0.0) {
    std::vector<int64_t> count(v.size(), 0);
    for (size_t k = promptLength; k < context.size(); ++k)
      if (context[k] >= 0 && static_cast<size_t>(context[k]) < v.size()) ++count[context[k]];
    for (size_t id = 0; id < v.size(); ++id)
      if (count[id]) v[id] -= s.presencePenalty + s.frequencyPenalty * static_cast<double>(count[id]);
  }
  // Repetition penalty (CTRL, as transformers applies it): each token seen
  // once is penalised once, dividing a positive logit, multiplying a negative one.
  if (s.repetitionPenalty != 1.0) {
    std::vector<bool> seen(v.size(), false);
    for (int64_t id : context)
      if (id >= 0 && static_cast<size_t>(id) < v.size() && !seen[id]) {
        seen[id] = true;
        v[id] = v[id] > 0 ? v[id] / s.repetitionPenalty : v[id] * s.repetitionPenalty;
      }
  }
  if (s.temperature <= 0.0)
    return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
  std::vector<int32_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return v[a] > v[b]; });
  if (s.topK > 0 && static_cast<size_t>(s.topK) < order.size()) order.resize(s.topK);
  std::vector<double> p(order.size());
  double top = v[order[0]], total = 0;
  for (size_t k = 0; k < order.size(); ++k) total += p[k] = std::exp((v[order[k]] - top) / s.temperature);
  // Nucleus: the smallest prefix whose probability reaches top_p.
  double kept = 0;
  size_t n = 0;
  while (n < p.size() && (n == 0 || kept / total < s.topP)) kept += p[n++];
  // min-p: relative to the most likely token (p[0] is the largest).
  while (n > 1 && p[n - 1] < s.minP * p[0]) --n;
  std::discrete_distribution<size_t> pick(p.begin(), p.begin() + n);
  return order[pick(rng)];
}

}  // namespace linnet::nest
