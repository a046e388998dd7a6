// The interpreter's expressions, and attribute and item access, slices and
// calls (of callables, methods, filters and tests).
#include "chat/interpreter.h"

#include <algorithm>

#include "chat/unicode.h"

namespace linnet::chat::detail {

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
