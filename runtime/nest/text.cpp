#include "nest/text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <toml++/toml.h>

#include <fmt/ranges.h>

#include "chat/chat_template.h"
#include "gguf/gguf.h"
#include "gguf/tokenizer.h"

namespace fs = std::filesystem;

namespace linnet::nest {

namespace {

// A GGUF's vocabulary, built as its tokenizer.json; its end ids stop a reply.
TextModel fromGguf(const std::string& path) {
  gguf::TokenizerData data = gguf::readTokenizer(gguf::File::open(path));
  nlohmann::json tokenizerJson = gguf::huggingFaceTokenizerJson(data);
  nlohmann::json config = gguf::huggingFaceTokenizerConfig(data);
  TextModel text{tokenizer::Tokenizer::fromJsonValue(tokenizerJson, &config, path), data.chatTemplate};
  text.chatTemplateSource = path + " (tokenizer.chat_template)";
  for (const char* key : {"bos_token", "eos_token", "unk_token", "pad_token"})
    if (config.contains(key) && config[key].is_string()) text.specialTokens[key] = config[key];
  for (auto id : {data.eosId, data.eotId, data.eomId})
    if (id) text.stopIds.push_back(*id);
  return text;
}

// tokenizer.json (a file, or the folder holding it) and the
// tokenizer_config.json beside it; its eos stops a reply.
TextModel fromTokenizerJson(const std::string& path) {
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
  return text;
}

}  // namespace

TextModel loadText(const std::string& path) {
  try {
    TextModel text = path.ends_with(".gguf") ? fromGguf(path) : fromTokenizerJson(path);
    // The turn ends of the zoo's chat templates (Llama 3, ChatML, Gemma,
    // Phi-3), whichever file the vocabulary came from: a GGUF often names
    // no end-of-turn id (Gemma 3's does not).
    for (const char* name : {"<|eot_id|>", "<|im_end|>", "<|end_of_text|>", "<|eom_id|>", "<end_of_turn>", "<|end|>"})
      if (auto id = text.tokenizer.tokenToId(name);
          id && std::find(text.stopIds.begin(), text.stopIds.end(), *id) == text.stopIds.end())
        text.stopIds.push_back(*id);
    return text;
  } catch (const std::exception& e) {
    throw Error(e.what());
  }
}

void useCardChatTemplate(TextModel& text, const std::string& package) {
  if (text.chatTemplate || package.empty()) return;
  fs::path file = fs::path(package) / "chat_template.jinja";
  std::ifstream in(file, std::ios::binary);
  if (!in) return;
  text.chatTemplate = std::string(std::istreambuf_iterator<char>(in), {});
  text.chatTemplateSource = file.string();
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

namespace {

// One setting of [sampling] or generation_config.json, named as both name it.
struct SamplingKey {
  const char* name;
  double Sampling::*number = nullptr;
  int Sampling::*integer = nullptr;
};
const SamplingKey kSamplingKeys[] = {{"temperature", &Sampling::temperature},
                                     {"top_p", &Sampling::topP},
                                     {"top_k", nullptr, &Sampling::topK},
                                     {"min_p", &Sampling::minP},
                                     {"repetition_penalty", &Sampling::repetitionPenalty}};

}  // namespace

RecommendedSampling recommendedSampling(const std::string& package, const std::string& weights) {
  RecommendedSampling out;
  std::error_code ec;
  fs::path generation = fs::path(weights) / "generation_config.json";
  if (!weights.empty() && fs::is_directory(weights, ec) && fs::is_regular_file(generation, ec)) {
    nlohmann::json g;
    try {
      std::ifstream in(generation);
      g = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
      throw Error(fmt::format("{}: malformed JSON: {}", generation.string(), e.what()));
    }
    bool any = g.is_object() && g.contains("do_sample");
    for (const SamplingKey& k : kSamplingKeys) any = any || (g.is_object() && g.contains(k.name));
    if (any) {
      auto number = [&](const char* key, double fallback) {
        auto it = g.find(key);
        if (it == g.end() || it->is_null()) return fallback;
        if (!it->is_number())
          throw Error(fmt::format("{}: {} = {} is not a number", generation.string(), key, it->dump()));
        return it->get<double>();
      };
      bool sample = g.value("do_sample", false);
      Sampling& s = out.sampling;
      s.repetitionPenalty = number("repetition_penalty", 1.0);
      if (sample) {
        s.temperature = number("temperature", 1.0);
        s.topK = static_cast<int>(number("top_k", 50));
        s.topP = number("top_p", 1.0);
        s.minP = number("min_p", 0.0);
      }
      out.source = generation.string();
      try {
        validate(s);
      } catch (const Error& e) {
        throw Error(fmt::format("{}: {}", out.source, e.what()));
      }
      return out;
    }
  }
  fs::path nestToml = fs::path(package) / "nest.toml";
  if (!fs::is_regular_file(nestToml, ec)) return out;
  toml::table t;
  try {
    t = toml::parse_file(nestToml.string());
  } catch (const toml::parse_error& e) {
    throw Error(fmt::format("{}: malformed TOML: {}", nestToml.string(), e.description()));
  }
  const toml::table* table = t["sampling"].as_table();
  if (!table) return out;
  out.source = nestToml.string() + " [sampling]";
  for (const auto& [key, value] : *table) {
    const SamplingKey* k = nullptr;
    for (const SamplingKey& one : kSamplingKeys)
      if (key.str() == one.name) k = &one;
    if (!k)
      throw Error(fmt::format("{}: unknown setting `{}` (temperature, top_p, top_k, min_p, repetition_penalty)",
                              out.source, std::string(key.str())));
    auto v = value.value<double>();
    if (!v) throw Error(fmt::format("{}: {} must be a number", out.source, std::string(key.str())));
    if (k->integer) {
      if (std::trunc(*v) != *v || *v < 0 || *v > 1e9)
        throw Error(fmt::format("{}: {} must be a whole number >= 0", out.source, std::string(key.str())));
      out.sampling.*(k->integer) = static_cast<int>(*v);
    } else {
      out.sampling.*(k->number) = *v;
    }
  }
  try {
    validate(out.sampling);
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", out.source, e.what()));
  }
  return out;
}

std::string describe(const Sampling& s) {
  std::vector<std::string> parts;
  parts.push_back(s.temperature == 0 ? "greedy" : fmt::format("temperature {}", s.temperature));
  if (s.temperature != 0) {
    if (s.topK > 0) parts.push_back(fmt::format("top-k {}", s.topK));
    if (s.topP < 1) parts.push_back(fmt::format("top-p {}", s.topP));
    if (s.minP > 0) parts.push_back(fmt::format("min-p {}", s.minP));
  }
  if (s.repetitionPenalty != 1) parts.push_back(fmt::format("repetition penalty {}", s.repetitionPenalty));
  if (s.presencePenalty != 0) parts.push_back(fmt::format("presence penalty {}", s.presencePenalty));
  if (s.frequencyPenalty != 0) parts.push_back(fmt::format("frequency penalty {}", s.frequencyPenalty));
  if (s.temperature != 0) parts.push_back(fmt::format("seed {}", s.seed));
  return fmt::format("{}", fmt::join(parts, ", "));
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
