// Filters, tests and methods of strings, dicts and lists.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

#include "chat/errors.h"
#include "chat/interpreter.h"
#include "chat/unicode.h"

namespace linnet::chat::detail {

namespace {

std::string toStr(const Value& v) { return v.str(); }

// jinja2 makes select, map, items, ... generators: an error they hit surfaces
// only when the result is iterated, so it is deferred into the result.
template <class F>
Value lazyGenerator(F&& produce) {
  try {
    return Value::special(produce(), ListData::Special::Generator);
  } catch (const TemplateRuntimeError& e) {
    if (e.kind() == "LimitError" || e.kind() == "TemplateError") throw;
    return Value::deferredError(e.kind(), e.message());
  }
}

int64_t toIntArg(Interpreter& in, const Value& v, const char* what) {
  if (v.isUndefined()) in.failUndefined(v);
  if (!v.isInt() && !v.isBool())
    in.fail("TypeError", std::string(what) + ": '" + v.typeName() + "' object cannot be interpreted as an integer");
  return v.intLike();
}

const std::string* optStringArg(Interpreter& in, const Value* v, const char* what) {
  if (!v || v->isNone()) return nullptr;
  if (!v->isString())
    in.fail("TypeError", std::string(what) + " arg must be None or str, not " + v->typeName());
  return &v->asString();
}

// jinja2's make_attrgetter: "a.b.0" walks getitem (item first, then attribute).
Value attrPath(Interpreter& in, const Value& item, const Value& attribute) {
  if (!attribute.isString()) return in.getItem(item, attribute);
  const std::string& path = attribute.asString();
  Value cur = item;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (digits && part.size() < 18) {
      cur = in.getItem(cur, Value::integer(std::stoll(part)));
    } else {
      cur = in.getItem(cur, Value::string(part));
    }
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return cur;
}

int64_t pyLen(Interpreter& in, const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return 0;
    case Value::Kind::String: return static_cast<int64_t>(codePointCount(v.asString()));
    case Value::Kind::List:
      if (v.asList().isIterator()) in.fail("TypeError", "object of type '" + v.typeName() + "' has no len()");
      return static_cast<int64_t>(v.asList().items.size());
    case Value::Kind::Dict: return static_cast<int64_t>(v.asDict().items.size());
    default: in.fail("TypeError", "object of type '" + v.typeName() + "' has no len()");
  }
}

// ---- filters --------------------------------------------------------------

Value fAbs(Interpreter& in, const Value& v, CallArgs& a) {
  ArgBinder b(in, "abs", a, {});
  if (v.isUndefined()) in.failUndefined(v);
  if (v.isFloat()) return Value::floating(std::fabs(v.asFloat()));
  if (v.isInt() || v.isBool()) {
    if (v.intLike() == INT64_MIN) in.fail("OverflowError", "integer overflow");
    return Value::integer(std::llabs(v.intLike()));
  }
  in.fail("TypeError", "bad operand type for abs(): '" + v.typeName() + "'");
}

Value fAttr(Interpreter& in, const Value& v, CallArgs& a) {
  ArgBinder b(in, "attr", a, {"name"});
  if (!b.has(0) || !b.get(0).isString()) in.fail("TypeError", "attr() needs an attribute name");
  return in.getAttr(v, b.get(0).asString());
}

Value fCapitalize(Interpreter& in, const Value& v, CallArgs& a) {
  ArgBinder b(in, "capitalize", a, {});
  return Value::string(pyCapitalize(toStr(v)));
}

Value fCenter(Interpreter& in, const Value& v, CallArgs& a) {
  ArgBinder b(in, "center", a, {"width"});
  std::string s = toStr(v);
  int64_t width = b.has(0) ? toIntArg(in, b.get(0), "center") : 80;
  int64_t len = static_cast<int64_t>(codePointCount(s));
  if (width <= len) return Value::string(s);
  in.checkSize(static_cast<size_t>(width));
  int64_t marg = width - len;
  int64_t left = marg / 2 + (marg & width & 1);
  return Value::string(std::string(static_cast<size_t>(left), ' ') + s +
                       std::string(static_cast<size_t>(marg - left), ' '));
}

Value fLength(Interpreter& in, const Value& v, CallArgs& a) {
  ArgBinder b(in, "length", a, {});
  return Value::integer(pyLen(in, v));
}

Value fDefault(Interpreter& in, const Value& v, CallArgs& a) {
  ArgBinder b(in, "default", a, {"default_value", "boolean"});
  Value dflt = b.getOr(0, Value::string(""));
  bool boolean = b.has(1) && b.get(1).truthy();
  if (v.isUndefined() || (boolean && !v.truthy())) return dflt;
  return v;
}

Value fDictsort(Interpreter& in, const Value& v, CallArgs& a) {
  ArgBinder b(in, "dictsort", a, {"case_sensitive", "by", "reverse"});
  if (!v.isDict()) in.fail("TypeError", "dictsort() needs a mapping");
  bool cs = b.has(0) && b.get(0).truthy();
  std::string by = b.has(1) ? toStr(b.get(1)) : "key";
  bool rev = b.has(2) && b.get(2).truthy();
  if (by != "key" && by != "value") in.fail("FilterArgumentError", "You can only sort by either \"key\" or \"value\"");
  std::vector<std::pair<Value, Value>> items = v.asDict().items;
  auto keyOf = [&](const std::pair<Value, Value>& kv) {
    Value k = by == "key" ? kv.first : kv.second;
    if (!cs && k.isString()) return Value::string(pyLower(k.asString()));
    return k;
  };
  std::stable_sort(items.begin(), items.end(), [&](const auto& x, const auto& y) {
    return rev ? in.compare(keyOf(y), "<", keyOf(x)) : in.compare(keyOf(x), "<", keyOf(y));
  });
  std::vector<Value> out;
  for (auto& kv : items) out.push_back(Value::list({kv.first, kv.second}, true));
  return Value::list(std::move(out));
}

Value fEscape(Interpreter& in, const Value& v, CallArgs& a) {
  ArgBinder b(in, "escape", a, {});
  std::string s = toStr(v), out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out.push_back(c);
    }
  }
  in.checkSize(out.size());
  return Value::string(std::move(out));
}

Value fFirst(Interpreter& in, const Value& v, CallArgs& a) {
  ArgBinder b(in, "first", a, {});
  auto items = in.iterate(v);
  if (items.empty()) return Value::undefined("No first item, sequence was empty.");
  return items.front();
}

Value fLast(Interpreter& in, const Value& v, CallArgs& a) {
  ArgBinder b(in, "last", a, {});
  if (v.isList() && v.asList().isIterator())
    in.fail("TypeError", "'" + v.typeName() + "' object is not reversible");
  if (!v.isUndefined() && !v.isString() && !v.isList() && !v.isDict())
    in.fail("TypeError", "'" + v.typeName() + "' object is not reversible");
  auto items = in.iterate(v);
  if (items.empty()) return Value::undefined("No last item, sequence was empty.");
  return items.back();
}

bool parsePyFloat(const std::string& raw, double& out) {
  std::string s = pyStrip(raw, nullptr, true, true);
  std::string t;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_') {
      if (i == 0 || i + 1 >= s.size() || !isdigit(static_cast<unsigned char>(s[i - 1])) ||
          !isdigit(static_cast<unsigned char>(s[i + 1])))
        return false;
      continue;
    }
    t.push_back(s[i]);
  }
  if (t.empty()) return false;
  std::string lower = pyLower(t);
  std::string body = lower;
  double sign = 1;
  if (!body.empty() && (body[0] == '+' || body[0] == '-')) {
    if (body[0] == '-') sign = -1;
    body = body.substr(1);
  }
  if (body == "inf" || body == "infinity") {
    out = sign * INFINITY;
    return true;
  }
  if (body == "nan") {
    out = NAN;
    return true;
  }
  for (char c : body)
    if (!(isdigit(static_cast<unsigned char>(c)) || c == '.' || c == 'e' || c == '+' || c == '-')) return false;
  char* end = nullptr;
  out = std::strtod(t.c_str(), &end);
  return end && *end == '\0';
}

Value fFloat(Interpreter& in, const Value& v, CallArgs& a) {
  ArgBinder b(in, "float", a, {"default"});
  Value dflt = b.getOr(0, Value::floating(0.0));
  if (v.isUndefined()) in.failUndefined(v);  // Undefined.__float__ raises
  if (v.isFloat()) return v;
  if (v.isInt() || v.isBool()) return Value::floating(v.toDouble());
  if (v.isString()) {
    double d;
    if (parsePyFloat(v.asString(), d)) return Value::floating(d);
  }
  return dflt;
}

bool parsePyInt(const std::string& raw, int64_t base, int64_t& out) {
  std::string s = pyStrip(raw, nullptr, true, true);
  bool neg = false;
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
    neg = s[i] == '-';
    ++i;
  }
  if (base == 0 || base == 16 || base == 8 || base == 2) {
    if (i + 1 < s.size() && s[i] == '0') {
      char p = static_cast<char>(tolower(static_cast<unsigned char>(s[i + 1])));
      int64_t pb = p == 'x' ? 16 : p == 'o' ? 8 : p == 'b' ? 2 : 0;
      if (pb && (base == 0 || base == pb)) {
        base = pb;
        i += 2;
        if (i < s.size() && s[i] == '_') ++i;
      }
    }
    if (base == 0) base = 10;
  }
  if (base < 2 || base > 36 || i >= s.size()) return false;
  int64_t v = 0;
  bool prevUnderscore = false;
  bool any = false;
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (c == '_') {
      if (!any || prevUnderscore) return false;
      prevUnderscore = true;
      continue;
    }
    prevUnderscore = false;
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'z') d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'Z') d = c - 'A' + 10;
    else return false;
    if (d >= base) return false;
    if (__builtin_mul_overflow(v, base, &v) || __builtin_add_overflow(v, d, &v)) return false;
    any = true;
  }
  if (!any || prevUnderscore) return false;
  out = neg ? -v : v;
  return true;
}

Value fInt(Interpreter& in, const Value& v, CallArgs& a) {
  ArgBinder b(in, "int", a, {"default", "base"});
  Value dflt = b.getOr(0, Value::integer(0));
  int64_t base = b.has(1) ? toIntArg(in, b.get(1), "int") : 10;
  if (v.isUndefined()) in.failUndefined(v);  // Undefined.__int__ raises
  if (v.isInt()) return v;
  if (v.isBool()) return Value::integer(v.intLike());
  if (v.isFloat()) {
    double d = v.asFloat();
    if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) return dflt;
    return Value::integer(static_cast<int64_t>(d));
  }
  if (v.isString()) {
    int64_t r;
    if (parsePyInt(v.asString(), base, r)) return Value::integer(r);
    double d;
    if (parsePyFloat(v.asString(), d) && std::isfinite(d) && std::fabs(d) < 9.2e18)
      return Value::integer(static_cast<int64_t>(d));
  }
  return dflt;
}

Value fIndent(Interpreter& in, const Value& v, CallArgs& a) {
  ArgBinder b(in, "indent", a, {"width", "first", "blank"});
  std::string indention;
  if (b.has(0) && b.get(0).isString()) {
    indention = b.get(0).asString();
  } else {
    int64_t w = b.has(0) ? toIntArg(in, b.get(0), "indent") : 4;
    in.checkSize(static_cast<size_t>(std::max<int64_t>(0, w)));
    indention = std::string(static_cast<size_t>(std::max<int64_t>(0, w)), ' ');
  }
  bool first = b.has(1) && b.get(1).truthy();
  bool blank = b.has(2) && b.get(2).truthy();
  if (v.isUndefined()) in.failUndefined(v);
  if (!v.isString())
    in.fail("TypeError", "unsupported operand type(s) for +=: '" + v.typeName() + "' and 'str'");
  std::string s = v.asString() + "\n";
  auto lines = pySplitLines(s, false);
  in.checkSize(s.size() + lines.size() * indention.size());
  std::string rv;
  if (blank) {
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i) rv += "\n" + indention;
      rv += lines[i];
    }
  } else {
    rv = lines.empty() ? std::string() : lines[0];
    if (lines.size() > 1) {
      rv += "\n";
      for (size_t i = 1; i < lines.size(); ++i) {
        if (i > 1) rv += "\n";
        if (!lines[i].empty()) rv += indention;
        rv += lines[i];
      }
    }
  }
  if (first) rv = indention + rv;
  return Value::string(std::move(rv));
}

Value fItems(Interpreter& in, const Value& v, CallArgs& a) {
  ArgBinder b(in, "items", a, {});
  if (v.isUndefined()) return Value::special({}, ListData::Special::Generator);
  if (!v.isDict()) return Value::deferredError("TypeError", "Can only get item pairs from a mapping.");
  std::vector<Value> out;
  for (const auto& kv : v.asDict().items) out.push_back(Value::list({kv.first, kv.second}, true));
  Value r = Value::special(std::move(out), ListData::Special::Generator);
  in.checkDepth(r);
  return r;
}

Value fJoin(Interpreter& in, const Value& v, CallArgs& a) {
  ArgBinder b(in, "join", a, {"d", "attribute"});
  std::string sep = b.has(0) ? toStr(b.get(0)) : std::string();
  std::vector<Value> items = in.iterate(v);
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += sep;
    out += b.has(1) ? toStr(attrPath(in, items[i], b.get(1))) : toStr(items[i]);
    in.checkSize(out.size());
  }
  return Value::string(std::move(out));
}

Value fList(Interpreter& in, const Value& v, CallArgs& a) {
  ArgBinder b(in, "list", a, {});
  if (v.isSequence() && !v.asList().isTuple) return v;
  return Value::list(in.iterate(v));
}

Value fLower(Interpreter& in, const Value& v, CallArgs& a) {
  ArgBinder b(in, "lower", a, {});
  return Value::string(pyLower(toStr(v)));
}

Value fUpper(Interpreter& in, const Value& v, CallArgs& a) {
  ArgBinder b(in, "upper", a, {});
  return Value::string(pyUpper(toStr(v)));
}

Value fMap(Interpreter& in, const Value& v, CallArgs& a) { return lazyGenerator([&] {
  std::vector<Value> items;
  if (v.truthy()) items = in.iterate(v);  // jinja2: "if value: for item in value: ..."
  std::vector<Value> out;
  out.reserve(items.size());
  if (a.pos.empty()) {
    const Value* attribute = nullptr;
    const Value* dflt = nullptr;
    for (const auto& kv : a.kw) {
      if (kv.first == "attribute") attribute = &kv.second;
      else if (kv.first == "default") dflt = &kv.second;
      else in.fail("FilterArgumentError", "Unexpected keyword argument " + pyReprString(kv.first));
    }
    if (!attribute) in.fail("FilterArgumentError", "map requires a filter argument");
    for (const auto& item : items) {
      Value r = attrPath(in, item, *attribute);
      if (dflt && r.isUndefined()) r = *dflt;
      out.push_back(std::move(r));
    }
    return out;
  }
  if (!a.pos[0].isString()) in.fail("FilterArgumentError", "map requires a filter name");
  std::string fname = a.pos[0].asString();
  if (!in.hasFilter(fname)) in.fail("TemplateRuntimeError", "No filter named " + pyReprString(fname) + ".");
  for (const auto& item : items) {
    CallArgs rest;
    rest.pos.assign(a.pos.begin() + 1, a.pos.end());
    rest.kw = a.kw;
    out.push_back(in.applyFilter(fname, item, rest));
  }
  return out;
}); }

Value minMax(Interpreter& in, const Value& v, CallArgs& a, bool wantMax) {
  ArgBinder b(in, wantMax ? "max" : "min", a, {"case_sensitive", "attribute"});
  bool cs = b.has(0) && b.get(0).truthy();
  std::vector<Value> items = in.iterate(v);
  if (items.empty())
    return Value::undefined("No aggregated item, sequence was empty.");
  auto key = [&](const Value& x) {
    Value k = b.has(1) ? attrPath(in, x, b.get(1)) : x;
    if (!cs && k.isString()) return Value::string(pyLower(k.asString()));
    return k;
  };
  size_t best = 0;
  Value bestKey = key(items[0]);
  for (size_t i = 1; i < items.size(); ++i) {
    Value k = key(items[i]);
    if (wantMax ? in.compare(k, ">", bestKey) : in.compare(k, "<", bestKey)) {
      best = i;
      bestKey = k;
    }
  }
  return items[best];
}
Value fMax(Interpreter& in, const Value& v, CallArgs& a) { return minMax(in, v, a, true); }
Value fMin(Interpreter& in, const Value& v, CallArgs& a) { return minMax(in, v, a, false); }

Value fReplace(Interpreter& in, const Value& v, CallArgs& a) {
  ArgBinder b(in, "replace", a, {"old", "new", "count"});
  if (!b.has(0) || !b.has(1)) in.fail("TypeError", "replace() needs the old and new strings");
  long long count = -1;
  if (b.has(2) && !b.get(2).isNone()) count = toIntArg(in, b.get(2), "replace");
  std::string r = pyReplace(toStr(v), toStr(b.get(0)), toStr(b.get(1)), count, in.options().limits.maxOutputBytes);
  in.checkSize(r.size());
  return Value::string(std::move(r));
}

Value fReverse(Interpreter& in, const Value& v, CallArgs& a) {
  ArgBinder b(in, "reverse", a, {});
  if (v.isString()) {
    auto items = in.iterate(v);
    std::string out;
    for (auto it = items.rbegin(); it != items.rend(); ++it) out += it->asString();
    return Value::string(std::move(out));
  }
  if (v.isList() && v.asList().isIterator()) {  // reversed() fails; jinja2 falls back to a list
    auto items = in.iterate(v);
    std::reverse(items.begin(), items.end());
    return Value::list(std::move(items));
  }
  if (!v.isUndefined() && !v.isList() && !v.isDict()) in.fail("FilterArgumentError", "argument must be iterable");
  auto items = in.iterate(v);
  std::reverse(items.begin(), items.end());
  return Value::special(std::move(items), ListData::Special::ReverseIterator);
}

Value fRound(Interpreter& in, const Value& v, CallArgs& a) {
  ArgBinder b(in, "round", a, {"precision", "method"});
  int64_t prec = b.has(0) ? toIntArg(in, b.get(0), "round") : 0;
  std::string method = b.has(1) ? toStr(b.get(1)) : "common";
  if (method != "common" && method != "ceil" && method != "floor")
    in.fail("FilterArgumentError", "method must be common, ceil or floor");
  if (v.isUndefined()) in.failUndefined(v);
  if (!v.isNumber()) in.fail("TypeError", "type " + v.typeName() + " doesn't define __round__ method");
  double x = v.toDouble();
  prec = std::clamp<int64_t>(prec, -300, 300);
  double scale = std::pow(10.0, static_cast<double>(prec));
  double r;
  if (method == "common") {
    if (v.isInt() || v.isBool()) {
      // Python's round(int, ndigits) stays an int, rounding half to even.
      int64_t n = v.intLike();
      if (prec >= 0) return Value::integer(n);
      if (prec < -18) return Value::integer(0);
      int64_t p = 1;
      for (int64_t i = 0; i < -prec; ++i) p *= 10;
      int64_t q = n / p, rem = n % p;
      if (rem < 0) {
        rem += p;
        --q;
      }
      if (rem * 2 > p || (rem * 2 == p && (q & 1))) ++q;
      int64_t out;
      if (__builtin_mul_overflow(q, p, &out)) in.fail("OverflowError", "integer overflow");
      return Value::integer(out);
    }
    if (prec >= 0 && std::isfinite(x)) {
      // Correctly rounded, half to even on the exact binary value, as Python does.
      std::string buf(static_cast<size_t>(prec) + 400, '\0');
      int len = std::snprintf(buf.data(), buf.size(), "%.*f", static_cast<int>(prec), x);
      r = std::strtod(buf.substr(0, static_cast<size_t>(std::max(len, 0))).c_str(), nullptr);
      return Value::floating(r);
    }
    r = std::nearbyint(x * scale) / scale;
  } else if (method == "ceil") {
    r = std::ceil(x * scale) / scale;
  } else {
    r = std::floor(x * scale) / scale;
  }
  if (!std::isfinite(r)) r = x;
  return Value::floating(r);
}

Value fSafe(Interpreter& in, const Value& v, CallArgs& a) {
  ArgBinder b(in, "safe", a, {});
  return v;
}

bool runTest(Interpreter& in, const Value& item, const CallArgs& a, size_t first) {
  if (a.pos.size() <= first) return item.truthy();
  if (!a.pos[first].isString()) in.fail("TemplateRuntimeError", "the test name must be a string");
  CallArgs rest;
  rest.pos.assign(a.pos.begin() + static_cast<long>(first) + 1, a.pos.end());
  rest.kw = a.kw;
  return in.applyTest(a.pos[first].asString(), item, rest);
}

Value selectReject(Interpreter& in, const Value& v, CallArgs& a, bool select, bool byAttr) {
  return lazyGenerator([&] {
  std::vector<Value> out;
  if (byAttr && a.pos.empty()) in.fail("FilterArgumentError", "Missing parameter for attribute name");
  std::vector<Value> items;
  if (v.truthy()) items = in.iterate(v);  // jinja2: "if value: for item in value: ..."
  for (const auto& item : items) {
    Value subject = byAttr ? attrPath(in, item, a.pos[0]) : item;
    bool ok = runTest(in, subject, a, byAttr ? 1 : 0);
    if (ok == select) out.push_back(item);
  }
  return out;
  });
}
Value fSelect(Interpreter& in, const Value& v, CallArgs& a) { return selectReject(in, v, a, true, false); }
Value fReject(Interpreter& in, const Value& v, CallArgs& a) { return selectReject(in, v, a, false, false); }
Value fSelectattr(Interpreter& in, const Value& v, CallArgs& a) { return selectReject(in, v, a, true, true); }
Value fRejectattr(Interpreter& in, const Value& v, CallArgs& a) { return selectReject(in, v, a, false, true); }

Value fSort(Interpreter& in, const Value& v, CallArgs& a) {
  ArgBinder b(in, "sort", a, {"reverse", "case_sensitive", "attribute"});
  bool rev = b.has(0) && b.get(0).truthy();
  bool cs = b.has(1) && b.get(1).truthy();
  std::vector<Value> items = in.iterate(v);
  std::vector<std::pair<Value, size_t>> keyed;
  for (size_t i = 0; i < items.size(); ++i) {
    Value k = b.has(2) && !b.get(2).isNone() ? attrPath(in, items[i], b.get(2)) : items[i];
    if (!cs && k.isString()) k = Value::string(pyLower(k.asString()));
    keyed.emplace_back(std::move(k), i);
  }
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    return rev ? in.compare(y.first, "<", x.first) : in.compare(x.first, "<", y.first);
  });
  std::vector<Value> out;
  for (const auto& k : keyed) out.push_back(items[k.second]);
  return Value::list(std::move(out));
}

Value fString(Interpreter& in, const Value& v, CallArgs& a) {
  ArgBinder b(in, "string", a, {});
  return Value::string(toStr(v));
}

Value fSum(Interpreter& in, const Value& v, CallArgs& a) {
  ArgBinder b(in, "sum", a, {"attribute", "start"});
  Value acc = b.getOr(1, Value::integer(0));
  CallArgs none;
  for (const auto& item : in.iterate(v)) {
    Value x = b.has(0) && !b.get(0).isNone() ? attrPath(in, item, b.get(0)) : item;
    if (x.isUndefined()) in.failUndefined(x);
    if (!x.isNumber() || !acc.isNumber())
      in.fail("TypeError", "unsupported operand type(s) for +: '" + acc.typeName() + "' and '" + x.typeName() + "'");
    if (acc.isFloat() || x.isFloat()) {
      acc = Value::floating(acc.toDouble() + x.toDouble());
    } else {
      int64_t r;
      if (__builtin_add_overflow(acc.intLike(), x.intLike(), &r)) in.fail("OverflowError", "integer overflow");
      acc = Value::integer(r);
    }
  }
  return acc;
}

Value fTitle(Interpreter& in, const Value& v, CallArgs& a) {
  ArgBinder b(in, "title", a, {});
  // jinja2: split on runs of [-\s({\[<], capitalize each piece.
  std::string s = toStr(v);
  std::string out;
  size_t i = 0;
  bool wordStart = true;
  while (i < s.size()) {
    size_t len;
    uint32_t cp = decodeUtf8(s, i, len);
    bool sep = isPyWhitespace(cp) || cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<';
    std::string piece = s.substr(i, len);
    if (sep) {
      out += piece;
      wordStart = true;
    } else {
      out += wordStart ? pyUpper(piece) : pyLower(piece);
      wordStart = false;
    }
    i += len;
  }
  return Value::string(std::move(out));
}

Value fTojson(Interpreter& in, const Value& v, CallArgs& a) {
  // transformers: tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)
  ArgBinder b(in, "tojson", a, {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonDumpOptions o;
  o.ensureAscii = b.has(0) && b.get(0).truthy();
  if (b.has(1) && !b.get(1).isNone()) {
    const Value& ind = b.get(1);
    o.hasIndent = true;
    if (ind.isString()) {
      o.indent = ind.asString();
    } else {
      int64_t n = toIntArg(in, ind, "tojson indent");
      n = std::clamp<int64_t>(n, 0, 1024);
      o.indent = std::string(static_cast<size_t>(n), ' ');
    }
    o.itemSeparator = ",";
  }
  if (b.has(2) && !b.get(2).isNone()) {
    auto seps = in.iterate(b.get(2));
    if (seps.size() != 2 || !seps[0].isString() || !seps[1].isString())
      in.fail("ValueError", "separators must be an (item_separator, key_separator) pair of strings");
    o.hasSeparators = true;
    o.itemSeparator = seps[0].asString();
    o.keySeparator = seps[1].asString();
  }
  o.sortKeys = b.has(3) && b.get(3).truthy();
  // Bound the work before building the string: indentation can multiply size.
  try {
    std::string s = jsonDumps(v, o);
    in.checkSize(s.size());
    return Value::string(std::move(s));
  } catch (const std::invalid_argument& e) {
    in.fail("TypeError", e.what());
  }
}

Value fTrim(Interpreter& in, const Value& v, CallArgs& a) {
  ArgBinder b(in, "trim", a, {"chars"});
  const std::string* chars = b.has(0) ? optStringArg(in, &b.get(0), "strip") : nullptr;
  return Value::string(pyStrip(toStr(v), chars, true, true));
}

Value fUnique(Interpreter& in, const Value& v, CallArgs& a) {
  ArgBinder b(in, "unique", a, {"case_sensitive", "attribute"});
  bool cs = b.has(0) && b.get(0).truthy();
  return lazyGenerator([&] {
  std::vector<Value> seen, out;
  for (const auto& item : in.iterate(v)) {
    Value k = b.has(1) && !b.get(1).isNone() ? attrPath(in, item, b.get(1)) : item;
    if (!cs && k.isString()) k = Value::string(pyLower(k.asString()));
    if ((k.isSequence() && !k.asList().isTuple) || k.isDict() || k.isNamespace() ||
        (k.isList() && !k.asList().isIterator()))
      in.fail("TypeError", "unhashable type: '" + k.typeName() + "'");  // jinja2 keeps a set of seen items
    bool dup = false;
    for (const auto& s : seen)
      if (s.equals(k)) dup = true;
    if (!dup) {
      seen.push_back(k);
      out.push_back(item);
    }
  }
  return out;
  });
}

Value fWordcount(Interpreter& in, const Value& v, CallArgs& a) {
  ArgBinder b(in, "wordcount", a, {});
  std::string s = toStr(v);
  int64_t n = 0;
  bool inWord = false;
  size_t i = 0;
  while (i < s.size()) {
    size_t len;
    uint32_t cp = decodeUtf8(s, i, len);
    bool w = cp == '_' || (cp >= '0' && cp <= '9') || isAlphaCp(cp) || (cp >= 0x80 && !isPyWhitespace(cp) && len > 1);
    if (w && !inWord) ++n;
    inWord = w;
    i += len;
  }
  return Value::integer(n);
}

Value fFormat(Interpreter& in, const Value& v, CallArgs& a) {
  if (!a.pos.empty() && !a.kw.empty())
    in.fail("FilterArgumentError", "can't handle positional and keyword arguments at the same time");
  if (!a.kw.empty()) {
    DictData d;
    for (const auto& kv : a.kw) d.set(Value::string(kv.first), kv.second);
    return Value::string(pyPercentFormat(in, toStr(v), Value::dict(std::move(d))));
  }
  return Value::string(pyPercentFormat(in, toStr(v), Value::list(a.pos, true)));
}

Value fBatch(Interpreter& in, const Value& v, CallArgs& a) {
  ArgBinder b(in, "batch", a, {"linecount", "fill_with"});
  int64_t n = b.has(0) ? toIntArg(in, b.get(0), "batch") : 0;
  if (n <= 0) in.fail("ValueError", "batch() needs a positive line count");
  return lazyGenerator([&] {
  std::vector<Value> out, cur;
  for (const auto& item : in.iterate(v)) {
    if (static_cast<int64_t>(cur.size()) == n) {
      out.push_back(Value::list(std::move(cur)));
      cur.clear();
    }
    cur.push_back(item);
  }
  if (!cur.empty()) {
    if (b.has(1) && !b.get(1).isNone())
      while (static_cast<int64_t>(cur.size()) < n) cur.push_back(b.get(1));
    out.push_back(Value::list(std::move(cur)));
  }
  return out;
  });
}

const std::unordered_map<std::string, FilterFn>& filterTable() {
  static const std::unordered_map<std::string, FilterFn> t = {
      {"abs", fAbs},         {"attr", fAttr},       {"batch", fBatch},         {"capitalize", fCapitalize},
      {"center", fCenter},   {"count", fLength},    {"d", fDefault},           {"default", fDefault},
      {"dictsort", fDictsort}, {"e", fEscape},      {"escape", fEscape},       {"first", fFirst},
      {"float", fFloat},     {"format", fFormat},   {"indent", fIndent},       {"int", fInt},
      {"items", fItems},     {"join", fJoin},       {"last", fLast},           {"length", fLength},
      {"list", fList},       {"lower", fLower},     {"map", fMap},             {"max", fMax},
      {"min", fMin},         {"reject", fReject},   {"rejectattr", fRejectattr}, {"replace", fReplace},
      {"reverse", fReverse}, {"round", fRound},     {"safe", fSafe},           {"select", fSelect},
      {"selectattr", fSelectattr}, {"sort", fSort}, {"string", fString},       {"sum", fSum},
      {"title", fTitle},     {"tojson", fTojson},   {"trim", fTrim},           {"unique", fUnique},
      {"upper", fUpper},     {"wordcount", fWordcount},
  };
  return t;
}

// ---- tests ----------------------------------------------------------------

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
bool hasCased(const std::string& s, bool wantLower) {
  bool any = false;
  size_t i = 0;
  while (i < s.size()) {
    size_t len;
    uint32_t cp = decodeUtf8(s, i, len);
    i += len;
    if (!isCasedLetter(cp)) continue;
    any = true;
    bool lower = toLowerCp(cp) == cp && cp != 0x130;
    bool upper = toUpperCp(cp) == cp && cp != 0xDF;
    if (wantLower ? !lower : !upper) return false;
  }
  return any;
}
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

// ---- string methods ---------------------------------------------------------

// Code point slice bounds for the optional start/end of find/count/startswith.
void cpRange(Interpreter& in, const std::string& s, const ArgBinder& b, size_t si, size_t ei, size_t& bStart,
             size_t& bEnd) {
  auto offs = codePointOffsets(s);
  int64_t n = static_cast<int64_t>(offs.size()) - 1;
  auto norm = [&](size_t idx, int64_t dflt) {
    if (!b.has(idx) || b.get(idx).isNone()) return dflt;
    int64_t v = toIntArg(in, b.get(idx), "slice index");
    if (v < 0) v = std::max<int64_t>(0, v + n);
    return std::min(v, n);
  };
  int64_t st = norm(si, 0), en = norm(ei, n);
  if (en < st) en = st;
  bStart = offs[static_cast<size_t>(st)];
  bEnd = offs[static_cast<size_t>(en)];
}

std::vector<std::string> prefixList(Interpreter& in, const Value& v, const char* what) {
  std::vector<std::string> out;
  if (v.isString()) {
    out.push_back(v.asString());
  } else if (v.isList() && v.asList().isTuple) {
    for (const auto& x : v.asList().items) {
      if (!x.isString()) in.fail("TypeError", std::string("tuple for ") + what + " must only contain str");
      out.push_back(x.asString());
    }
  } else {
    in.fail("TypeError", std::string(what) + " first arg must be str or a tuple of str, not " + v.typeName());
  }
  return out;
}

std::string strFormat(Interpreter& in, const std::string& fmt, CallArgs& a) {
  std::string out;
  size_t autoIdx = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    char c = fmt[i];
    if (c == '{') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
        out.push_back('{');
        ++i;
        continue;
      }
      size_t close = fmt.find('}', i);
      if (close == std::string::npos) in.fail("ValueError", "Single '{' encountered in format string");
      std::string field = fmt.substr(i + 1, close - i - 1);
      if (field.find(':') != std::string::npos || field.find('!') != std::string::npos)
        in.fail("ValueError", "format specs in str.format are not supported by this engine");
      Value v;
      if (field.empty()) {
        if (autoIdx >= a.pos.size()) in.fail("IndexError", "Replacement index " + std::to_string(autoIdx) + " out of range for positional args tuple");
        v = a.pos[autoIdx++];
      } else if (std::all_of(field.begin(), field.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
        size_t idx = field.size() < 9 ? static_cast<size_t>(std::stoul(field)) : a.pos.size();
        if (idx >= a.pos.size()) in.fail("IndexError", "Replacement index " + field + " out of range for positional args tuple");
        v = a.pos[idx];
      } else {
        bool found = false;
        for (const auto& kv : a.kw)
          if (kv.first == field) {
            v = kv.second;
            found = true;
          }
        if (!found) in.fail("KeyError", pyReprString(field));
      }
      out += v.str();
      in.checkSize(out.size());
      i = close;
    } else if (c == '}') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '}') {
        out.push_back('}');
        ++i;
        continue;
      }
      in.fail("ValueError", "Single '}' encountered in format string");
    } else {
      out.push_back(c);
    }
  }
  return out;
}

bool allCps(const std::string& s, bool (*pred)(uint32_t)) {
  if (s.empty()) return false;
  size_t i = 0;
  while (i < s.size()) {
    size_t len;
    uint32_t cp = decodeUtf8(s, i, len);
    if (!pred(cp)) return false;
    i += len;
  }
  return true;
}

}  // namespace

FilterFn findFilter(const std::string& name) {
  auto& t = filterTable();
  auto it = t.find(name);
  return it == t.end() ? nullptr : it->second;
}

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

bool isStringMethod(const std::string& n) {
  static const char* names[] = {"strip",      "lstrip",     "rstrip",    "split",      "rsplit",   "splitlines",
                                "startswith", "endswith",   "upper",     "lower",      "title",    "capitalize",
                                "replace",    "find",       "rfind",     "index",      "rindex",   "count",
                                "join",       "isdigit",    "isalpha",   "isalnum",    "isspace",  "islower",
                                "isupper",    "isnumeric",  "isdecimal", "removeprefix", "removesuffix", "format",
                                "partition",  "rpartition", "zfill",     "ljust",      "rjust",    "center",
                                "casefold",   "swapcase"};
  for (const char* x : names)
    if (n == x) return true;
  return false;
}

bool isDictMethod(const std::string& n) {
  return n == "get" || n == "items" || n == "keys" || n == "values" || n == "copy";
}

bool isListMethod(const std::string& n) { return n == "index" || n == "count" || n == "copy"; }

bool isUnsafeMethod(const Value& self, const std::string& n) {
  if (!n.empty() && n[0] == '_') return true;  // no dunder or private attributes in the sandbox
  if (self.isDict())
    return n == "clear" || n == "pop" || n == "popitem" || n == "setdefault" || n == "update";
  if (self.isList())
    return n == "append" || n == "extend" || n == "insert" || n == "pop" || n == "remove" || n == "reverse" ||
           n == "sort" || n == "clear";
  return false;
}

Value callStringMethod(Interpreter& in, const std::string& s, const std::string& name, CallArgs& a, bool& found) {
  found = true;
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    ArgBinder b(in, name, a, {"chars"});
    const std::string* chars = b.has(0) ? optStringArg(in, &b.get(0), name.c_str()) : nullptr;
    return Value::string(pyStrip(s, chars, name != "rstrip", name != "lstrip"));
  }
  if (name == "split" || name == "rsplit") {
    ArgBinder b(in, name, a, {"sep", "maxsplit"});
    const std::string* sep = b.has(0) ? optStringArg(in, &b.get(0), name.c_str()) : nullptr;
    if (sep && sep->empty()) in.fail("ValueError", "empty separator");
    long long maxsplit = b.has(1) ? toIntArg(in, b.get(1), name.c_str()) : -1;
    auto parts = name == "split" ? pySplit(s, sep, maxsplit) : pyRSplit(s, sep, maxsplit);
    in.checkSize(parts.size());
    std::vector<Value> out;
    out.reserve(parts.size());
    for (auto& p : parts) out.push_back(Value::string(std::move(p)));
    return Value::list(std::move(out));
  }
  if (name == "splitlines") {
    ArgBinder b(in, name, a, {"keepends"});
    auto parts = pySplitLines(s, b.has(0) && b.get(0).truthy());
    std::vector<Value> out;
    for (auto& p : parts) out.push_back(Value::string(std::move(p)));
    return Value::list(std::move(out));
  }
  if (name == "startswith" || name == "endswith") {
    ArgBinder b(in, name, a, {"prefix", "start", "end"});
    if (!b.has(0)) in.fail("TypeError", name + "() takes at least 1 argument (0 given)");
    auto prefixes = prefixList(in, b.get(0), name.c_str());
    size_t bs, be;
    cpRange(in, s, b, 1, 2, bs, be);
    std::string_view sub(s.data() + bs, be - bs);
    for (const auto& p : prefixes) {
      if (p.size() > sub.size()) continue;
      if (name == "startswith" ? sub.substr(0, p.size()) == p : sub.substr(sub.size() - p.size()) == p)
        return Value::boolean(true);
    }
    return Value::boolean(false);
  }
  if (name == "upper") {
    ArgBinder b(in, name, a, {});
    return Value::string(pyUpper(s));
  }
  if (name == "lower" || name == "casefold") {
    ArgBinder b(in, name, a, {});
    return Value::string(pyLower(s));
  }
  if (name == "swapcase") {
    ArgBinder b(in, name, a, {});
    std::string out;
    size_t i = 0;
    while (i < s.size()) {
      size_t len;
      uint32_t cp = decodeUtf8(s, i, len);
      std::string piece = s.substr(i, len);
      out += toLowerCp(cp) != cp ? pyLower(piece) : pyUpper(piece);
      i += len;
    }
    return Value::string(std::move(out));
  }
  if (name == "title") {
    ArgBinder b(in, name, a, {});
    return Value::string(pyTitleMethod(s));
  }
  if (name == "capitalize") {
    ArgBinder b(in, name, a, {});
    return Value::string(pyCapitalize(s));
  }
  if (name == "replace") {
    ArgBinder b(in, name, a, {"old", "new", "count"});
    if (!b.has(0) || !b.has(1)) in.fail("TypeError", "replace() takes at least 2 arguments");
    if (!b.get(0).isString() || !b.get(1).isString())
      in.fail("TypeError", "replace() argument must be str");
    long long count = b.has(2) ? toIntArg(in, b.get(2), "replace") : -1;
    std::string r = pyReplace(s, b.get(0).asString(), b.get(1).asString(), count, in.options().limits.maxOutputBytes);
    in.checkSize(r.size());
    return Value::string(std::move(r));
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count") {
    ArgBinder b(in, name, a, {"sub", "start", "end"});
    if (!b.has(0) || !b.get(0).isString()) in.fail("TypeError", "must be str");
    const std::string& sub = b.get(0).asString();
    size_t bs, be;
    cpRange(in, s, b, 1, 2, bs, be);
    std::string_view hay(s.data() + bs, be - bs);
    if (name == "count") {
      int64_t n = 0;
      if (sub.empty()) return Value::integer(static_cast<int64_t>(codePointCount(hay)) + 1);
      size_t pos = 0;
      while ((pos = hay.find(sub, pos)) != std::string_view::npos) {
        ++n;
        pos += sub.size();
      }
      return Value::integer(n);
    }
    size_t f = (name == "find" || name == "index") ? hay.find(sub) : hay.rfind(sub);
    if (f == std::string_view::npos) {
      if (name == "index" || name == "rindex") in.fail("ValueError", "substring not found");
      return Value::integer(-1);
    }
    return Value::integer(static_cast<int64_t>(codePointCount(std::string_view(s.data(), bs + f))));
  }
  if (name == "join") {
    ArgBinder b(in, name, a, {"iterable"});
    if (!b.has(0)) in.fail("TypeError", "join() takes exactly one argument (0 given)");
    std::string out;
    auto items = in.iterate(b.get(0));
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].isString())
        in.fail("TypeError", "sequence item " + std::to_string(i) + ": expected str instance, " +
                                 items[i].typeName() + " found");
      if (i) out += s;
      out += items[i].asString();
      in.checkSize(out.size());
    }
    return Value::string(std::move(out));
  }
  if (name == "isdigit" || name == "isnumeric" || name == "isdecimal") {
    ArgBinder b(in, name, a, {});
    return Value::boolean(allCps(s, [](uint32_t c) { return c >= '0' && c <= '9'; }));
  }
  if (name == "isalpha") {
    ArgBinder b(in, name, a, {});
    return Value::boolean(allCps(s, isAlphaCp));
  }
  if (name == "isalnum") {
    ArgBinder b(in, name, a, {});
    return Value::boolean(allCps(s, [](uint32_t c) { return (c >= '0' && c <= '9') || isAlphaCp(c); }));
  }
  if (name == "isspace") {
    ArgBinder b(in, name, a, {});
    return Value::boolean(allCps(s, isPyWhitespace));
  }
  if (name == "islower" || name == "isupper") {
    ArgBinder b(in, name, a, {});
    return Value::boolean(hasCased(s, name == "islower"));
  }
  if (name == "removeprefix" || name == "removesuffix") {
    ArgBinder b(in, name, a, {"affix"});
    if (!b.has(0) || !b.get(0).isString()) in.fail("TypeError", name + "() argument must be str");
    const std::string& p = b.get(0).asString();
    if (name == "removeprefix")
      return Value::string(s.compare(0, p.size(), p) == 0 && p.size() <= s.size() ? s.substr(p.size()) : s);
    if (p.size() <= s.size() && s.compare(s.size() - p.size(), p.size(), p) == 0 && !p.empty())
      return Value::string(s.substr(0, s.size() - p.size()));
    return Value::string(s);
  }
  if (name == "partition" || name == "rpartition") {
    ArgBinder b(in, name, a, {"sep"});
    if (!b.has(0) || !b.get(0).isString()) in.fail("TypeError", "must be str");
    const std::string& sep = b.get(0).asString();
    if (sep.empty()) in.fail("ValueError", "empty separator");
    size_t f = name == "partition" ? s.find(sep) : s.rfind(sep);
    if (f == std::string::npos) {
      if (name == "partition") return Value::list({Value::string(s), Value::string(""), Value::string("")}, true);
      return Value::list({Value::string(""), Value::string(""), Value::string(s)}, true);
    }
    return Value::list({Value::string(s.substr(0, f)), Value::string(sep), Value::string(s.substr(f + sep.size()))},
                       true);
  }
  if (name == "zfill" || name == "ljust" || name == "rjust" || name == "center") {
    ArgBinder b(in, name, a, {"width", "fillchar"});
    if (!b.has(0)) in.fail("TypeError", name + "() takes at least 1 argument (0 given)");
    int64_t width = toIntArg(in, b.get(0), name.c_str());
    std::string fill = " ";
    if (b.has(1)) {
      if (!b.get(1).isString() || codePointCount(b.get(1).asString()) != 1)
        in.fail("TypeError", "The fill character must be exactly one character long");
      fill = b.get(1).asString();
    }
    int64_t len = static_cast<int64_t>(codePointCount(s));
    if (width <= len) return Value::string(s);
    in.checkSize(static_cast<size_t>(width) * fill.size());
    int64_t pad = width - len;
    auto rep = [&](int64_t k, const std::string& f) {
      std::string r;
      for (int64_t i = 0; i < k; ++i) r += f;
      return r;
    };
    if (name == "zfill") {
      size_t signLen = (!s.empty() && (s[0] == '+' || s[0] == '-')) ? 1 : 0;
      return Value::string(s.substr(0, signLen) + rep(pad, "0") + s.substr(signLen));
    }
    if (name == "ljust") return Value::string(s + rep(pad, fill));
    if (name == "rjust") return Value::string(rep(pad, fill) + s);
    int64_t left = pad / 2 + (pad & width & 1);
    return Value::string(rep(left, fill) + s + rep(pad - left, fill));
  }
  if (name == "format") return Value::string(strFormat(in, s, a));
  found = false;
  return Value();
}

Value callDictMethod(Interpreter& in, const Value& self, const std::string& name, CallArgs& a, bool& found) {
  found = true;
  const DictData& d = self.asDict();
  if (name == "get") {
    ArgBinder b(in, "get", a, {"key", "default"});
    if (!b.has(0)) in.fail("TypeError", "get expected at least 1 argument, got 0");
    const Value& key = b.get(0);
    if ((key.isList() && !key.asList().isTuple) || key.isDict() || key.isNamespace())
      in.fail("TypeError", "unhashable type: '" + key.typeName() + "'");
    if (const Value* v = d.find(key)) return *v;
    return b.getOr(1, Value::none());
  }
  if (name == "items") {
    ArgBinder b(in, "items", a, {});
    std::vector<Value> out;
    for (const auto& kv : d.items) out.push_back(Value::list({kv.first, kv.second}, true));
    Value r = Value::special(std::move(out), ListData::Special::DictItems);
    in.checkDepth(r);
    return r;
  }
  if (name == "keys") {
    ArgBinder b(in, "keys", a, {});
    std::vector<Value> out;
    for (const auto& kv : d.items) out.push_back(kv.first);
    return Value::special(std::move(out), ListData::Special::DictKeys);
  }
  if (name == "values") {
    ArgBinder b(in, "values", a, {});
    std::vector<Value> out;
    for (const auto& kv : d.items) out.push_back(kv.second);
    return Value::special(std::move(out), ListData::Special::DictValues);
  }
  if (name == "copy") {
    ArgBinder b(in, "copy", a, {});
    return self;
  }
  found = false;
  return Value();
}

Value callListMethod(Interpreter& in, const Value& self, const std::string& name, CallArgs& a, bool& found) {
  found = true;
  const auto& items = self.asList().items;
  if (name == "index") {
    ArgBinder b(in, "index", a, {"value"});
    if (!b.has(0)) in.fail("TypeError", "index expected at least 1 argument, got 0");
    for (size_t i = 0; i < items.size(); ++i)
      if (items[i].equals(b.get(0))) return Value::integer(static_cast<int64_t>(i));
    in.fail("ValueError", b.get(0).repr() + " is not in list");
  }
  if (name == "count") {
    ArgBinder b(in, "count", a, {"value"});
    if (!b.has(0)) in.fail("TypeError", "count() takes exactly one argument (0 given)");
    int64_t n = 0;
    for (const auto& x : items)
      if (x.equals(b.get(0))) ++n;
    return Value::integer(n);
  }
  if (name == "copy") {
    ArgBinder b(in, "copy", a, {});
    return self;
  }
  found = false;
  return Value();
}

std::string pyPercentFormat(Interpreter& in, const std::string& fmt, const Value& args) {
  std::vector<Value> argv;
  const DictData* mapping = nullptr;
  // Like CPython: anything with __getitem__ but a tuple or str (dict, list,
  // jinja2's Undefined) is "mapping-like": it is the one argument, and
  // leftover arguments are no error.
  bool mappingLike = false;
  if (args.isSequence() && args.asList().isTuple) {
    argv = args.asList().items;
  } else {
    mappingLike = args.isDict() || args.isSequence() || args.isUndefined();
    if (args.isDict()) mapping = &args.asDict();
    argv.push_back(args);
  }
  size_t next = 0;
  bool usedMapping = false;
  std::string out;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out.push_back(fmt[i]);
      continue;
    }
    if (++i >= fmt.size()) in.fail("ValueError", "incomplete format");
    Value val;
    bool haveVal = false;
    if (fmt[i] == '(') {
      size_t close = fmt.find(')', i);
      if (close == std::string::npos) in.fail("ValueError", "incomplete format key");
      if (args.isUndefined()) in.failUndefined(args);
      if (!mapping) in.fail("TypeError", "format requires a mapping");
      std::string key = fmt.substr(i + 1, close - i - 1);
      const Value* v = mapping->findStr(key);
      if (!v) in.fail("KeyError", pyReprString(key));
      val = *v;
      haveVal = true;
      usedMapping = true;
      i = close + 1;
    }
    std::string flags;
    while (i < fmt.size() && std::string("-+ #0").find(fmt[i]) != std::string::npos) flags.push_back(fmt[i++]);
    int width = -1, prec = -1;
    while (i < fmt.size() && isdigit(static_cast<unsigned char>(fmt[i]))) {
      width = std::min(1000, std::max(0, width) * 10 + (fmt[i] - '0'));
      ++i;
    }
    if (i < fmt.size() && fmt[i] == '.') {
      ++i;
      prec = 0;
      while (i < fmt.size() && isdigit(static_cast<unsigned char>(fmt[i]))) {
        prec = std::min(100, prec * 10 + (fmt[i] - '0'));
        ++i;
      }
    }
    if (i >= fmt.size()) in.fail("ValueError", "incomplete format");
    char conv = fmt[i];
    if (conv == '%') {
      out.push_back('%');
      continue;
    }
    if (!haveVal) {
      if (next >= argv.size()) in.fail("TypeError", "not enough arguments for format string");
      val = argv[next++];
    }
    std::string piece;
    switch (conv) {
      case 's': piece = val.str(); break;
      case 'r':
      case 'a': piece = val.repr(); break;
      case 'd':
      case 'i':
      case 'u':
      case 'x':
      case 'X':
      case 'o':
      case 'c': {
        if (val.isUndefined()) in.failUndefined(val);
        if (conv == 'c' && val.isString()) {
          piece = val.asString();
          break;
        }
        if (!val.isNumber())
          in.fail("TypeError", std::string("%") + conv + " format: a number is required, not " + val.typeName());
        int64_t n = val.isFloat() ? static_cast<int64_t>(std::trunc(std::clamp(val.asFloat(), -9.2e18, 9.2e18)))
                                  : val.intLike();
        char buf[64];
        if (conv == 'x' || conv == 'X' || conv == 'o') {
          std::snprintf(buf, sizeof buf, conv == 'x' ? "%llx" : conv == 'X' ? "%llX" : "%llo",
                        static_cast<unsigned long long>(n < 0 ? -(n + 1) + 1ULL : n));
          piece = (n < 0 ? "-" : "") + std::string(buf);
        } else if (conv == 'c') {
          if (n < 0 || n > 0x10FFFF) in.fail("OverflowError", "%c arg not in range(0x110000)");
          appendUtf8(piece, static_cast<uint32_t>(n));
        } else {
          piece = std::to_string(n);
        }
        if (flags.find('+') != std::string::npos && n >= 0) piece = "+" + piece;
        break;
      }
      case 'f':
      case 'F':
      case 'e':
      case 'E':
      case 'g':
      case 'G': {
        if (val.isUndefined()) in.failUndefined(val);
        if (!val.isNumber()) in.fail("TypeError", "must be real number, not " + val.typeName());
        char spec[16];
        std::snprintf(spec, sizeof spec, "%%%s.%d%c", flags.find('+') != std::string::npos ? "+" : "",
                      prec < 0 ? 6 : prec, conv);
        char buf[512];
        std::snprintf(buf, sizeof buf, spec, val.toDouble());
        piece = buf;
        break;
      }
      default: in.fail("ValueError", std::string("unsupported format character '") + conv + "'");
    }
    if (conv == 's' || conv == 'r' || conv == 'a') {
      if (prec >= 0) {
        auto offs = codePointOffsets(piece);
        if (static_cast<size_t>(prec) + 1 < offs.size()) piece = piece.substr(0, offs[static_cast<size_t>(prec)]);
      }
    }
    int64_t len = static_cast<int64_t>(codePointCount(piece));
    if (width > len) {
      size_t pad = static_cast<size_t>(width - len);
      if (flags.find('-') != std::string::npos)
        piece += std::string(pad, ' ');
      else if (flags.find('0') != std::string::npos && conv != 's' && conv != 'r')
        piece = (piece[0] == '-' || piece[0] == '+') ? piece.substr(0, 1) + std::string(pad, '0') + piece.substr(1)
                                                     : std::string(pad, '0') + piece;
      else
        piece = std::string(pad, ' ') + piece;
    }
    out += piece;
    in.checkSize(out.size());
  }
  (void)usedMapping;
  if (!mappingLike && next < argv.size())
    in.fail("TypeError", "not all arguments converted during string formatting");
  return out;
}

}  // namespace linnet::chat::detail
