#include "chat/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>

#include "chat/unicode.h"

namespace linnet::chat::detail {

namespace {
constexpr uint32_t kMaxJsonDepth = 512;
}

const Value* DictData::find(const Value& key) const {
  for (const auto& kv : items)
    if (kv.first.equals(key)) return &kv.second;
  return nullptr;
}

const Value* DictData::findStr(std::string_view key) const {
  for (const auto& kv : items)
    if (kv.first.isString() && kv.first.asString() == key) return &kv.second;
  return nullptr;
}

void DictData::set(Value key, Value value) {
  depth = std::max<uint32_t>(depth, value.depth() + 1);
  for (auto& kv : items) {
    if (kv.first.equals(key)) {
      kv.second = std::move(value);
      return;
    }
  }
  items.emplace_back(std::move(key), std::move(value));
}

Value Value::undefined(std::string message, std::string errorKind) {
  Value v;
  v.v_ = std::make_shared<const UndefinedData>(UndefinedData{std::move(message), std::move(errorKind)});
  return v;
}
Value Value::none() {
  Value v;
  v.v_ = std::monostate{};
  return v;
}
Value Value::boolean(bool b) {
  Value v;
  v.v_ = b;
  return v;
}
Value Value::integer(int64_t i) {
  Value v;
  v.v_ = i;
  return v;
}
Value Value::floating(double d) {
  Value v;
  v.v_ = d;
  return v;
}
Value Value::string(std::string s) {
  Value v;
  v.v_ = std::move(s);
  return v;
}
Value Value::list(std::vector<Value> items, bool isTuple) {
  auto d = std::make_shared<ListData>();
  uint32_t depth = 1;
  for (const auto& x : items) depth = std::max(depth, x.depth() + 1);
  d->items = std::move(items);
  d->isTuple = isTuple;
  d->depth = depth;
  Value v;
  v.v_ = std::shared_ptr<const ListData>(std::move(d));
  return v;
}
Value Value::special(std::vector<Value> items, ListData::Special special) {
  Value v = list(std::move(items));
  const_cast<ListData&>(v.asList()).special = special;
  return v;
}

Value Value::deferredError(std::string kind, std::string message) {
  Value v = special({}, ListData::Special::Generator);
  auto& d = const_cast<ListData&>(v.asList());
  d.deferredKind = std::move(kind);
  d.deferredMessage = std::move(message);
  return v;
}

Value Value::dict(DictData d) {
  uint32_t depth = 1;
  for (const auto& kv : d.items) depth = std::max({depth, kv.first.depth() + 1, kv.second.depth() + 1});
  d.depth = depth;
  Value v;
  v.v_ = std::make_shared<const DictData>(std::move(d));
  return v;
}
Value Value::nameSpace(DictData attrs) {
  Value v;
  v.v_ = std::make_shared<NamespaceData>(NamespaceData{std::move(attrs)});
  return v;
}
Value Value::callable(std::string name, std::function<Value(Interpreter&, CallArgs&)> fn) {
  Value v;
  v.v_ = std::make_shared<const CallableData>(CallableData{std::move(name), std::move(fn)});
  return v;
}

std::string Value::undefinedKind() const {
  const auto& p = std::get<0>(v_);
  return p ? p->errorKind : std::string("UndefinedError");
}

std::string Value::undefinedMessage() const {
  const auto& p = std::get<0>(v_);
  return p ? p->message : std::string("value is undefined");
}

uint32_t Value::depth() const {
  switch (kind()) {
    case Kind::List: return asList().depth;
    case Kind::Dict: return asDict().depth;
    case Kind::Namespace: return asNamespace().attrs.depth;
    default: return 0;
  }
}

bool Value::truthy() const {
  switch (kind()) {
    case Kind::Undefined:
    case Kind::None: return false;
    case Kind::Bool: return asBool();
    case Kind::Int: return asInt() != 0;
    case Kind::Float: return asFloat() != 0.0;
    case Kind::String: return !asString().empty();
    case Kind::List: return asList().isIterator() || !asList().items.empty();
    case Kind::Dict: return !asDict().items.empty();
    case Kind::Namespace:
    case Kind::Callable: return true;
  }
  return false;
}

std::string pyFloatRepr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string s(buf, res.ptr);
  std::string sign;
  size_t p = 0;
  if (s[0] == '-') {
    sign = "-";
    p = 1;
  }
  size_t epos = s.find('e');
  std::string mant = s.substr(p, epos - p);
  int exp = std::stoi(s.substr(epos + 1));
  std::string digits;
  for (char c : mant)
    if (c != '.') digits.push_back(c);
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  std::string out = sign;
  if (exp >= -4 && exp < 16) {
    if (exp >= 0) {
      const size_t intLen = static_cast<size_t>(exp) + 1;
      if (digits.size() <= intLen) {
        out += digits + std::string(intLen - digits.size(), '0') + ".0";
      } else {
        out += digits.substr(0, intLen) + "." + digits.substr(intLen);
      }
    } else {
      out += "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
    }
  } else {
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    out += exp < 0 ? "e-" : "e+";
    int a = exp < 0 ? -exp : exp;
    if (a < 10) out += "0";
    out += std::to_string(a);
  }
  return out;
}

namespace {
thread_local size_t gReprLimit = SIZE_MAX;

void checkRepr(const std::string& out) {
  if (out.size() > gReprLimit)
    throw ValueTooLarge("the text of a value exceeds " + std::to_string(gReprLimit) + " bytes");
}
}  // namespace

ReprLimit::ReprLimit(size_t maxBytes) : saved_(gReprLimit) { gReprLimit = maxBytes; }
ReprLimit::~ReprLimit() { gReprLimit = saved_; }

std::string Value::str() const {
  switch (kind()) {
    case Kind::Undefined: return {};
    case Kind::String: return asString();
    default: return repr();
  }
}

std::string Value::repr() const {
  switch (kind()) {
    case Kind::Undefined: return "Undefined";
    case Kind::None: return "None";
    case Kind::Bool: return asBool() ? "True" : "False";
    case Kind::Int: return std::to_string(asInt());
    case Kind::Float: return pyFloatRepr(asFloat());
    case Kind::String: return pyReprString(asString());
    case Kind::List: {
      const auto& l = asList();
      if (l.isIterator()) return "<" + typeName() + " object>";
      if (!l.isPlain()) {
        std::string out = typeName() + "([";
        for (size_t i = 0; i < l.items.size(); ++i) {
          if (i) out += ", ";
          out += l.items[i].repr();
          checkRepr(out);
        }
        return out + "])";
      }
      std::string out = l.isTuple ? "(" : "[";
      for (size_t i = 0; i < l.items.size(); ++i) {
        if (i) out += ", ";
        out += l.items[i].repr();
        checkRepr(out);
      }
      if (l.isTuple && l.items.size() == 1) out += ",";
      out += l.isTuple ? ")" : "]";
      return out;
    }
    case Kind::Dict:
    case Kind::Namespace: {
      const auto& d = isDict() ? asDict() : asNamespace().attrs;
      std::string out = isDict() ? "{" : "<Namespace {";
      for (size_t i = 0; i < d.items.size(); ++i) {
        if (i) out += ", ";
        out += d.items[i].first.repr() + ": " + d.items[i].second.repr();
        checkRepr(out);
      }
      out += isDict() ? "}" : "}>";
      return out;
    }
    case Kind::Callable: return "<built-in function " + asCallable().name + ">";
  }
  return {};
}

std::string Value::typeName() const {
  switch (kind()) {
    case Kind::Undefined: return "Undefined";
    case Kind::None: return "NoneType";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::String: return "str";
    case Kind::List:
      switch (asList().special) {
        case ListData::Special::Generator: return "generator";
        case ListData::Special::ReverseIterator: return "list_reverseiterator";
        case ListData::Special::DictKeys: return "dict_keys";
        case ListData::Special::DictValues: return "dict_values";
        case ListData::Special::DictItems: return "dict_items";
        default: return asList().isTuple ? "tuple" : "list";
      }
    case Kind::Dict: return "dict";
    case Kind::Namespace: return "Namespace";
    case Kind::Callable: return "builtin_function_or_method";
  }
  return "object";
}

std::string Value::objectTypeRepr() const {
  if (isNone()) return "None";
  if (isNamespace()) return "jinja2.utils.Namespace object";
  return typeName() + " object";
}

bool Value::identical(const Value& other) const {
  if (kind() != other.kind()) return false;
  switch (kind()) {
    case Kind::Undefined:
    case Kind::None: return true;
    case Kind::Bool: return asBool() == other.asBool();
    case Kind::Int: return asInt() == other.asInt();
    case Kind::Float: return asFloat() == other.asFloat();
    case Kind::String: return asString() == other.asString();
    case Kind::List: return std::get<6>(v_) == std::get<6>(other.v_);
    case Kind::Dict: return std::get<7>(v_) == std::get<7>(other.v_);
    case Kind::Namespace: return std::get<8>(v_) == std::get<8>(other.v_);
    case Kind::Callable: return std::get<9>(v_) == std::get<9>(other.v_);
  }
  return false;
}

bool Value::equals(const Value& other) const {
  if (isNumber() && other.isNumber()) {
    if (isFloat() || other.isFloat()) return toDouble() == other.toDouble();
    return intLike() == other.intLike();
  }
  if (kind() != other.kind()) return false;
  switch (kind()) {
    case Kind::Undefined:
    case Kind::None: return true;
    case Kind::String: return asString() == other.asString();
    case Kind::List: {
      const auto& a = asList();
      const auto& b = other.asList();
      if (!a.isPlain() || !b.isPlain()) return identical(other);
      if (a.isTuple != b.isTuple || a.items.size() != b.items.size()) return false;
      for (size_t i = 0; i < a.items.size(); ++i)
        if (!a.items[i].equals(b.items[i])) return false;
      return true;
    }
    case Kind::Dict: {
      const auto& a = asDict();
      const auto& b = other.asDict();
      if (a.items.size() != b.items.size()) return false;
      for (const auto& kv : a.items) {
        const Value* o = b.find(kv.first);
        if (!o || !o->equals(kv.second)) return false;
      }
      return true;
    }
    default: return identical(other);
  }
}

namespace {

template <class J>
Value fromJsonImpl(const J& j, uint32_t depth) {
  if (depth > kMaxJsonDepth) throw std::invalid_argument("JSON input nested too deeply");
  switch (j.type()) {
    case nlohmann::json::value_t::null: return Value::none();
    case nlohmann::json::value_t::boolean: return Value::boolean(j.template get<bool>());
    case nlohmann::json::value_t::number_integer: return Value::integer(j.template get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: {
      auto u = j.template get<uint64_t>();
      if (u <= static_cast<uint64_t>(INT64_MAX)) return Value::integer(static_cast<int64_t>(u));
      return Value::floating(static_cast<double>(u));
    }
    case nlohmann::json::value_t::number_float: return Value::floating(j.template get<double>());
    case nlohmann::json::value_t::string: return Value::string(j.template get<std::string>());
    case nlohmann::json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& x : j) items.push_back(fromJsonImpl(x, depth + 1));
      return Value::list(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      DictData d;
      d.items.reserve(j.size());
      for (auto it = j.begin(); it != j.end(); ++it)
        d.items.emplace_back(Value::string(it.key()), fromJsonImpl(it.value(), depth + 1));
      return Value::dict(std::move(d));
    }
    default: return Value::none();  // binary / discarded
  }
}

struct Dumper {
  const JsonDumpOptions& o;
  std::string out;

  void check() const {
    if (out.size() > o.maxBytes) throw JsonDumpTooLarge("the JSON text exceeds " + std::to_string(o.maxBytes) + " bytes");
  }

  void newline(uint32_t level) {
    out.push_back('\n');
    for (uint32_t i = 0; i < level; ++i) {
      out += o.indent;
      check();
    }
  }

  std::string keyString(const Value& k) {
    switch (k.kind()) {
      case Value::Kind::String: return k.asString();
      case Value::Kind::Int: return std::to_string(k.asInt());
      case Value::Kind::Float: {
        double d = k.asFloat();
        if (std::isnan(d)) return "NaN";
        if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
        return pyFloatRepr(d);
      }
      case Value::Kind::Bool: return k.asBool() ? "true" : "false";
      case Value::Kind::None: return "null";
      default:
        throw std::invalid_argument("keys must be str, int, float, bool or None, not " + k.typeName());
    }
  }

  void dump(const Value& v, uint32_t level) {
    switch (v.kind()) {
      case Value::Kind::None: out += "null"; return;
      case Value::Kind::Bool: out += v.asBool() ? "true" : "false"; return;
      case Value::Kind::Int: out += std::to_string(v.asInt()); return;
      case Value::Kind::Float: {
        double d = v.asFloat();
        if (std::isnan(d))
          out += "NaN";
        else if (std::isinf(d))
          out += d > 0 ? "Infinity" : "-Infinity";
        else
          out += pyFloatRepr(d);
        return;
      }
      case Value::Kind::String: jsonEscapeString(out, v.asString(), o.ensureAscii); return;
      case Value::Kind::List: {
        if (!v.asList().isPlain())
          throw std::invalid_argument("Object of type " + v.typeName() + " is not JSON serializable");
        const auto& items = v.asList().items;
        if (items.empty()) {
          out += "[]";
          return;
        }
        out.push_back('[');
        for (size_t i = 0; i < items.size(); ++i) {
          if (i) out += o.itemSeparator;
          if (o.hasIndent) newline(level + 1);
          dump(items[i], level + 1);
          check();
        }
        if (o.hasIndent) newline(level);
        out.push_back(']');
        return;
      }
      case Value::Kind::Dict: {
        const auto& d = v.asDict();
        if (d.items.empty()) {
          out += "{}";
          return;
        }
        std::vector<std::pair<std::string, const Value*>> entries;
        entries.reserve(d.items.size());
        for (const auto& kv : d.items) entries.emplace_back(keyString(kv.first), &kv.second);
        if (o.sortKeys)
          std::stable_sort(entries.begin(), entries.end(),
                           [](const auto& a, const auto& b) { return a.first < b.first; });
        out.push_back('{');
        for (size_t i = 0; i < entries.size(); ++i) {
          if (i) out += o.itemSeparator;
          if (o.hasIndent) newline(level + 1);
          jsonEscapeString(out, entries[i].first, o.ensureAscii);
          out += o.keySeparator;
          dump(*entries[i].second, level + 1);
          check();
        }
        if (o.hasIndent) newline(level);
        out.push_back('}');
        return;
      }
      default:
        throw std::invalid_argument("Object of type " + v.typeName() + " is not JSON serializable");
    }
  }
};

}  // namespace

Value Value::fromJson(const nlohmann::json& j) { return fromJsonImpl(j, 0); }
Value Value::fromJson(const nlohmann::ordered_json& j) { return fromJsonImpl(j, 0); }

std::string jsonDumps(const Value& v, const JsonDumpOptions& opts) {
  Dumper d{opts, {}};
  d.dump(v, 0);
  d.check();
  return std::move(d.out);
}

}  // namespace linnet::chat::detail
