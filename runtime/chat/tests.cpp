// Tests (`value is name(args)`), as jinja2/tests.py: a name -> function table.
#include <cmath>
#include <unordered_map>

#include "chat/builtins.h"

namespace linnet::chat::detail {

namespace {

const Value& testArg(Interpreter& in, CallArgs& a, const char* name) {
  if (a.pos.empty()) in.fail("TypeError", std::string("test '") + name + "' needs an argument");
  return a.pos[0];
}

bool tDefined(Interpreter&, const Value& v, CallArgs&) { return !v.isUndefined(); }
bool tUndefined(Interpreter&, const Value& v, CallArgs&) { return v.isUndefined(); }
bool tNone(Interpreter&, const Value& v, CallArgs&) { return v.isNone(); }
bool tBoolean(Interpreter&, const Value& v, CallArgs&) { return v.isBool(); }
bool tFalse(Interpreter&, const Value& v, CallArgs&) { return v.isBool() && !v.asBool(); }
bool tTrue(Interpreter&, const Value& v, CallArgs&) { return v.isBool() && v.asBool(); }
bool tInteger(Interpreter&, const Value& v, CallArgs&) { return v.isInt(); }
bool tFloat(Interpreter&, const Value& v, CallArgs&) { return v.isFloat(); }
bool tNumber(Interpreter&, const Value& v, CallArgs&) { return v.isNumber(); }
bool tString(Interpreter&, const Value& v, CallArgs&) { return v.isString(); }
bool tMapping(Interpreter&, const Value& v, CallArgs&) { return v.isDict(); }
bool tIterable(Interpreter&, const Value& v, CallArgs&) {
  return v.isUndefined() || v.isString() || v.isList() || v.isDict();
}
bool tSequence(Interpreter&, const Value& v, CallArgs&) {
  return v.isUndefined() || v.isString() || v.isSequence() || v.isDict();
}
// jinja2's Undefined defines __call__ (to raise), so callable() is true for it.
bool tCallable(Interpreter&, const Value& v, CallArgs&) { return v.isCallable() || v.isUndefined(); }
bool tEscaped(Interpreter&, const Value&, CallArgs&) { return false; }
bool tSameas(Interpreter& in, const Value& v, CallArgs& a) { return v.identical(testArg(in, a, "sameas")); }
// value % n as Python computes it (ints, bools and floats).
Value pyMod(Interpreter& in, const Value& v, const Value& n) {
  if (v.isUndefined()) in.failUndefined(v);
  if (!v.isNumber() || !n.isNumber())
    in.fail("TypeError", "unsupported operand type(s) for %: '" + v.typeName() + "' and '" + n.typeName() + "'");
  if (v.isFloat() || n.isFloat()) {
    double x = v.toDouble(), y = n.toDouble();
    if (y == 0.0) in.fail("ZeroDivisionError", "float modulo");
    double m = std::fmod(x, y);
    if (m != 0.0 && ((y < 0) != (m < 0))) m += y;
    return Value::floating(m);
  }
  int64_t x = v.intLike(), y = n.intLike();
  if (y == 0) in.fail("ZeroDivisionError", "integer modulo by zero");
  if (y == -1) return Value::integer(0);
  int64_t r = x % y;
  if (r != 0 && ((r < 0) != (y < 0))) r += y;
  return Value::integer(r);
}
bool tOdd(Interpreter& in, const Value& v, CallArgs&) { return pyMod(in, v, Value::integer(2)).equals(Value::integer(1)); }
bool tEven(Interpreter& in, const Value& v, CallArgs&) { return pyMod(in, v, Value::integer(2)).equals(Value::integer(0)); }
bool tDivisibleby(Interpreter& in, const Value& v, CallArgs& a) {
  return pyMod(in, v, testArg(in, a, "divisibleby")).equals(Value::integer(0));
}
bool tEq(Interpreter& in, const Value& v, CallArgs& a) { return v.equals(testArg(in, a, "eq")); }
bool tNe(Interpreter& in, const Value& v, CallArgs& a) { return !v.equals(testArg(in, a, "ne")); }
bool tLt(Interpreter& in, const Value& v, CallArgs& a) { return in.compare(v, "<", testArg(in, a, "lt")); }
bool tLe(Interpreter& in, const Value& v, CallArgs& a) { return in.compare(v, "<=", testArg(in, a, "le")); }
bool tGt(Interpreter& in, const Value& v, CallArgs& a) { return in.compare(v, ">", testArg(in, a, "gt")); }
bool tGe(Interpreter& in, const Value& v, CallArgs& a) { return in.compare(v, ">=", testArg(in, a, "ge")); }
bool tIn(Interpreter& in, const Value& v, CallArgs& a) { return in.contains(testArg(in, a, "in"), v); }
bool tLower(Interpreter&, const Value& v, CallArgs&) { return hasCased(v.str(), true); }
bool tUpper(Interpreter&, const Value& v, CallArgs&) { return hasCased(v.str(), false); }
bool tFilter(Interpreter& in, const Value& v, CallArgs&) { return v.isString() && in.hasFilter(v.asString()); }
bool tTest(Interpreter& in, const Value& v, CallArgs&) { return v.isString() && in.hasTest(v.asString()); }

const std::unordered_map<std::string, TestFn>& testTable() {
  static const std::unordered_map<std::string, TestFn> t = {
      {"defined", tDefined},   {"undefined", tUndefined}, {"none", tNone},       {"boolean", tBoolean},
      {"false", tFalse},       {"true", tTrue},           {"integer", tInteger}, {"float", tFloat},
      {"number", tNumber},     {"string", tString},       {"mapping", tMapping}, {"iterable", tIterable},
      {"sequence", tSequence}, {"callable", tCallable},   {"escaped", tEscaped}, {"sameas", tSameas},
      {"odd", tOdd},           {"even", tEven},           {"divisibleby", tDivisibleby},
      {"eq", tEq},             {"equalto", tEq},          {"==", tEq},           {"ne", tNe},
      {"!=", tNe},             {"lt", tLt},               {"lessthan", tLt},     {"<", tLt},
      {"le", tLe},             {"<=", tLe},               {"gt", tGt},           {"greaterthan", tGt},
      {">", tGt},              {"ge", tGe},               {">=", tGe},           {"in", tIn},
      {"lower", tLower},       {"upper", tUpper},         {"filter", tFilter},   {"test", tTest},
  };
  return t;
}

}  // namespace

TestFn findTest(const std::string& name) {
  auto& t = testTable();
  auto it = t.find(name);
  return it == t.end() ? nullptr : it->second;
}

size_t testArity(const std::string& name) {
  static const char* oneArg[] = {"sameas", "divisibleby", "eq", "equalto", "==", "ne", "!=", "lt", "lessthan", "<",
                                 "le", "<=", "gt", "greaterthan", ">", "ge", ">=", "in"};
  for (const char* n : oneArg)
    if (name == n) return 1;
  return 0;
}

}  // namespace linnet::chat::detail
