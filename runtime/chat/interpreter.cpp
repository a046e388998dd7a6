#include "chat/interpreter.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "chat/errors.h"
#include "chat/unicode.h"

namespace linnet::chat::detail {

// ---------------------------------------------------------------------------
// ArgBinder

ArgBinder::ArgBinder(Interpreter& in, const std::string& fname, CallArgs& args,
                     std::initializer_list<const char*> names)
    : vals_(names.size(), nullptr) {
  if (args.pos.size() > names.size())
    in.fail("TypeError", fname + "() takes at most " + std::to_string(names.size()) + " argument(s) (" +
                             std::to_string(args.pos.size()) + " given)");
  for (size_t i = 0; i < args.pos.size(); ++i) vals_[i] = &args.pos[i];
  for (const auto& kv : args.kw) {
    size_t idx = 0;
    bool found = false;
    for (const char* n : names) {
      if (kv.first == n) {
        found = true;
        break;
      }
      ++idx;
    }
    if (!found) in.fail("TypeError", fname + "() got an unexpected keyword argument '" + kv.first + "'");
    if (vals_[idx]) in.fail("TypeError", fname + "() got multiple values for argument '" + kv.first + "'");
    vals_[idx] = &kv.second;
  }
}

// ---------------------------------------------------------------------------
// Setup

Interpreter::Interpreter(const Program& prog, const RenderOptions& opts) : prog_(prog), opts_(opts) {}

void Interpreter::fail(const std::string& kind, const std::string& message) const {
  size_t line, col;
  prog_.map.location(offset_, line, col);
  throw TemplateRuntimeError(prog_.name, line, col, message, kind);
}

void Interpreter::limit(const std::string& message) const {
  size_t line, col;
  prog_.map.location(offset_, line, col);
  throw TemplateLimitError(prog_.name, line, col, message);
}

void Interpreter::checkSize(size_t n) {
  if (n > opts_.limits.maxOutputBytes)
    limit("a value of " + std::to_string(n) + " bytes or items exceeds the limit of " +
          std::to_string(opts_.limits.maxOutputBytes));
  charge(n >> 6);
}

void Interpreter::checkDepth(const Value& v) const {
  if (v.depth() > kMaxValueDepth)
    limit("containers nested more than " + std::to_string(kMaxValueDepth) + " levels deep");
}

void Interpreter::charge(uint64_t steps) {
  steps_ += steps;
  if (steps_ > opts_.limits.maxSteps)
    limit("the render took more than " + std::to_string(opts_.limits.maxSteps) + " evaluation steps");
}

void Interpreter::emit(const std::string& s) {
  if (s.empty()) return;
  if (out_->size() + s.size() > opts_.limits.maxOutputBytes)
    limit("the output exceeds the limit of " + std::to_string(opts_.limits.maxOutputBytes) + " bytes");
  charge(s.size() >> 6);
  out_->append(s);
}

namespace {

std::string checkNamespaceName(Interpreter& in, const std::string& name) {
  if (!name.empty() && name[0] == '_')
    in.fail("SecurityError", "Chat templates cannot store underscore-prefixed attributes on a namespace, but got " +
                                 pyReprString(name) + ". Please rename the attribute.");
  return name;
}

// Namespaces may not (even indirectly) hold namespaces or callables: that
// keeps every value acyclic.
bool holdsMutable(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Namespace:
    case Value::Kind::Callable: return true;
    case Value::Kind::List:
      for (const auto& x : v.asList().items)
        if (holdsMutable(x)) return true;
      return false;
    case Value::Kind::Dict:
      for (const auto& kv : v.asDict().items)
        if (holdsMutable(kv.first) || holdsMutable(kv.second)) return true;
      return false;
    default: return false;
  }
}

void storeInNamespace(Interpreter& in, NamespaceData& ns, const std::string& name, const Value& v) {
  checkNamespaceName(in, name);
  if (holdsMutable(v))
    in.fail("TypeError", "this engine cannot store a namespace, macro or function inside a namespace");
  ns.attrs.set(Value::string(name), v);
}

std::tm defaultClock() {
  std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  localtime_r(&t, &tm);
  return tm;
}

}  // namespace

void Interpreter::installGlobals() {
  auto& g = globals_->vars;
  g["raise_exception"] = Value::callable("raise_exception", [](Interpreter& in, CallArgs& args) -> Value {
    ArgBinder b(in, "raise_exception", args, {"message"});
    std::string msg = b.has(0) ? b.get(0).str() : std::string();
    size_t line, col;
    in.prog_.map.location(in.offset_, line, col);
    throw TemplateRaisedError(in.prog_.name, line, col, msg);
  });
  g["strftime_now"] = Value::callable("strftime_now", [](Interpreter& in, CallArgs& args) -> Value {
    ArgBinder b(in, "strftime_now", args, {"format"});
    if (!b.has(0)) in.fail("TypeError", "strftime_now() missing 1 required positional argument: 'format'");
    if (!b.get(0).isString())
      in.fail("TypeError", "strftime() argument 1 must be str, not " + b.get(0).typeName());
    const std::string& fmt = b.get(0).asString();
    if (fmt.empty()) return Value::string("");
    std::tm tm = in.opts_.clock ? in.opts_.clock() : defaultClock();
    in.checkSize(fmt.size() * 64);
    std::string buf(fmt.size() * 64 + 64, '\0');
    size_t n = std::strftime(buf.data(), buf.size(), fmt.c_str(), &tm);
    buf.resize(n);
    return Value::string(buf);
  });
  g["namespace"] = Value::callable("namespace", [](Interpreter& in, CallArgs& args) -> Value {
    if (args.pos.size() > 1) in.fail("TypeError", "namespace() takes at most 1 positional argument");
    Value ns = Value::nameSpace(DictData{});
    auto& data = ns.asNamespace();
    if (!args.pos.empty()) {
      const Value& init = args.pos[0];
      if (init.isDict()) {
        for (const auto& kv : init.asDict().items) {
          if (!kv.first.isString()) in.fail("TypeError", "namespace attribute names must be strings");
          storeInNamespace(in, data, kv.first.asString(), kv.second);
        }
      } else {
        for (const auto& item : in.iterate(init)) {
          auto pair = in.iterate(item);
          if (pair.size() != 2 || !pair[0].isString())
            in.fail("TypeError", "namespace() needs a mapping or (name, value) pairs");
          storeInNamespace(in, data, pair[0].asString(), pair[1]);
        }
      }
    }
    for (const auto& kv : args.kw) storeInNamespace(in, data, kv.first, kv.second);
    return ns;
  });
  g["dict"] = Value::callable("dict", [](Interpreter& in, CallArgs& args) -> Value {
    if (args.pos.size() > 1) in.fail("TypeError", "dict expected at most 1 argument, got " + std::to_string(args.pos.size()));
    DictData d;
    if (!args.pos.empty()) {
      const Value& init = args.pos[0];
      if (init.isDict()) {
        d = init.asDict();
      } else {
        for (const auto& item : in.iterate(init)) {
          auto pair = in.iterate(item);
          if (pair.size() != 2)
            in.fail("ValueError", "dictionary update sequence element has length " + std::to_string(pair.size()) +
                                      "; 2 is required");
          if (pair[0].isList() || pair[0].isDict() || pair[0].isNamespace())
            in.fail("TypeError", "unhashable type: '" + pair[0].typeName() + "'");
          d.set(pair[0], pair[1]);
        }
      }
    }
    for (const auto& kv : args.kw) d.set(Value::string(kv.first), kv.second);
    Value v = Value::dict(std::move(d));
    in.checkDepth(v);
    return v;
  });
  g["range"] = Value::callable("range", [](Interpreter& in, CallArgs& args) -> Value {
    if (args.pos.empty() || args.pos.size() > 3 || !args.kw.empty())
      in.fail("TypeError", "range expected 1 to 3 integer arguments");
    int64_t v[3];
    for (size_t i = 0; i < args.pos.size(); ++i) {
      const Value& a = args.pos[i];
      if (a.isUndefined()) in.failUndefined(a);
      if (!a.isInt() && !a.isBool())
        in.fail("TypeError", "'" + a.typeName() + "' object cannot be interpreted as an integer");
      v[i] = a.intLike();
    }
    int64_t start = 0, stop, step = 1;
    if (args.pos.size() == 1) {
      stop = v[0];
    } else {
      start = v[0];
      stop = v[1];
      if (args.pos.size() == 3) step = v[2];
    }
    if (step == 0) in.fail("ValueError", "range() arg 3 must not be zero");
    // Length without overflow.
    long double span = step > 0 ? (long double)stop - (long double)start : (long double)start - (long double)stop;
    long double astep = step > 0 ? (long double)step : -(long double)step;
    long double len = span <= 0 ? 0 : std::floor((span - 1) / astep) + 1;
    if (len > (long double)in.opts_.limits.maxRange)
      in.fail("OverflowError", "Range too big. The sandbox blocks ranges larger than MAX_RANGE (" +
                                   std::to_string(in.opts_.limits.maxRange) + ").");
    std::vector<Value> out;
    int64_t n = static_cast<int64_t>(len);
    out.reserve(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) out.push_back(Value::integer(start + i * step));
    return Value::list(std::move(out));
  });
}

std::string Interpreter::run(const Value& context) {
  globals_ = std::make_shared<Scope>();
  installGlobals();
  auto ctxScope = std::make_shared<Scope>();
  ctxScope->parent = globals_;
  if (context.isDict()) {
    for (const auto& kv : context.asDict().items)
      if (kv.first.isString()) ctxScope->vars[kv.first.asString()] = kv.second;
  }
  templateScope_ = std::make_shared<Scope>();
  templateScope_->parent = ctxScope;
  predeclare(*templateScope_, prog_.rootUndefined);
  scope_ = templateScope_;
  std::string out;
  out_ = &out;
  execBody(prog_.body);
  return out;
}

void Interpreter::predeclare(Scope& scope, const std::vector<std::string>& names) {
  for (const auto& n : names) scope.vars.emplace(n, Value::undefined(pyReprString(n) + " is undefined"));
}

Value Interpreter::lookup(const std::string& name) const {
  for (const Scope* s = scope_.get(); s; s = s->parent.get()) {
    auto it = s->vars.find(name);
    if (it != s->vars.end()) return it->second;
  }
  return Value::undefined(pyReprString(name) + " is undefined");
}

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

// ---------------------------------------------------------------------------
// Expressions

void Interpreter::evalArgs(const Expr& e, CallArgs& args) {
  args.pos.reserve(e.children.size());
  for (const auto& c : e.children) args.pos.push_back(eval(*c));
  for (const auto& kv : e.kwargs) args.kw.emplace_back(kv.first, eval(*kv.second));
}

Value Interpreter::evalFilterChain(const Expr& e, Value input) {
  // e is a Filter whose innermost `a` is null (the block body).
  Value in = e.a ? evalFilterChain(*e.a, std::move(input)) : std::move(input);
  CallArgs args;
  evalArgs(e, args);
  offset_ = e.offset;
  return applyFilter(e.name, in, args);
}

Value Interpreter::eval(const Expr& e) {
  offset_ = e.offset;
  NestingGuard guard(*this);
  charge(1);
  switch (e.kind) {
    case ExprKind::Const: return e.value;
    case ExprKind::Name: return lookup(e.name);
    case ExprKind::List:
    case ExprKind::Tuple: {
      std::vector<Value> items;
      items.reserve(e.children.size());
      for (const auto& c : e.children) items.push_back(eval(*c));
      Value v = Value::list(std::move(items), e.kind == ExprKind::Tuple);
      offset_ = e.offset;
      checkDepth(v);
      return v;
    }
    case ExprKind::Dict: {
      DictData d;
      for (size_t i = 0; i + 1 < e.children.size(); i += 2) {
        Value k = eval(*e.children[i]);
        Value v = eval(*e.children[i + 1]);
        offset_ = e.offset;
        if (k.isList() && !k.asList().isTuple) fail("TypeError", "unhashable type: 'list'");
        if (k.isDict() || k.isNamespace()) fail("TypeError", "unhashable type: '" + k.typeName() + "'");
        d.set(std::move(k), std::move(v));
      }
      Value v = Value::dict(std::move(d));
      checkDepth(v);
      return v;
    }
    case ExprKind::Getattr: {
      Value obj = eval(*e.a);
      offset_ = e.offset;
      return getAttr(obj, e.name);
    }
    case ExprKind::Getitem: {
      Value obj = eval(*e.a);
      Value key = eval(*e.b);
      offset_ = e.offset;
      return getItem(obj, key);
    }
    case ExprKind::Slice: {
      Value obj = eval(*e.a);
      Value parts[3];
      for (size_t i = 0; i < 3; ++i)
        parts[i] = e.children[i] ? eval(*e.children[i]) : Value::none();
      offset_ = e.offset;
      return slice(obj, parts[0], parts[1], parts[2]);
    }
    case ExprKind::Call: {
      Value callee = eval(*e.a);
      CallArgs args;
      evalArgs(e, args);
      offset_ = e.offset;
      return call(callee, args);
    }
    case ExprKind::Filter: {
      Value input = eval(*e.a);
      CallArgs args;
      evalArgs(e, args);
      offset_ = e.offset;
      return applyFilter(e.name, input, args);
    }
    case ExprKind::Test: {
      Value input = eval(*e.a);
      CallArgs args;
      evalArgs(e, args);
      offset_ = e.offset;
      bool r = applyTest(e.name, input, args);
      return Value::boolean(e.negated ? !r : r);
    }
    case ExprKind::Unary: {
      Value v = eval(*e.a);
      offset_ = e.offset;
      if (v.isUndefined()) failUndefined(v);
      if (!v.isNumber()) fail("TypeError", "bad operand type for unary " + e.name + ": '" + v.typeName() + "'");
      if (e.name == "+") return v.isBool() ? Value::integer(v.intLike()) : v;
      if (v.isFloat()) return Value::floating(-v.asFloat());
      if (v.intLike() == INT64_MIN) fail("OverflowError", "integer overflow");
      return Value::integer(-v.intLike());
    }
    case ExprKind::Binary: {
      Value a = eval(*e.a);
      Value b = eval(*e.b);
      offset_ = e.offset;
      return binary(e.name, a, b);
    }
    case ExprKind::Compare: {
      Value left = eval(*e.a);
      for (size_t i = 0; i < e.ops.size(); ++i) {
        Value right = eval(*e.children[i]);
        offset_ = e.offset;
        const std::string& op = e.ops[i];
        bool r;
        if (op == "==") {
          r = left.equals(right);
        } else if (op == "!=") {
          r = !left.equals(right);
        } else if (op == "in") {
          r = contains(right, left);
        } else if (op == "notin") {
          r = !contains(right, left);
        } else {
          r = compare(left, op, right);
        }
        if (!r) return Value::boolean(false);
        left = std::move(right);
      }
      return Value::boolean(true);
    }
    case ExprKind::And: {
      Value l = eval(*e.a);
      if (!l.truthy()) return l;
      return eval(*e.b);
    }
    case ExprKind::Or: {
      Value l = eval(*e.a);
      if (l.truthy()) return l;
      return eval(*e.b);
    }
    case ExprKind::Not: return Value::boolean(!eval(*e.a).truthy());
    case ExprKind::CondExpr: {
      if (eval(*e.a).truthy()) return eval(*e.b);
      if (e.c) return eval(*e.c);
      size_t line, col;
      prog_.map.location(e.offset, line, col);
      return Value::undefined("the inline if-expression on line " + std::to_string(line) +
                              " evaluated to false and no else section was defined.");
    }
  }
  return Value();
}

// ---------------------------------------------------------------------------
// Operators

namespace {

double pyFloatMod(double a, double b) {
  double mod = std::fmod(a, b);
  if (mod != 0.0) {
    if ((b < 0) != (mod < 0)) mod += b;
  } else {
    mod = std::copysign(0.0, b);
  }
  return mod;
}

double pyFloatFloorDiv(double a, double b) {
  double mod = std::fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0.0) {
    if ((b < 0) != (mod < 0)) div -= 1.0;
  }
  double floordiv;
  if (div != 0.0) {
    floordiv = std::floor(div);
    if (div - floordiv > 0.5) floordiv += 1.0;
  } else {
    floordiv = std::copysign(0.0, a / b);
  }
  return floordiv;
}

}  // namespace

Value Interpreter::binary(const std::string& op, const Value& a, const Value& b) {
  if (op == "~") {
    std::string s = a.str();
    std::string t = b.str();
    checkSize(s.size() + t.size());
    return Value::string(s + t);
  }
  if (op == "%" && a.isString()) return Value::string(pyPercentFormat(*this, a.asString(), b));
  if (a.isUndefined()) failUndefined(a);
  if (b.isUndefined()) failUndefined(b);
  auto unsupported = [&]() {
    fail("TypeError", "unsupported operand type(s) for " + op + ": '" + a.typeName() + "' and '" + b.typeName() + "'");
  };
  const bool nums = a.isNumber() && b.isNumber();
  const bool anyFloat = a.isFloat() || b.isFloat();
  if (op == "+") {
    if (nums) {
      if (anyFloat) return Value::floating(a.toDouble() + b.toDouble());
      int64_t r;
      if (__builtin_add_overflow(a.intLike(), b.intLike(), &r)) fail("OverflowError", "integer overflow");
      return Value::integer(r);
    }
    if (a.isString()) {
      if (!b.isString()) fail("TypeError", "can only concatenate str (not \"" + b.typeName() + "\") to str");
      checkSize(a.asString().size() + b.asString().size());
      return Value::string(a.asString() + b.asString());
    }
    if (a.isSequence()) {
      if (!b.isSequence() || b.asList().isTuple != a.asList().isTuple)
        fail("TypeError", "can only concatenate " + a.typeName() + " (not \"" + b.typeName() + "\") to " +
                              a.typeName());
      const auto& x = a.asList().items;
      const auto& y = b.asList().items;
      checkSize(x.size() + y.size());
      std::vector<Value> out;
      out.reserve(x.size() + y.size());
      out.insert(out.end(), x.begin(), x.end());
      out.insert(out.end(), y.begin(), y.end());
      return Value::list(std::move(out), a.asList().isTuple);
    }
    unsupported();
  }
  if (op == "-") {
    if (!nums) unsupported();
    if (anyFloat) return Value::floating(a.toDouble() - b.toDouble());
    int64_t r;
    if (__builtin_sub_overflow(a.intLike(), b.intLike(), &r)) fail("OverflowError", "integer overflow");
    return Value::integer(r);
  }
  if (op == "*") {
    if (nums) {
      if (anyFloat) return Value::floating(a.toDouble() * b.toDouble());
      int64_t r;
      if (__builtin_mul_overflow(a.intLike(), b.intLike(), &r)) fail("OverflowError", "integer overflow");
      return Value::integer(r);
    }
    const Value* seq = nullptr;
    const Value* count = nullptr;
    if ((a.isString() || a.isSequence()) && (b.isInt() || b.isBool())) {
      seq = &a;
      count = &b;
    } else if ((b.isString() || b.isSequence()) && (a.isInt() || a.isBool())) {
      seq = &b;
      count = &a;
    }
    if (!seq) {
      if (a.isString() || b.isString() || a.isSequence() || b.isSequence())
        fail("TypeError", "can't multiply sequence by non-int of type '" +
                              ((a.isString() || a.isSequence()) ? b.typeName() : a.typeName()) + "'");
      unsupported();
    }
    int64_t n = std::max<int64_t>(0, count->intLike());
    if (seq->isString()) {
      const std::string& s = seq->asString();
      if (!s.empty() && static_cast<uint64_t>(n) > opts_.limits.maxOutputBytes / s.size())
        checkSize(opts_.limits.maxOutputBytes + 1);
      checkSize(s.size() * static_cast<size_t>(n));
      std::string out;
      out.reserve(s.size() * static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) out += s;
      return Value::string(std::move(out));
    }
    const auto& items = seq->asList().items;
    if (!items.empty() && static_cast<uint64_t>(n) > opts_.limits.maxOutputBytes / items.size())
      checkSize(opts_.limits.maxOutputBytes + 1);
    checkSize(items.size() * static_cast<size_t>(n));
    std::vector<Value> out;
    out.reserve(items.size() * static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) out.insert(out.end(), items.begin(), items.end());
    return Value::list(std::move(out), seq->asList().isTuple);
  }
  if (op == "/") {
    if (!nums) unsupported();
    if (b.toDouble() == 0.0) fail("ZeroDivisionError", "division by zero");
    return Value::floating(a.toDouble() / b.toDouble());
  }
  if (op == "//") {
    if (!nums) unsupported();
    if (anyFloat) {
      if (b.toDouble() == 0.0) fail("ZeroDivisionError", "float floor division by zero");
      return Value::floating(pyFloatFloorDiv(a.toDouble(), b.toDouble()));
    }
    int64_t x = a.intLike(), y = b.intLike();
    if (y == 0) fail("ZeroDivisionError", "integer division or modulo by zero");
    if (x == INT64_MIN && y == -1) fail("OverflowError", "integer overflow");
    int64_t q = x / y;
    if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
    return Value::integer(q);
  }
  if (op == "%") {
    if (a.isString()) return Value::string(pyPercentFormat(*this, a.asString(), b));
    if (!nums) unsupported();
    if (anyFloat) {
      if (b.toDouble() == 0.0) fail("ZeroDivisionError", "float modulo");
      return Value::floating(pyFloatMod(a.toDouble(), b.toDouble()));
    }
    int64_t x = a.intLike(), y = b.intLike();
    if (y == 0) fail("ZeroDivisionError", "integer modulo by zero");
    if (y == -1) return Value::integer(0);
    int64_t r = x % y;
    if (r != 0 && ((r < 0) != (y < 0))) r += y;
    return Value::integer(r);
  }
  if (op == "**") {
    if (!nums) unsupported();
    if (!anyFloat && b.intLike() >= 0) {
      int64_t base = a.intLike(), e = b.intLike(), r = 1;
      while (e > 0) {
        if (e & 1) {
          if (__builtin_mul_overflow(r, base, &r)) fail("OverflowError", "integer overflow");
        }
        e >>= 1;
        if (e > 0 && __builtin_mul_overflow(base, base, &base)) fail("OverflowError", "integer overflow");
      }
      return Value::integer(r);
    }
    double x = a.toDouble(), y = b.toDouble();
    if (x == 0.0 && y < 0) fail("ZeroDivisionError", "0.0 cannot be raised to a negative power");
    if (x < 0 && y != std::floor(y)) fail("ValueError", "negative number cannot be raised to a fractional power");
    double r = std::pow(x, y);
    if (std::isinf(r) && std::isfinite(x) && std::isfinite(y)) fail("OverflowError", "(34, 'Numerical result out of range')");
    return Value::floating(r);
  }
  unsupported();
  return Value();
}

bool Interpreter::compare(const Value& a, const std::string& op, const Value& b) {
  if (a.isUndefined()) failUndefined(a);
  if (b.isUndefined()) failUndefined(b);
  int c = 0;
  if (a.isNumber() && b.isNumber()) {
    if (a.isFloat() || b.isFloat()) {
      double x = a.toDouble(), y = b.toDouble();
      if (std::isnan(x) || std::isnan(y)) return false;
      c = x < y ? -1 : x > y ? 1 : 0;
    } else {
      c = a.intLike() < b.intLike() ? -1 : a.intLike() > b.intLike() ? 1 : 0;
    }
  } else if (a.isString() && b.isString()) {
    int r = a.asString().compare(b.asString());
    c = r < 0 ? -1 : r > 0 ? 1 : 0;
  } else if (a.isSequence() && b.isSequence() && a.asList().isTuple == b.asList().isTuple) {
    const auto& x = a.asList().items;
    const auto& y = b.asList().items;
    size_t i = 0;
    while (i < x.size() && i < y.size() && x[i].equals(y[i])) ++i;
    if (i < x.size() && i < y.size()) return compare(x[i], op, y[i]);
    c = x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
  } else {
    fail("TypeError", "'" + op + "' not supported between instances of '" + a.typeName() + "' and '" +
                          b.typeName() + "'");
  }
  if (op == "<") return c < 0;
  if (op == "<=") return c <= 0;
  if (op == ">") return c > 0;
  return c >= 0;
}

bool Interpreter::contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::Undefined: return false;
    case Value::Kind::String:
      if (!item.isString())
        fail("TypeError", "'in <string>' requires string as left operand, not " + item.typeName());
      return container.asString().find(item.asString()) != std::string::npos;
    case Value::Kind::List:
      if (!container.asList().deferredKind.empty()) iterate(container);
      for (const auto& x : container.asList().items)
        if (x.identical(item) || x.equals(item)) return true;
      return false;
    case Value::Kind::Dict:
      if ((item.isList() && !item.asList().isTuple && !item.asList().isIterator()) || item.isDict() ||
          item.isNamespace())
        fail("TypeError", "unhashable type: '" + item.typeName() + "'");
      return container.asDict().find(item) != nullptr;
    default: fail("TypeError", "argument of type '" + container.typeName() + "' is not iterable");
  }
}

std::vector<Value> Interpreter::iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return {};
    case Value::Kind::List:
      if (!v.asList().deferredKind.empty()) fail(v.asList().deferredKind, v.asList().deferredMessage);
      return v.asList().items;
    case Value::Kind::Dict: {
      std::vector<Value> keys;
      keys.reserve(v.asDict().items.size());
      for (const auto& kv : v.asDict().items) keys.push_back(kv.first);
      return keys;
    }
    case Value::Kind::String: {
      std::vector<Value> chars;
      const std::string& s = v.asString();
      size_t i = 0;
      while (i < s.size()) {
        size_t len;
        decodeUtf8(s, i, len);
        chars.push_back(Value::string(s.substr(i, len)));
        i += len;
      }
      return chars;
    }
    default: fail("TypeError", "'" + v.typeName() + "' object is not iterable");
  }
}

// ---------------------------------------------------------------------------
// Attribute and item access, calls

Value Interpreter::getAttr(const Value& obj, const std::string& name) {
  if (obj.isUndefined()) failUndefined(obj);
  auto missing = [&]() {
    return Value::undefined(pyReprString(obj.objectTypeRepr()) + " has no attribute " + pyReprString(name));
  };
  auto method = [&]() {
    Value self = obj;
    std::string mname = name;
    return Value::callable(name, [self, mname](Interpreter& in, CallArgs& args) {
      return in.callMethod(self, mname, args);
    });
  };
  if (isUnsafeMethod(obj, name)) {
    return Value::undefined("access to attribute " + pyReprString(name) + " of " + pyReprString(obj.typeName()) +
                                " object is unsafe.",
                            "SecurityError");
  }
  switch (obj.kind()) {
    case Value::Kind::Dict: {
      if (isDictMethod(name)) return method();
      if (const Value* v = obj.asDict().findStr(name)) return *v;
      return missing();
    }
    case Value::Kind::Namespace: {
      if (const Value* v = obj.asNamespace().attrs.findStr(name)) return *v;
      return missing();
    }
    case Value::Kind::String:
      if (isStringMethod(name)) return method();
      return missing();
    case Value::Kind::List:
      if (obj.asList().isPlain() && isListMethod(name)) return method();
      return missing();
    default: return missing();
  }
}

Value Interpreter::getItem(const Value& obj, const Value& key) {
  if (obj.isUndefined()) failUndefined(obj);
  auto missing = [&]() {
    if (key.isString())
      return Value::undefined(pyReprString(obj.objectTypeRepr()) + " has no attribute " + key.repr());
    return Value::undefined(obj.objectTypeRepr() + " has no element " + key.repr());
  };
  switch (obj.kind()) {
    case Value::Kind::Dict: {
      if (!(key.isList() && !key.asList().isTuple) && !key.isDict() && !key.isNamespace()) {
        if (const Value* v = obj.asDict().find(key)) return *v;
      }
      if (key.isString()) return getAttr(obj, key.asString());
      return missing();
    }
    case Value::Kind::List: {
      if (!obj.asList().isPlain()) return missing();
      if (key.isInt() || key.isBool()) {
        const auto& items = obj.asList().items;
        int64_t i = key.intLike();
        const int64_t n = static_cast<int64_t>(items.size());
        if (i < 0) i += n;
        if (i < 0 || i >= n) return missing();
        return items[static_cast<size_t>(i)];
      }
      if (key.isString()) return getAttr(obj, key.asString());
      return missing();
    }
    case Value::Kind::String: {
      if (key.isInt() || key.isBool()) {
        const std::string& s = obj.asString();
        auto offs = codePointOffsets(s);
        const int64_t n = static_cast<int64_t>(offs.size()) - 1;
        int64_t i = key.intLike();
        if (i < 0) i += n;
        if (i < 0 || i >= n) return missing();
        return Value::string(s.substr(offs[static_cast<size_t>(i)], offs[static_cast<size_t>(i) + 1] - offs[static_cast<size_t>(i)]));
      }
      if (key.isString()) return getAttr(obj, key.asString());
      return missing();
    }
    case Value::Kind::Namespace:
      if (key.isString()) return getAttr(obj, key.asString());
      return missing();
    default: return missing();
  }
}

Value Interpreter::slice(const Value& obj, const Value& start, const Value& stop, const Value& step) {
  if (obj.isUndefined()) failUndefined(obj);
  // jinja2 compiles x[a:b] to a plain Python subscript: no undefined fallback.
  if (obj.isDict()) fail("TypeError", "unhashable type: 'slice'");
  if (!obj.isString() && !obj.isSequence()) fail("TypeError", "'" + obj.typeName() + "' object is not subscriptable");
  auto idx = [&](const Value& v, bool& isNone, int64_t& out) -> bool {
    isNone = v.isNone();
    if (isNone) return true;
    if (v.isInt() || v.isBool()) {
      out = v.intLike();
      return true;
    }
    return false;
  };
  bool n0, n1, n2;
  int64_t a = 0, b = 0, st = 1;
  for (const Value* v : {&start, &stop, &step})
    if (v->isUndefined()) failUndefined(*v);
  if (!idx(start, n0, a) || !idx(stop, n1, b) || !idx(step, n2, st))
    fail("TypeError", "slice indices must be integers or None or have an __index__ method");
  if (n2) st = 1;
  if (st == 0) fail("ValueError", "slice step cannot be zero");
  if (st == INT64_MIN) st = -INT64_MAX;
  std::vector<size_t> offs;
  int64_t len;
  if (obj.isString()) {
    offs = codePointOffsets(obj.asString());
    len = static_cast<int64_t>(offs.size()) - 1;
  } else {
    len = static_cast<int64_t>(obj.asList().items.size());
  }
  auto adjust = [&](bool isNone, int64_t v, bool isStart) -> int64_t {
    const int64_t lower = st > 0 ? 0 : -1;
    const int64_t upper = st > 0 ? len : len - 1;
    if (isNone) return isStart ? (st < 0 ? upper : lower) : (st < 0 ? lower : upper);
    if (v < 0) {
      v = (v < -len) ? lower : v + len;
      if (v < lower) v = lower;
    } else if (v > upper) {
      v = upper;
    }
    return v;
  };
  int64_t s0 = adjust(n0, a, true);
  int64_t s1 = adjust(n1, b, false);
  std::vector<int64_t> picks;
  if (st > 0) {
    for (int64_t i = s0; i < s1; i += st) {
      picks.push_back(i);
      if (st > len) break;
    }
  } else {
    for (int64_t i = s0; i > s1; i += st) {
      picks.push_back(i);
      if (-st > len) break;
    }
  }
  if (obj.isString()) {
    const std::string& s = obj.asString();
    std::string out;
    if (st == 1 && !picks.empty()) {
      out = s.substr(offs[static_cast<size_t>(picks.front())],
                     offs[static_cast<size_t>(picks.back()) + 1] - offs[static_cast<size_t>(picks.front())]);
    } else {
      for (int64_t i : picks)
        out.append(s, offs[static_cast<size_t>(i)], offs[static_cast<size_t>(i) + 1] - offs[static_cast<size_t>(i)]);
    }
    return Value::string(std::move(out));
  }
  std::vector<Value> out;
  out.reserve(picks.size());
  for (int64_t i : picks) out.push_back(obj.asList().items[static_cast<size_t>(i)]);
  return Value::list(std::move(out), obj.asList().isTuple);
}

Value Interpreter::call(const Value& callee, CallArgs& args) {
  if (callee.isUndefined()) failUndefined(callee);
  if (!callee.isCallable()) fail("TypeError", "'" + callee.typeName() + "' object is not callable");
  size_t savedOffset = offset_;
  Value r = callee.asCallable().fn(*this, args);
  offset_ = savedOffset;
  return r;
}

Value Interpreter::callMethod(const Value& self, const std::string& name, CallArgs& args) {
  bool found = false;
  Value r;
  if (self.isString()) {
    r = callStringMethod(*this, self.asString(), name, args, found);
  } else if (self.isDict()) {
    r = callDictMethod(*this, self, name, args, found);
  } else if (self.isList()) {
    r = callListMethod(*this, self, name, args, found);
  }
  if (!found) fail("TypeError", "'" + self.typeName() + "' object has no method '" + name + "'");
  return r;
}

Value Interpreter::applyFilter(const std::string& name, const Value& input, CallArgs& args) {
  FilterFn f = findFilter(name);
  if (!f) fail("TemplateAssertionError", "No filter named " + pyReprString(name) + ".");
  return f(*this, input, args);
}

bool Interpreter::applyTest(const std::string& name, const Value& input, CallArgs& args) {
  TestFn t = findTest(name);
  if (!t) fail("TemplateAssertionError", "No test named " + pyReprString(name) + ".");
  const size_t arity = testArity(name);
  if (args.pos.size() + args.kw.size() != arity)
    fail("TypeError", "test_" + name + "() takes " + std::to_string(arity + 1) + " positional argument" +
                          (arity ? "s" : "") + " but " + std::to_string(args.pos.size() + args.kw.size() + 1) +
                          " were given");
  return t(*this, input, args);
}

bool Interpreter::hasTest(const std::string& name) const { return findTest(name) != nullptr; }
bool Interpreter::hasFilter(const std::string& name) const { return findFilter(name) != nullptr; }

}  // namespace linnet::chat::detail
