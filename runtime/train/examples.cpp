#include "train/examples.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <optional>

#include "chat/chat_template.h"

namespace linnet::train {

using nlohmann::ordered_json;
using nest::Error;

namespace {

std::string stringField(const ordered_json& row, const char* key, const std::string& where) {
  const ordered_json& v = row.at(key);
  if (!v.is_string()) throw Error(fmt::format("{}: `{}` must be a string, not {}", where, key, v.type_name()));
  return v.get<std::string>();
}

std::optional<int32_t> eosId(const nest::TextModel& text) {
  auto it = text.specialTokens.find("eos_token");
  if (it == text.specialTokens.end()) return std::nullopt;
  const ordered_json& eos = it->is_object() ? (*it)["content"] : *it;
  return eos.is_string() ? text.tokenizer.tokenToId(eos.get<std::string>()) : std::nullopt;
}

size_t commonPrefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

// {"text"} and {"prompt", "completion"}: the tokenizer's own special tokens
// (a BOS) before, its end-of-text token after, learned with the text.
Example plainExample(const nest::TextModel& text, const std::string& prompt, const std::string& learned) {
  Example e;
  e.ids = text.tokenizer.encode(prompt, /*addSpecialTokens=*/true);
  size_t from = e.ids.size();
  std::vector<int32_t> rest = text.tokenizer.encode(learned, /*addSpecialTokens=*/from == 0);
  e.ids.insert(e.ids.end(), rest.begin(), rest.end());
  if (auto eos = eosId(text)) e.ids.push_back(*eos);
  e.learned.assign(e.ids.size(), 0);
  std::fill(e.learned.begin() + static_cast<ptrdiff_t>(std::max<size_t>(from, 1)), e.learned.end(), 1);
  return e;
}

// {"messages"}: the conversation rendered and tokenized whole (as
// transformers' apply_chat_template(tokenize=True)); assistant turn k is
// the tokens that rendering messages[0..k] adds to rendering messages[0..k)
// with the generation prompt.
Example chatExample(const nest::TextModel& text, const ordered_json& messages, const std::string& where) {
  if (!text.chatTemplate)
    throw Error(fmt::format("{}: a `messages` row needs a chat template, and {} has none", where,
                            text.tokenizer.describe()));
  chat::ChatTemplate tmpl = chat::ChatTemplate::parse(*text.chatTemplate, text.chatTemplateSource);
  auto tokens = [&](size_t count, bool generationPrompt) {
    ordered_json part(ordered_json::value_t::array);
    for (size_t k = 0; k < count; ++k) part.push_back(messages[k]);
    return text.tokenizer.encode(chat::applyChatTemplate(tmpl, part, generationPrompt, text.specialTokens), false);
  };
  Example e;
  e.ids = tokens(messages.size(), false);
  e.learned.assign(e.ids.size(), 0);
  for (size_t k = 0; k < messages.size(); ++k) {
    if (!messages[k].is_object() || messages[k].value("role", "") != "assistant") continue;
    std::vector<int32_t> before = tokens(k, true), through = tokens(k + 1, false);
    size_t from = commonPrefix(before, through);
    if (commonPrefix(through, e.ids) != through.size())
      throw Error(fmt::format("{}: message {} (assistant): the chat template renders the conversation up to it "
                              "differently from the whole, so its tokens cannot be found; split the row there",
                              where, k));
    std::fill(e.learned.begin() + static_cast<ptrdiff_t>(std::max<size_t>(from, 1)),
              e.learned.begin() + static_cast<ptrdiff_t>(through.size()), 1);
  }
  return e;
}

}  // namespace

Example exampleOf(const ordered_json& row, const nest::TextModel& text, const std::string& where) {
  if (!row.is_object()) throw Error(fmt::format("{}: a row must be a JSON object, not {}", where, row.type_name()));
  Example e;
  if (row.contains("messages")) {
    if (!row["messages"].is_array() || row["messages"].empty())
      throw Error(fmt::format("{}: `messages` must be a non-empty array of {{\"role\", \"content\"}}", where));
    e = chatExample(text, row["messages"], where);
  } else if (row.contains("prompt") || row.contains("completion")) {
    if (!row.contains("prompt") || !row.contains("completion"))
      throw Error(fmt::format("{}: a row with `{}` needs `{}` too", where, row.contains("prompt") ? "prompt" : "completion",
                              row.contains("prompt") ? "completion" : "prompt"));
    e = plainExample(text, stringField(row, "prompt", where), stringField(row, "completion", where));
  } else if (row.contains("text")) {
    e = plainExample(text, "", stringField(row, "text", where));
  } else {
    throw Error(fmt::format("{}: a row needs `messages`, `prompt` and `completion`, or `text`", where));
  }
  if (std::find(e.learned.begin(), e.learned.end(), 1) == e.learned.end())
    throw Error(fmt::format("{}: nothing to learn in this row (no assistant turn, or an empty completion)", where));
  return e;
}

std::vector<Example> readExamples(const std::string& path, const nest::TextModel& text, int64_t maxTokens,
                                  std::vector<std::string>& notes) {
  std::ifstream in(path);
  if (!in) throw Error(fmt::format("{}: cannot read the training data", path));
  std::vector<Example> out;
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::string where = fmt::format("{}:{}", path, number);
    ordered_json row;
    try {
      row = ordered_json::parse(line);
    } catch (const std::exception& e) {
      throw Error(fmt::format("{}: not JSON: {}", where, e.what()));
    }
    Example e = exampleOf(row, text, where);
    e.line = number;
    if (static_cast<int64_t>(e.ids.size()) > maxTokens) {
      notes.push_back(fmt::format("{}: {} tokens, past {}: the first {} are kept", where, e.ids.size(), maxTokens,
                                  maxTokens));
      e.ids.resize(static_cast<size_t>(maxTokens));
      e.learned.resize(static_cast<size_t>(maxTokens));
    }
    out.push_back(std::move(e));
  }
  if (out.empty()) throw Error(fmt::format("{}: no rows: a training file needs at least one", path));
  return out;
}

}  // namespace linnet::train
