// The interpreter's operators with Python's semantics: arithmetic, `~`,
// comparisons, `in`, and iteration.
#include "chat/interpreter.h"

#include <cmath>

#include "chat/unicode.h"

namespace linnet::chat::detail {

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

// `seq * n` for a str, list or tuple and n >= 0, within the output limit.
Value repeatSequence(Interpreter& in, const Value& seq, int64_t n) {
  const size_t maxBytes = in.options().limits.maxOutputBytes;
  if (seq.isString()) {
    const std::string& s = seq.asString();
    if (!s.empty() && static_cast<uint64_t>(n) > maxBytes / s.size()) in.checkSize(maxBytes + 1);
    in.checkSize(s.size() * static_cast<size_t>(n));
    std::string out;
    out.reserve(s.size() * static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) out += s;
    return Value::string(std::move(out));
  }
  const auto& items = seq.asList().items;
  if (!items.empty() && static_cast<uint64_t>(n) > maxBytes / items.size()) in.checkSize(maxBytes + 1);
  in.checkSize(items.size() * static_cast<size_t>(n));
  std::vector<Value> out;
  out.reserve(items.size() * static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), items.begin(), items.end());
  return Value::list(std::move(out), seq.asList().isTuple);
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
    return repeatSequence(*this, *seq, std::max<int64_t>(0, count->intLike()));
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

}  // namespace linnet::chat::detail
