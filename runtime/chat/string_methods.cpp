// Methods of str (`s.strip()`, `s.split(",")`, ...) and str.format: a name ->
// function table.
#include <algorithm>
#include <unordered_map>

#include "chat/builtins.h"
#include "chat/unicode.h"

namespace linnet::chat::detail {

namespace {

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

// ---- the methods, one function per name or family of names

// str.strip, str.lstrip, str.rstrip
Value mStrip(Interpreter& in, const std::string& s, const std::string& name, CallArgs& a) {
  ArgBinder b(in, name, a, {"chars"});
  const std::string* chars = b.has(0) ? optStringArg(in, &b.get(0), name.c_str()) : nullptr;
  return Value::string(pyStrip(s, chars, name != "rstrip", name != "lstrip"));
}

// str.split, str.rsplit
Value mSplit(Interpreter& in, const std::string& s, const std::string& name, CallArgs& a) {
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

// str.splitlines
Value mSplitlines(Interpreter& in, const std::string& s, const std::string& name, CallArgs& a) {
  ArgBinder b(in, name, a, {"keepends"});
  auto parts = pySplitLines(s, b.has(0) && b.get(0).truthy());
  std::vector<Value> out;
  for (auto& p : parts) out.push_back(Value::string(std::move(p)));
  return Value::list(std::move(out));
}

// str.startswith, str.endswith
Value mStartsOrEndsWith(Interpreter& in, const std::string& s, const std::string& name, CallArgs& a) {
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

// str.upper
Value mUpper(Interpreter& in, const std::string& s, const std::string& name, CallArgs& a) {
  ArgBinder b(in, name, a, {});
  return Value::string(pyUpper(s));
}

// str.lower, str.casefold
Value mLower(Interpreter& in, const std::string& s, const std::string& name, CallArgs& a) {
  ArgBinder b(in, name, a, {});
  return Value::string(pyLower(s));
}

// str.swapcase
Value mSwapcase(Interpreter& in, const std::string& s, const std::string& name, CallArgs& a) {
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

// str.title
Value mTitle(Interpreter& in, const std::string& s, const std::string& name, CallArgs& a) {
  ArgBinder b(in, name, a, {});
  return Value::string(pyTitleMethod(s));
}

// str.capitalize
Value mCapitalize(Interpreter& in, const std::string& s, const std::string& name, CallArgs& a) {
  ArgBinder b(in, name, a, {});
  return Value::string(pyCapitalize(s));
}

// str.replace
Value mReplace(Interpreter& in, const std::string& s, const std::string& name, CallArgs& a) {
  ArgBinder b(in, name, a, {"old", "new", "count"});
  if (!b.has(0) || !b.has(1)) in.fail("TypeError", "replace() takes at least 2 arguments");
  if (!b.get(0).isString() || !b.get(1).isString())
    in.fail("TypeError", "replace() argument must be str");
  long long count = b.has(2) ? toIntArg(in, b.get(2), "replace") : -1;
  std::string r = pyReplace(s, b.get(0).asString(), b.get(1).asString(), count, in.options().limits.maxOutputBytes);
  in.checkSize(r.size());
  return Value::string(std::move(r));
}

// str.find, str.rfind, str.index, str.rindex, str.count
Value mFindOrCount(Interpreter& in, const std::string& s, const std::string& name, CallArgs& a) {
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

// str.join
Value mJoin(Interpreter& in, const std::string& s, const std::string& name, CallArgs& a) {
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

// str.isdigit, str.isnumeric, str.isdecimal
Value mIsdigit(Interpreter& in, const std::string& s, const std::string& name, CallArgs& a) {
  ArgBinder b(in, name, a, {});
  return Value::boolean(allCps(s, [](uint32_t c) { return c >= '0' && c <= '9'; }));
}

// str.isalpha
Value mIsalpha(Interpreter& in, const std::string& s, const std::string& name, CallArgs& a) {
  ArgBinder b(in, name, a, {});
  return Value::boolean(allCps(s, isAlphaCp));
}

// str.isalnum
Value mIsalnum(Interpreter& in, const std::string& s, const std::string& name, CallArgs& a) {
  ArgBinder b(in, name, a, {});
  return Value::boolean(allCps(s, [](uint32_t c) { return (c >= '0' && c <= '9') || isAlphaCp(c); }));
}

// str.isspace
Value mIsspace(Interpreter& in, const std::string& s, const std::string& name, CallArgs& a) {
  ArgBinder b(in, name, a, {});
  return Value::boolean(allCps(s, isPyWhitespace));
}

// str.islower, str.isupper
Value mIsLowerOrUpper(Interpreter& in, const std::string& s, const std::string& name, CallArgs& a) {
  ArgBinder b(in, name, a, {});
  return Value::boolean(hasCased(s, name == "islower"));
}

// str.removeprefix, str.removesuffix
Value mRemoveAffix(Interpreter& in, const std::string& s, const std::string& name, CallArgs& a) {
  ArgBinder b(in, name, a, {"affix"});
  if (!b.has(0) || !b.get(0).isString()) in.fail("TypeError", name + "() argument must be str");
  const std::string& p = b.get(0).asString();
  if (name == "removeprefix")
    return Value::string(s.compare(0, p.size(), p) == 0 && p.size() <= s.size() ? s.substr(p.size()) : s);
  if (p.size() <= s.size() && s.compare(s.size() - p.size(), p.size(), p) == 0 && !p.empty())
    return Value::string(s.substr(0, s.size() - p.size()));
  return Value::string(s);
}

// str.partition, str.rpartition
Value mPartition(Interpreter& in, const std::string& s, const std::string& name, CallArgs& a) {
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

// str.zfill, str.ljust, str.rjust, str.center
Value mPad(Interpreter& in, const std::string& s, const std::string& name, CallArgs& a) {
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

// str.format
Value mFormat(Interpreter& in, const std::string& s, const std::string&, CallArgs& a) {
  return Value::string(strFormat(in, s, a));
}

using StringMethod = Value (*)(Interpreter& in, const std::string& self, const std::string& name, CallArgs& args);

const std::unordered_map<std::string, StringMethod>& stringMethodTable() {
  static const std::unordered_map<std::string, StringMethod> t = {
      {"strip", mStrip}, {"lstrip", mStrip}, {"rstrip", mStrip},
      {"split", mSplit}, {"rsplit", mSplit},
      {"splitlines", mSplitlines},
      {"startswith", mStartsOrEndsWith}, {"endswith", mStartsOrEndsWith},
      {"upper", mUpper},
      {"lower", mLower}, {"casefold", mLower},
      {"swapcase", mSwapcase},
      {"title", mTitle},
      {"capitalize", mCapitalize},
      {"replace", mReplace},
      {"find", mFindOrCount}, {"rfind", mFindOrCount}, {"index", mFindOrCount}, {"rindex", mFindOrCount},
      {"count", mFindOrCount},
      {"join", mJoin},
      {"isdigit", mIsdigit}, {"isnumeric", mIsdigit}, {"isdecimal", mIsdigit},
      {"isalpha", mIsalpha},
      {"isalnum", mIsalnum},
      {"isspace", mIsspace},
      {"islower", mIsLowerOrUpper}, {"isupper", mIsLowerOrUpper},
      {"removeprefix", mRemoveAffix}, {"removesuffix", mRemoveAffix},
      {"partition", mPartition}, {"rpartition", mPartition},
      {"zfill", mPad}, {"ljust", mPad}, {"rjust", mPad}, {"center", mPad},
      {"format", mFormat},
  };
  return t;
}

}  // namespace

bool isStringMethod(const std::string& n) { return stringMethodTable().count(n) != 0; }

Value callStringMethod(Interpreter& in, const std::string& s, const std::string& name, CallArgs& a, bool& found) {
  auto& t = stringMethodTable();
  auto it = t.find(name);
  found = it != t.end();
  return found ? it->second(in, s, name, a) : Value();
}

}  // namespace linnet::chat::detail
