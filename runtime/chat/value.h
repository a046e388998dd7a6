// Runtime values of the template engine: Python's data model as jinja2 sees
// it, restricted to what JSON inputs and template expressions produce
// (internal header).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace linnet::chat::detail {

class Value;
class Interpreter;
struct CallArgs;

struct ListData {
  // What Python object this sequence stands for. Iterators (the results of
  // select, map, items, ... which jinja2 makes generators) are always true,
  // have no len() and cannot be indexed; dict views have a len() but cannot
  // be indexed either. Iteration does not consume them (a deviation).
  enum class Special : uint8_t { None, Generator, ReverseIterator, DictKeys, DictValues, DictItems };
  std::vector<Value> items;
  bool isTuple = false;
  Special special = Special::None;
  uint32_t depth = 1;  // nesting depth of containers, to bound recursion
  // A lazy jinja2 filter whose input was unusable raises only when iterated:
  // the error it raises then (kind empty: none).
  std::string deferredKind;
  std::string deferredMessage;
  bool isIterator() const { return special == Special::Generator || special == Special::ReverseIterator; }
  bool isPlain() const { return special == Special::None; }
};

struct DictData {
  std::vector<std::pair<Value, Value>> items;  // insertion order, like a Python dict
  uint32_t depth = 1;
  const Value* find(const Value& key) const;
  const Value* findStr(std::string_view key) const;
  void set(Value key, Value value);  // insert or overwrite in place
};

struct NamespaceData {
  DictData attrs;
};

// Why a value is undefined: the message jinja2's Undefined would raise with.
struct UndefinedData {
  std::string message;
  std::string errorKind;  // what using it raises: UndefinedError, or SecurityError (sandbox)
};

struct CallableData {
  std::string name;
  std::function<Value(Interpreter&, CallArgs&)> fn;
};

class Value {
 public:
  enum class Kind : uint8_t { Undefined, None, Bool, Int, Float, String, List, Dict, Namespace, Callable };

  Value() = default;  // undefined
  static Value undefined(std::string message, std::string errorKind = "UndefinedError");
  static Value none();
  static Value boolean(bool b);
  static Value integer(int64_t i);
  static Value floating(double d);
  static Value string(std::string s);
  static Value list(std::vector<Value> items, bool isTuple = false);
  static Value special(std::vector<Value> items, ListData::Special special);
  static Value deferredError(std::string kind, std::string message);  // a generator that raises when iterated
  static Value dict(DictData d);
  static Value nameSpace(DictData attrs);
  static Value callable(std::string name, std::function<Value(Interpreter&, CallArgs&)> fn);

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  bool isUndefined() const { return kind() == Kind::Undefined; }
  bool isNone() const { return kind() == Kind::None; }
  bool isBool() const { return kind() == Kind::Bool; }
  bool isInt() const { return kind() == Kind::Int; }
  bool isFloat() const { return kind() == Kind::Float; }
  bool isNumber() const { return isInt() || isFloat() || isBool(); }
  bool isString() const { return kind() == Kind::String; }
  bool isList() const { return kind() == Kind::List; }
  // A Python list or tuple (not an iterator or a dict view).
  bool isSequence() const { return isList() && asList().isPlain(); }
  bool isDict() const { return kind() == Kind::Dict; }
  bool isNamespace() const { return kind() == Kind::Namespace; }
  bool isCallable() const { return kind() == Kind::Callable; }

  bool asBool() const { return std::get<2>(v_); }
  int64_t asInt() const { return std::get<3>(v_); }
  double asFloat() const { return std::get<4>(v_); }
  const std::string& asString() const { return std::get<5>(v_); }
  const ListData& asList() const { return *std::get<6>(v_); }
  const DictData& asDict() const { return *std::get<7>(v_); }
  NamespaceData& asNamespace() const { return *std::get<8>(v_); }
  const CallableData& asCallable() const { return *std::get<9>(v_); }
  // Message of an undefined value ("'x' is undefined", ...).
  std::string undefinedMessage() const;
  std::string undefinedKind() const;

  // Numeric value of a bool/int (Python's bool is an int).
  int64_t intLike() const { return isBool() ? (asBool() ? 1 : 0) : asInt(); }
  double toDouble() const { return isFloat() ? asFloat() : static_cast<double>(intLike()); }

  uint32_t depth() const;  // container nesting depth (0 for scalars)

  // Python bool(value).
  bool truthy() const;
  // Python str(value) (jinja's rendering of {{ value }}).
  std::string str() const;
  // Python repr(value).
  std::string repr() const;
  // Python type name: "str", "int", "dict", ...
  std::string typeName() const;
  // jinja2's object_type_repr: "dict object", "None", ...
  std::string objectTypeRepr() const;

  // Python ==.
  bool equals(const Value& other) const;
  bool identical(const Value& other) const;  // Python "is"

  static Value fromJson(const nlohmann::json& j);
  static Value fromJson(const nlohmann::ordered_json& j);

 private:
  std::variant<std::shared_ptr<const UndefinedData>, std::monostate, bool, int64_t, double, std::string,
               std::shared_ptr<const ListData>, std::shared_ptr<const DictData>, std::shared_ptr<NamespaceData>,
               std::shared_ptr<const CallableData>>
      v_;
};

// Python's float repr (shortest round-trip, "1.0", "1e-05", "inf").
std::string pyFloatRepr(double d);

// Options of transformers' tojson filter (json.dumps with ensure_ascii=False
// by default).
struct JsonDumpOptions {
  bool ensureAscii = false;
  bool hasIndent = false;
  std::string indent;  // the per-level indent string when hasIndent
  bool hasSeparators = false;
  std::string itemSeparator = ", ";
  std::string keySeparator = ": ";
  bool sortKeys = false;
  // jsonDumps stops with JsonDumpTooLarge once the text exceeds this many
  // bytes (an indent string can multiply the size).
  size_t maxBytes = SIZE_MAX;
};

// A value's text (json.dumps, repr/str of a container) grew past its limit.
struct ValueTooLarge : std::length_error {
  using std::length_error::length_error;
};
using JsonDumpTooLarge = ValueTooLarge;

// While alive, Value::repr()/str() of containers on this thread throw
// ValueTooLarge once their text exceeds `maxBytes` (a list can hold one big
// string many times over).
class ReprLimit {
 public:
  explicit ReprLimit(size_t maxBytes);
  ~ReprLimit();
  ReprLimit(const ReprLimit&) = delete;
  ReprLimit& operator=(const ReprLimit&) = delete;

 private:
  size_t saved_;
};

// json.dumps(value, ...). Throws std::invalid_argument (a TypeError in
// Python) for values JSON cannot hold, JsonDumpTooLarge past opts.maxBytes.
std::string jsonDumps(const Value& v, const JsonDumpOptions& opts);

}  // namespace linnet::chat::detail
