// Tree-walking evaluator (internal header).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "chat/ast.h"
#include "chat/chat_template.h"
#include "chat/lexer.h"
#include "chat/value.h"

namespace linnet::chat::detail {

// Deepest container nesting a render may build.
constexpr uint32_t kMaxValueDepth = 600;
// Deepest nesting of statement and expression evaluation (over macro calls
// too): bounds the evaluator's use of the C++ stack.
constexpr size_t kMaxEvalNesting = 200;

struct Program {
  std::string name;
  std::string rawSource;
  SourceMap map;
  Body body;
  std::vector<std::string> rootUndefined;  // see analyzeScopes()
};

struct CallArgs {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
};

// Binds call arguments to parameter names the way Python does; reports
// TypeErrors through the interpreter.
class ArgBinder {
 public:
  ArgBinder(Interpreter& in, const std::string& fname, CallArgs& args, std::initializer_list<const char*> names);
  bool has(size_t i) const { return vals_[i] != nullptr; }
  const Value& get(size_t i) const { return *vals_[i]; }
  Value getOr(size_t i, Value dflt) const { return vals_[i] ? *vals_[i] : std::move(dflt); }

 private:
  std::vector<const Value*> vals_;
};

struct Scope {
  std::unordered_map<std::string, Value> vars;
  std::shared_ptr<Scope> parent;
};

enum class Flow { Normal, Break, Continue };

class Interpreter {
 public:
  Interpreter(const Program& prog, const RenderOptions& opts);
  std::string run(const Value& context);

  // ---- services for builtins ----
  [[noreturn]] void fail(const std::string& kind, const std::string& message) const;
  [[noreturn]] void failUndefined(const Value& undef) const { fail(undef.undefinedKind(), undef.undefinedMessage()); }
  [[noreturn]] void limit(const std::string& message) const;
  void checkSize(size_t n);  // a string of n bytes / list of n elements is about to exist
  void checkDepth(const Value& v) const;
  void charge(uint64_t steps);
  Value call(const Value& callee, CallArgs& args);
  Value applyFilter(const std::string& name, const Value& input, CallArgs& args);
  bool applyTest(const std::string& name, const Value& input, CallArgs& args);
  bool hasTest(const std::string& name) const;
  bool hasFilter(const std::string& name) const;
  Value getAttr(const Value& obj, const std::string& name);
  Value getItem(const Value& obj, const Value& key);
  // Python iteration: list items, dict keys, string characters; undefined is empty.
  std::vector<Value> iterate(const Value& v);
  bool contains(const Value& container, const Value& item);
  // Python's <, <=, >, >= (op is one of them); also used by sort.
  bool compare(const Value& a, const std::string& op, const Value& b);
  const RenderOptions& options() const { return opts_; }
  const std::string& templateName() const { return prog_.name; }

 private:
  const Program& prog_;
  const RenderOptions& opts_;
  std::string* out_ = nullptr;
  std::shared_ptr<Scope> globals_;
  std::shared_ptr<Scope> templateScope_;
  std::shared_ptr<Scope> scope_;
  size_t offset_ = 0;
  uint64_t steps_ = 0;
  uint64_t iterations_ = 0;
  size_t callDepth_ = 0;
  size_t nesting_ = 0;
  struct NestingGuard {
    Interpreter& in;
    explicit NestingGuard(Interpreter& i) : in(i) {
      if (++in.nesting_ > kMaxEvalNesting) {
        --in.nesting_;
        in.limit("statements and expressions nested more than " + std::to_string(kMaxEvalNesting) +
                 " levels deep (counting macro calls)");
      }
    }
    ~NestingGuard() { --in.nesting_; }
  };

  void installGlobals();
  void emit(const std::string& s);
  Flow execBody(const Body& body);
  Flow exec(const Stmt& s);
  void execFor(const Stmt& s);
  Flow execForLoop(const Stmt& s);
  void assign(const Target& t, const Value& v);
  void bindTarget(Scope& scope, const Target& t, const Value& v);
  std::string renderToString(const Body& body, std::shared_ptr<Scope> scope);
  Value eval(const Expr& e);
  Value evalFilterChain(const Expr& e, Value input);
  void evalArgs(const Expr& e, CallArgs& args);
  Value binary(const std::string& op, const Value& a, const Value& b);
  Value lookup(const std::string& name) const;
  void predeclare(Scope& scope, const std::vector<std::string>& names);
  Value makeMacro(const Stmt& s);
  Value callMethod(const Value& self, const std::string& name, CallArgs& args);
  Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step);
};

// Stores `v` as the namespace attribute `name` (`set ns.name = v`, namespace()):
// no underscore names, no values holding a namespace or callable.
void storeInNamespace(Interpreter& in, NamespaceData& ns, const std::string& name, const Value& v);

// Builtins: filters.cpp, tests.cpp, string_methods.cpp, container_methods.cpp,
// percent_format.cpp (builtins.h: what they share).
using FilterFn = Value (*)(Interpreter&, const Value&, CallArgs&);
using TestFn = bool (*)(Interpreter&, const Value&, CallArgs&);
FilterFn findFilter(const std::string& name);
TestFn findTest(const std::string& name);
size_t testArity(const std::string& name);  // positional arguments after the value
Value callStringMethod(Interpreter& in, const std::string& self, const std::string& name, CallArgs& args, bool& found);
Value callDictMethod(Interpreter& in, const Value& self, const std::string& name, CallArgs& args, bool& found);
Value callListMethod(Interpreter& in, const Value& self, const std::string& name, CallArgs& args, bool& found);
bool isStringMethod(const std::string& name);
bool isDictMethod(const std::string& name);
bool isListMethod(const std::string& name);
bool isUnsafeMethod(const Value& self, const std::string& name);
std::string pyPercentFormat(Interpreter& in, const std::string& fmt, const Value& args);

}  // namespace linnet::chat::detail
