// The interpreter: argument binding, the services builtins use, the globals
// (raise_exception, strftime_now, namespace, dict, range) and a render's
// entry point. The rest: interpreter_statements.cpp, interpreter_expressions.cpp
// (with attribute and item access and calls), interpreter_operators.cpp.
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

std::tm defaultClock() {
  std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  localtime_r(&t, &tm);
  return tm;
}

}  // namespace

void storeInNamespace(Interpreter& in, NamespaceData& ns, const std::string& name, const Value& v) {
  checkNamespaceName(in, name);
  if (holdsMutable(v))
    in.fail("TypeError", "this engine cannot store a namespace, macro or function inside a namespace");
  ns.attrs.set(Value::string(name), v);
}

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
  ReprLimit reprLimit(opts_.limits.maxOutputBytes);
  try {
    execBody(prog_.body);
  } catch (const ValueTooLarge&) {
    limit("the text of a value exceeds the limit of " + std::to_string(opts_.limits.maxOutputBytes) + " bytes");
  }
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

}  // namespace linnet::chat::detail
