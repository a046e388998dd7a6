// Methods of dict and list (`d.items()`, `l.index(x)`), and which attributes
// the sandbox refuses.
#include "chat/builtins.h"

namespace linnet::chat::detail {

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

}  // namespace linnet::chat::detail
