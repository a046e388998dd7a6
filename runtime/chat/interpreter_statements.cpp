// The interpreter's statements: output, if, for (with `loop`), set and set
// blocks, macros, with, filter blocks and scopes.
#include "chat/interpreter.h"

#include <algorithm>

#include "chat/errors.h"
#include "chat/unicode.h"

namespace linnet::chat::detail {

// ---------------------------------------------------------------------------
// Statements

Flow Interpreter::execBody(const Body& body) {
  for (const auto& s : body) {
    Flow f = exec(*s);
    if (f != Flow::Normal) return f;
  }
  return Flow::Normal;
}

std::string Interpreter::renderToString(const Body& body, std::shared_ptr<Scope> scope) {
  std::string buf;
  std::string* savedOut = out_;
  auto savedScope = scope_;
  out_ = &buf;
  scope_ = std::move(scope);
  try {
    execBody(body);
  } catch (...) {
    out_ = savedOut;
    scope_ = savedScope;
    throw;
  }
  out_ = savedOut;
  scope_ = savedScope;
  return buf;
}

Flow Interpreter::exec(const Stmt& s) {
  offset_ = s.offset;
  NestingGuard guard(*this);
  charge(1);
  switch (s.kind) {
    case StmtKind::Data: emit(s.text); return Flow::Normal;
    case StmtKind::Print: {
      Value v = eval(*s.expr);
      emit(v.str());
      return Flow::Normal;
    }
    case StmtKind::If: {
      for (const auto& br : s.branches) {
        if (eval(*br.first).truthy()) return execBody(br.second);
      }
      return execBody(s.elseBody);
    }
    case StmtKind::For: return execForLoop(s);
    case StmtKind::Set: {
      Value v = eval(*s.expr);
      offset_ = s.offset;
      assign(s.target, v);
      return Flow::Normal;
    }
    case StmtKind::SetBlock: {
      auto inner = std::make_shared<Scope>();
      inner->parent = scope_;
      predeclare(*inner, s.bodyUndefined);
      Value v = Value::string(renderToString(s.body, inner));
      if (s.expr) v = evalFilterChain(*s.expr, v);
      offset_ = s.offset;
      assign(s.target, v);
      return Flow::Normal;
    }
    case StmtKind::Macro: {
      scope_->vars[s.name] = makeMacro(s);
      return Flow::Normal;
    }
    case StmtKind::Break: return Flow::Break;
    case StmtKind::Continue: return Flow::Continue;
    case StmtKind::With: {
      auto inner = std::make_shared<Scope>();
      inner->parent = scope_;
      predeclare(*inner, s.bodyUndefined);
      for (size_t i = 0; i < s.withTargets.size(); ++i) {
        Value v = eval(*s.withValues[i]);
        bindTarget(*inner, s.withTargets[i], v);
      }
      auto saved = scope_;
      scope_ = inner;
      Flow f;
      try {
        f = execBody(s.body);
      } catch (...) {
        scope_ = saved;
        throw;
      }
      scope_ = saved;
      return f;
    }
    case StmtKind::FilterBlock: {
      auto inner = std::make_shared<Scope>();
      inner->parent = scope_;
      predeclare(*inner, s.bodyUndefined);
      Value v = Value::string(renderToString(s.body, inner));
      v = evalFilterChain(*s.expr, v);
      emit(v.str());
      return Flow::Normal;
    }
    case StmtKind::Scope: {
      auto inner = std::make_shared<Scope>();
      inner->parent = scope_;
      predeclare(*inner, s.bodyUndefined);
      emit(renderToString(s.body, inner));
      return Flow::Normal;
    }
  }
  return Flow::Normal;
}

void Interpreter::bindTarget(Scope& scope, const Target& t, const Value& v) {
  switch (t.kind) {
    case Target::Kind::Name: scope.vars[t.name] = v; return;
    case Target::Kind::Tuple: {
      if (v.isUndefined()) failUndefined(v);
      std::vector<Value> items = iterate(v);
      if (items.size() < t.items.size())
        fail("ValueError", "not enough values to unpack (expected " + std::to_string(t.items.size()) + ", got " +
                               std::to_string(items.size()) + ")");
      if (items.size() > t.items.size())
        fail("ValueError", "too many values to unpack (expected " + std::to_string(t.items.size()) + ")");
      for (size_t i = 0; i < items.size(); ++i) bindTarget(scope, t.items[i], items[i]);
      return;
    }
    case Target::Kind::NsAttr: {
      Value ns = lookup(t.name);
      if (!ns.isNamespace()) fail("TemplateRuntimeError", "cannot assign attribute on non-namespace object");
      storeInNamespace(*this, ns.asNamespace(), t.attr, v);
      return;
    }
  }
}

void Interpreter::assign(const Target& t, const Value& v) { bindTarget(*scope_, t, v); }

Flow Interpreter::execForLoop(const Stmt& s) {
  Value iterable = eval(*s.expr);
  offset_ = s.offset;
  std::vector<Value> items = iterate(iterable);
  if (s.filter) {
    std::vector<Value> kept;
    auto saved = scope_;
    try {
      for (auto& item : items) {
        auto probe = std::make_shared<Scope>();
        probe->parent = saved;
        bindTarget(*probe, s.target, item);
        scope_ = probe;
        charge(1);
        if (eval(*s.filter).truthy()) kept.push_back(std::move(item));
        scope_ = saved;
      }
    } catch (...) {
      scope_ = saved;
      throw;
    }
    items = std::move(kept);
  }
  // jinja2 runs a loop's else block unless some iteration reached the end of
  // the body: an empty loop, but also one whose iterations all ended in
  // {% break %} or {% continue %}.
  bool bodyCompleted = false;
  auto runElse = [&]() -> Flow {  // a break/continue in it belongs to an enclosing loop
    if (s.elseBody.empty()) return Flow::Normal;
    auto inner = std::make_shared<Scope>();
    inner->parent = scope_;
    predeclare(*inner, s.elseUndefined);
    auto saved = scope_;
    scope_ = inner;
    Flow f;
    try {
      f = execBody(s.elseBody);
    } catch (...) {
      scope_ = saved;
      throw;
    }
    scope_ = saved;
    return f;
  };
  if (items.empty()) return runElse();
  const int64_t n = static_cast<int64_t>(items.size());
  auto saved = scope_;
  try {
    for (int64_t i = 0; i < n; ++i) {
      if (++iterations_ > opts_.limits.maxLoopIterations) {
        offset_ = s.offset;
        limit("more than " + std::to_string(opts_.limits.maxLoopIterations) + " loop iterations");
      }
      auto iter = std::make_shared<Scope>();
      iter->parent = saved;
      predeclare(*iter, s.bodyUndefined);
      offset_ = s.offset;
      bindTarget(*iter, s.target, items[static_cast<size_t>(i)]);
      DictData loop;
      loop.items.reserve(12);
      loop.items.emplace_back(Value::string("index"), Value::integer(i + 1));
      loop.items.emplace_back(Value::string("index0"), Value::integer(i));
      loop.items.emplace_back(Value::string("revindex"), Value::integer(n - i));
      loop.items.emplace_back(Value::string("revindex0"), Value::integer(n - i - 1));
      loop.items.emplace_back(Value::string("first"), Value::boolean(i == 0));
      loop.items.emplace_back(Value::string("last"), Value::boolean(i == n - 1));
      loop.items.emplace_back(Value::string("length"), Value::integer(n));
      loop.items.emplace_back(Value::string("depth"), Value::integer(1));
      loop.items.emplace_back(Value::string("depth0"), Value::integer(0));
      if (i > 0) loop.items.emplace_back(Value::string("previtem"), items[static_cast<size_t>(i - 1)]);
      if (i + 1 < n) loop.items.emplace_back(Value::string("nextitem"), items[static_cast<size_t>(i + 1)]);
      loop.items.emplace_back(Value::string("cycle"),
                              Value::callable("cycle", [i](Interpreter& in, CallArgs& args) -> Value {
                                if (args.pos.empty()) in.fail("TypeError", "no items for cycling given");
                                return args.pos[static_cast<size_t>(i) % args.pos.size()];
                              }));
      iter->vars["loop"] = Value::dict(std::move(loop));
      scope_ = iter;
      Flow f = execBody(s.body);
      scope_ = saved;
      if (f == Flow::Normal) bodyCompleted = true;
      if (f == Flow::Break) break;
    }
  } catch (...) {
    scope_ = saved;
    throw;
  }
  if (!bodyCompleted) return runElse();
  return Flow::Normal;
}

Value Interpreter::makeMacro(const Stmt& s) {
  const Stmt* def = &s;
  std::weak_ptr<Scope> defScope = scope_;
  return Value::callable(s.name, [def, defScope](Interpreter& in, CallArgs& args) -> Value {
    if (in.callDepth_ >= in.opts_.limits.maxCallDepth)
      in.limit("macro calls nested more than " + std::to_string(in.opts_.limits.maxCallDepth) + " deep");
    const auto& params = def->params;
    if (args.pos.size() > params.size())
      in.fail("TypeError", "macro '" + def->name + "' takes not more than " + std::to_string(params.size()) +
                               " argument(s)");
    auto scope = std::make_shared<Scope>();
    auto parent = defScope.lock();
    scope->parent = parent ? parent : in.templateScope_;
    in.predeclare(*scope, def->bodyUndefined);
    std::vector<const Value*> bound(params.size(), nullptr);
    for (size_t i = 0; i < args.pos.size(); ++i) bound[i] = &args.pos[i];
    for (const auto& kv : args.kw) {
      size_t idx = params.size();
      for (size_t i = 0; i < params.size(); ++i)
        if (params[i].name == kv.first) idx = i;
      if (idx == params.size())
        in.fail("TypeError", "macro '" + def->name + "' takes no keyword argument '" + kv.first + "'");
      bound[idx] = &kv.second;
    }
    auto savedScope = in.scope_;
    size_t savedOffset = in.offset_;
    ++in.callDepth_;
    try {
      in.scope_ = scope;
      for (size_t i = 0; i < params.size(); ++i) {
        if (bound[i]) {
          scope->vars[params[i].name] = *bound[i];
        } else if (params[i].defaultValue) {
          scope->vars[params[i].name] = in.eval(*params[i].defaultValue);
        } else {
          scope->vars[params[i].name] =
              Value::undefined("parameter " + pyReprString(params[i].name) + " was not provided");
        }
      }
      in.scope_ = savedScope;
      std::string out = in.renderToString(def->body, scope);
      --in.callDepth_;
      in.offset_ = savedOffset;
      return Value::string(std::move(out));
    } catch (...) {
      --in.callDepth_;
      in.scope_ = savedScope;
      throw;
    }
  });
}

}  // namespace linnet::chat::detail
