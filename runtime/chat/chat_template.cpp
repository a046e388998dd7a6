#include "chat/chat_template.h"

#include <fstream>
#include <sstream>

#include "chat/interpreter.h"
#include "chat/parser.h"

namespace linnet::chat {

using detail::Body;
using detail::Expr;
using detail::ExprKind;
using detail::Program;
using detail::Stmt;
using detail::Value;

struct ChatTemplate::Impl {
  Program program;
};

namespace {

// jinja2 resolves filter and test names when it compiles a template, so an
// unknown one is an error even in a branch that never runs.
class NameChecker {
 public:
  explicit NameChecker(const Program& p) : p_(p) {}

  void body(const Body& b) {
    for (const auto& s : b) stmt(*s);
  }

 private:
  const Program& p_;

  [[noreturn]] void fail(size_t offset, const std::string& msg) const {
    size_t line, col;
    p_.map.location(offset, line, col);
    throw TemplateSyntaxError(p_.name, line, col, msg);
  }

  void stmt(const Stmt& s) {
    if (s.expr) expr(*s.expr);
    if (s.filter) expr(*s.filter);
    for (const auto& br : s.branches) {
      expr(*br.first);
      body(br.second);
    }
    body(s.body);
    body(s.elseBody);
    for (const auto& p : s.params)
      if (p.defaultValue) expr(*p.defaultValue);
    for (const auto& v : s.withValues) expr(*v);
  }

  void expr(const Expr& e) {
    if (e.kind == ExprKind::Filter && !detail::findFilter(e.name)) fail(e.offset, "no filter named '" + e.name + "'");
    if (e.kind == ExprKind::Test && !detail::findTest(e.name)) fail(e.offset, "no test named '" + e.name + "'");
    if (e.a) expr(*e.a);
    if (e.b) expr(*e.b);
    if (e.c) expr(*e.c);
    for (const auto& c : e.children)
      if (c) expr(*c);
    for (const auto& kv : e.kwargs) expr(*kv.second);
  }
};

template <class J>
std::string renderImpl(const ChatTemplate::Impl& impl, const J& context, const RenderOptions& options) {
  if (!context.is_object()) throw ChatTemplateError("chat template context must be a JSON object");
  Value ctx = Value::fromJson(context);
  detail::Interpreter in(impl.program, options);
  return in.run(ctx);
}

}  // namespace

ChatTemplate ChatTemplate::parse(std::string source, std::string name) {
  auto impl = std::make_shared<Impl>();
  impl->program.name = std::move(name);
  impl->program.rawSource = std::move(source);
  auto tokens = detail::tokenize(impl->program.rawSource, impl->program.name, impl->program.map);
  impl->program.body = detail::parseTemplate(tokens, impl->program.name, impl->program.map);
  NameChecker(impl->program).body(impl->program.body);
  impl->program.rootUndefined = detail::analyzeScopes(impl->program.body);
  ChatTemplate t;
  t.impl_ = std::move(impl);
  return t;
}

std::string ChatTemplate::render(const nlohmann::json& context) const { return renderImpl(*impl_, context, {}); }
std::string ChatTemplate::render(const nlohmann::ordered_json& context) const {
  return renderImpl(*impl_, context, {});
}
std::string ChatTemplate::render(const nlohmann::json& context, const RenderOptions& options) const {
  return renderImpl(*impl_, context, options);
}
std::string ChatTemplate::render(const nlohmann::ordered_json& context, const RenderOptions& options) const {
  return renderImpl(*impl_, context, options);
}

const std::string& ChatTemplate::name() const { return impl_->program.name; }
const std::string& ChatTemplate::source() const { return impl_->program.rawSource; }

// ---------------------------------------------------------------------------
// transformers' apply_chat_template

nlohmann::ordered_json buildChatContext(const nlohmann::ordered_json& messages, bool addGenerationPrompt,
                                        const nlohmann::ordered_json& extra) {
  using J = nlohmann::ordered_json;
  if (!messages.is_array()) throw ChatTemplateError("messages must be a JSON array of message objects");
  if (messages.empty())
    throw ChatTemplateError("Cannot apply chat template to an empty conversation. Provide at least one message.");
  if (!extra.is_null() && !extra.is_object()) throw ChatTemplateError("extra template arguments must be a JSON object");
  J normalized = J::array();
  static const char* kReasoning[] = {"reasoning_content", "thinking", "reasoning"};
  for (const auto& m : messages) {
    if (!m.is_object())
      throw ChatTemplateError("Chat messages should be dicts, dataclasses or pydantic models, but got " + m.dump() +
                              ".");
    // Drop keys whose value is None.
    J msg = J::object();
    for (auto it = m.begin(); it != m.end(); ++it)
      if (!it.value().is_null()) msg[it.key()] = it.value();
    // Alias reasoning fields: {"thinking": r, **message, "reasoning_content": r}.
    const J* reasoning = nullptr;
    for (const char* k : kReasoning) {
      auto it = msg.find(k);
      if (it != msg.end() && !it->is_null()) {
        reasoning = &*it;
        break;
      }
    }
    if (reasoning) {
      J r = *reasoning;
      J aliased = J::object();
      aliased["thinking"] = r;
      for (auto it = msg.begin(); it != msg.end(); ++it) aliased[it.key()] = it.value();
      aliased["reasoning_content"] = r;
      msg = std::move(aliased);
    }
    normalized.push_back(std::move(msg));
  }
  J ctx = J::object();
  ctx["messages"] = std::move(normalized);
  ctx["tools"] = nullptr;
  ctx["documents"] = nullptr;
  ctx["add_generation_prompt"] = addGenerationPrompt;
  if (extra.is_object()) {
    for (auto it = extra.begin(); it != extra.end(); ++it) {
      if (it.key() == "messages" || it.key() == "add_generation_prompt") continue;
      if (it.key() == "documents" && !it.value().is_null()) {
        if (!it.value().is_array()) throw ChatTemplateError("documents must be a list of dicts");
        for (const auto& d : it.value())
          if (!d.is_object()) throw ChatTemplateError("Documents should be a list of dicts with 'title' and 'text' keys!");
      }
      if (it.key() == "tools" && !it.value().is_null()) {
        if (!it.value().is_array()) throw ChatTemplateError("tools must be a list of JSON schemas");
        for (const auto& t : it.value())
          if (!t.is_object())
            throw ChatTemplateError(
                "Tools should either be a JSON schema, or a callable function with type hints and a docstring "
                "suitable for auto-conversion to a schema.");
      }
      ctx[it.key()] = it.value();
    }
  }
  return ctx;
}

std::string applyChatTemplate(const ChatTemplate& tmpl, const nlohmann::ordered_json& messages,
                              bool addGenerationPrompt, const nlohmann::ordered_json& extra,
                              const RenderOptions& options) {
  return tmpl.render(buildChatContext(messages, addGenerationPrompt, extra), options);
}

std::string applyChatTemplate(const std::string& templateSource, const nlohmann::ordered_json& messages,
                              bool addGenerationPrompt, const nlohmann::ordered_json& extra,
                              const RenderOptions& options) {
  return applyChatTemplate(ChatTemplate::parse(templateSource, "chat_template"), messages, addGenerationPrompt,
                           extra, options);
}

std::string applyChatTemplate(const std::string& templateSource, const nlohmann::json& messages,
                              bool addGenerationPrompt, const nlohmann::json& extra) {
  return applyChatTemplate(templateSource, nlohmann::ordered_json(messages), addGenerationPrompt,
                           nlohmann::ordered_json(extra), RenderOptions{});
}

// ---------------------------------------------------------------------------
// tokenizer_config.json

namespace {
std::map<std::string, std::string>::const_iterator selectTemplate(const TokenizerChatConfig& c,
                                                                  const std::string& name, bool hasTools) {
  const auto& templates = c.templates;
  if (!name.empty()) {
    auto it = templates.find(name);
    if (it == templates.end()) throw ChatTemplateError("no chat template named '" + name + "'");
    return it;
  }
  if (hasTools) {
    auto it = templates.find("tool_use");
    if (it != templates.end()) return it;
  }
  auto it = templates.find("default");
  if (it != templates.end()) return it;
  if (templates.empty())
    throw ChatTemplateError(
        "Cannot use chat template functions because tokenizer.chat_template is not set and no template argument "
        "was passed!");
  std::string names;
  for (const auto& kv : templates) names += (names.empty() ? "" : ", ") + ("'" + kv.first + "'");
  throw ChatTemplateError(
      "This model has multiple chat templates with no default specified! Please either pass a chat template or the "
      "name of the template you wish to use to the `chat_template` argument. Available template names are [" +
      names + "].");
}
}  // namespace

const std::string& TokenizerChatConfig::select(const std::string& name, bool hasTools) const {
  return selectTemplate(*this, name, hasTools)->second;
}

std::string TokenizerChatConfig::selectSource(const std::string& name, bool hasTools) const {
  const std::string& key = selectTemplate(*this, name, hasTools)->first;
  auto it = sources.find(key);
  return it != sources.end() ? it->second : key;
}

TokenizerChatConfig parseTokenizerConfig(const nlohmann::ordered_json& config) {
  if (!config.is_object()) throw ChatTemplateError("tokenizer_config.json must hold a JSON object");
  TokenizerChatConfig out;
  auto ct = config.find("chat_template");
  if (ct != config.end() && !ct->is_null()) {
    if (ct->is_string()) {
      out.templates["default"] = ct->get<std::string>();
      out.sources["default"] = "chat_template";
    } else if (ct->is_array()) {
      for (const auto& entry : *ct) {
        if (!entry.is_object() || !entry.contains("name") || !entry.contains("template") ||
            !entry["name"].is_string() || !entry["template"].is_string())
          throw ChatTemplateError("chat_template list entries must be {\"name\": ..., \"template\": ...} objects");
        out.templates[entry["name"].get<std::string>()] = entry["template"].get<std::string>();
        out.sources[entry["name"].get<std::string>()] = "chat_template '" + entry["name"].get<std::string>() + "'";
      }
    } else if (ct->is_object()) {
      for (auto it = ct->begin(); it != ct->end(); ++it) {
        if (!it.value().is_string()) throw ChatTemplateError("chat_template values must be strings");
        out.templates[it.key()] = it.value().get<std::string>();
        out.sources[it.key()] = "chat_template '" + it.key() + "'";
      }
    } else {
      throw ChatTemplateError("chat_template must be a string or a list of named templates");
    }
  }
  static const char* kSpecial[] = {"bos_token", "eos_token", "unk_token", "sep_token",
                                   "pad_token", "cls_token", "mask_token"};
  for (const char* k : kSpecial) {
    auto it = config.find(k);
    if (it == config.end() || it->is_null()) continue;
    if (it->is_string()) {
      out.specialTokens[k] = it->get<std::string>();
    } else if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) {
      out.specialTokens[k] = (*it)["content"].get<std::string>();
    }
  }
  return out;
}

TokenizerChatConfig loadTokenizerConfig(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw ChatTemplateError("cannot open " + path);
  nlohmann::ordered_json j;
  try {
    j = nlohmann::ordered_json::parse(f);
  } catch (const nlohmann::json::exception& e) {
    throw ChatTemplateError(path + ": " + e.what());
  }
  TokenizerChatConfig cfg = parseTokenizerConfig(j);
  for (auto& [key, source] : cfg.sources) source = path + " (" + source + ")";
  if (cfg.templates.empty()) {
    auto slash = path.find_last_of('/');
    std::string dir = slash == std::string::npos ? std::string(".") : path.substr(0, slash);
    std::ifstream jf(dir + "/chat_template.jinja", std::ios::binary);
    if (jf) {
      std::stringstream ss;
      ss << jf.rdbuf();
      cfg.templates["default"] = ss.str();
      cfg.sources["default"] = dir + "/chat_template.jinja";
    }
  }
  return cfg;
}

}  // namespace linnet::chat
