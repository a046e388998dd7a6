// Filters (`value | name(args)`), as jinja2/filters.py: a name -> function table.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

#include "chat/builtins.h"
#include "chat/errors.h"
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
  // Bound the work while building the string: indentation can multiply size.
  o.maxBytes = in.options().limits.maxOutputBytes;
  try {
    std::string s = jsonDumps(v, o);
    in.checkSize(s.size());
    return Value::string(std::move(s));
  } catch (const JsonDumpTooLarge&) {
    in.checkSize(o.maxBytes + 1);
    throw;
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

}  // namespace

FilterFn findFilter(const std::string& name) {
  auto& t = filterTable();
  auto it = t.find(name);
  return it == t.end() ? nullptr : it->second;
}

}  // namespace linnet::chat::detail
