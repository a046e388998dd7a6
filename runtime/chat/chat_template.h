// Chat templates: the Jinja subset Hugging Face chat templates use, rendering
// byte-for-byte as transformers' apply_chat_template(..., tokenize=False).
//
// The engine follows jinja2's ImmutableSandboxedEnvironment as transformers
// configures it: trim_blocks=True, lstrip_blocks=True, the loopcontrols
// extension ({% break %}, {% continue %}), {% generation %} blocks, the
// globals raise_exception, strftime_now, namespace, dict and range, and a
// tojson filter that does not escape non-ASCII text. See
// docs/chat_templates.md for the supported subset.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "chat/errors.h"

namespace linnet::chat {

// Bounds on the work one render may do; exceeding one throws
// TemplateLimitError instead of crashing, hanging or exhausting memory.
struct RenderLimits {
  // Bytes of output, and of any one string built while rendering; also the
  // most elements of any one list.
  size_t maxOutputBytes = size_t{64} << 20;
  // Loop iterations, over all loops of the render.
  uint64_t maxLoopIterations = 1'000'000;
  // Evaluation steps (expressions and statements; long strings count extra).
  uint64_t maxSteps = 50'000'000;
  // Nested macro calls.
  size_t maxCallDepth = 64;
  // Largest range(); jinja2's sandbox uses 100000 (an OverflowError there).
  int64_t maxRange = 100'000;
};

struct RenderOptions {
  RenderLimits limits;
  // The local time strftime_now() formats. Empty: the system clock, in local
  // time, as Python's datetime.now().
  std::function<std::tm()> clock;
};

class ChatTemplate {
 public:
  // Parses template text; throws TemplateSyntaxError naming `name`, the line
  // and column, and what was expected.
  static ChatTemplate parse(std::string source, std::string name = "chat_template");

  // Renders with `context` (a JSON object) as the template's variables.
  // Key order of objects matters to tojson and to iteration over dicts: with
  // nlohmann::json (whose objects are sorted by key) that order is sorted,
  // with nlohmann::ordered_json it is the document's order, as in Python.
  std::string render(const nlohmann::json& context) const;
  std::string render(const nlohmann::ordered_json& context) const;
  std::string render(const nlohmann::json& context, const RenderOptions& options) const;
  std::string render(const nlohmann::ordered_json& context, const RenderOptions& options) const;

  const std::string& name() const;
  const std::string& source() const;

  struct Impl;

 private:
  std::shared_ptr<const Impl> impl_;
};

// The context transformers' apply_chat_template(tokenize=False) renders
// with: `messages` (with keys whose value is null dropped, and a
// reasoning_content / thinking / reasoning field copied to both
// "thinking" and "reasoning_content"), `tools` and `documents` (null unless
// given in `extra`), `add_generation_prompt`, then everything else in
// `extra` (special tokens such as bos_token / eos_token, date_string,
// custom template arguments). Throws ChatTemplateError for an empty
// conversation or a message that is not an object.
nlohmann::ordered_json buildChatContext(const nlohmann::ordered_json& messages, bool addGenerationPrompt,
                                        const nlohmann::ordered_json& extra);

std::string applyChatTemplate(const std::string& templateSource, const nlohmann::json& messages,
                              bool addGenerationPrompt, const nlohmann::json& extra = nlohmann::json::object());
std::string applyChatTemplate(const std::string& templateSource, const nlohmann::ordered_json& messages,
                              bool addGenerationPrompt,
                              const nlohmann::ordered_json& extra = nlohmann::ordered_json::object(),
                              const RenderOptions& options = {});
std::string applyChatTemplate(const ChatTemplate& tmpl, const nlohmann::ordered_json& messages,
                              bool addGenerationPrompt,
                              const nlohmann::ordered_json& extra = nlohmann::ordered_json::object(),
                              const RenderOptions& options = {});

// The chat templates and special tokens of a tokenizer_config.json.
struct TokenizerChatConfig {
  // Named templates; a single `chat_template` string is named "default".
  std::map<std::string, std::string> templates;
  // bos_token, eos_token, unk_token, sep_token, pad_token, cls_token,
  // mask_token: those set, as strings (transformers' special_tokens_map).
  nlohmann::ordered_json specialTokens = nlohmann::ordered_json::object();

  // The template transformers would use: `name` if given; else "tool_use"
  // when tools are passed and it exists; else "default". Throws
  // ChatTemplateError when there is none.
  const std::string& select(const std::string& name = "", bool hasTools = false) const;
  // Where each template came from, for errors: "chat_template",
  // "chat_template 'tool_use'"; loadTokenizerConfig makes them
  // "<path> (chat_template)" or the chat_template.jinja's path.
  std::map<std::string, std::string> sources;
  // The source of the template select() picks (its name when none is known).
  std::string selectSource(const std::string& name = "", bool hasTools = false) const;
};

// `chat_template` may be a string or a list of {"name", "template"} objects.
TokenizerChatConfig parseTokenizerConfig(const nlohmann::ordered_json& config);
// Reads a tokenizer_config.json; when it has no chat_template, a
// chat_template.jinja beside it is the default template.
TokenizerChatConfig loadTokenizerConfig(const std::string& path);

}  // namespace linnet::chat
