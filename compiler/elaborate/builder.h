// The elaborator's internals: one walk of a checked fn body with numbers
// for every generic, building the typed tree of elaborate/program.h.
// statements.cpp: bodies, statements, calls; expressions.cpp: names,
// operators, indexing, comprehensions; primitive_calls.cpp: one rule per
// primitive of syntax/primitives.def.
#pragma once

#include <fmt/format.h>

#include "elaborate/program.h"
#include "syntax/ast.h"

namespace linnet::elab {

// A value while elaborating: the expression that computes it, its type
// (whose `weak` may differ from the expression's once a value is bound),
// and the integer it is known to be at compile time, if any.
struct Value {
  const Expr* expr = nullptr;
  Type type;
  std::optional<int64_t> staticInt;
  const TensorType& t() const { return type.tensor; }
};

struct Frame {
  FnInstance* fn = nullptr;
  const Instance* self = nullptr;  // the receiver's representative
  const sema::Module* module = nullptr;
  Env env;
  std::vector<std::map<std::string, Value>> scopes;
  int gridRank = 0;   // axes of the index grid of enclosing comprehensions
  bool returned = false;  // straight-line code after a `return` is dead
  Body* out = nullptr;    // where statements go
};

struct Program::Builder {
  Program& program;
  const sema::Program& source;
  Frame empty;

  explicit Builder(Program& p) : program(p), source(p.source_) {}

  [[noreturn]] void fail(SourceRange at, const std::string& message) const {
    throw Error(fmt::format("{}: {}", program.where(at), message));
  }
  template <typename Fn>
  auto guarded(Fn&& fn) -> decltype(fn()) {
    try {
      return fn();
    } catch (const GenericError& e) {
      fail(e.at, e.what());
    }
  }

  // -- the instance tree (program.cpp)
  std::unique_ptr<Instance> instantiate(const syntax::BlockDecl* block, const sema::Module* module,
                                        Env env, std::string path);

  // -- dimensions and dtypes under a frame's generics and static ints
  StaticInts staticsOf(Frame& f);
  int64_t dim(Frame& f, const syntax::Expr& e);
  std::vector<int64_t> shapeList(Frame& f, const std::vector<syntax::ExprPtr>& list);
  Scalar dtypeOf(Frame& f, const std::string& n, SourceRange at);
  Scalar dtypeOf(Frame& f, const syntax::Expr& e);
  Scalar declaredDType(Frame& f, const syntax::TypeExpr& t);
  TensorType declared(Frame& f, const syntax::ParamDecl& p);

  // -- nodes
  Expr* node(Frame& f, ExprKind kind, Type type, SourceRange at, std::vector<const Expr*> operands = {});
  Stmt* stmt(Frame& f, StmtKind kind, SourceRange at);
  SlotId newSlot(Frame& f, const std::string& name, Type type, bool mutableVar = false);
  Value local(Frame& f, SlotId slot, SourceRange at);
  Value tensorValue(const Expr* e) { return Value{e, e->type, std::nullopt}; }
  Value constantInt(Frame& f, Scalar dt, int64_t v, bool weak, SourceRange at);
  Value constantFloat(Frame& f, Scalar dt, double v, bool weak, SourceRange at);
  Value cast(Frame& f, const Value& x, Scalar to, SourceRange at);
  Value broadcastTo(Frame& f, const Value& x, const std::vector<int64_t>& shape, SourceRange at);
  static Value finalize(Value v);
  std::vector<int64_t> broadcastShapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                                       SourceRange at) const;

  // -- bodies and statements (statements.cpp)
  FnInstance* instantiateFn(const syntax::FnDecl& fn, const sema::Module* module, const Instance* self,
                            Env env, const std::vector<Value>& args);
  void body(Frame& f, const syntax::StmtList& stmts);
  void statement(Frame& f, const syntax::Stmt& s);
  void letSlot(Frame& f, const syntax::Ident& name, const Value& v, bool isVar, SourceRange at);
  void staticFor(Frame& f, const syntax::StaticForStmt& l);
  std::vector<SlotId> varsInScope(Frame& f);
  void bind(Frame& f, const std::string& n, Value v) { f.scopes.back()[n] = std::move(v); }
  Value* lookup(Frame& f, const std::string& n);

  // -- calls (statements.cpp)
  Value call(Frame& f, const syntax::CallExpr& call);
  Value callFn(Frame& caller, const syntax::FnDecl& fn, const Value* receiver, const Instance* self,
               const sema::Module* module, const syntax::CallExpr& call, std::vector<Value> args);
  Env bindCallEnv(Frame& caller, const syntax::FnDecl& fn, const Env& base, const syntax::CallExpr* call,
                  const std::vector<Value>& args, const std::map<std::string, int64_t>& given);
  std::vector<Value> coerceArgs(Frame& callee, Frame& at, const syntax::FnDecl& fn, std::vector<Value> args);

  // -- expressions (expressions.cpp)
  Value eval(Frame& f, const syntax::Expr& e);
  Value name(Frame& f, const syntax::NameExpr& e);
  Value member(Frame& f, const syntax::MemberExpr& e);
  bool selfMember(Frame& f, const Value& block, const std::string& n, SourceRange at, Value& out);
  Value index(Frame& f, const syntax::IndexExpr& e);
  Value unary(Frame& f, sema::UnaryKind k, Value x, SourceRange at);
  Value binary(Frame& f, sema::BinaryKind k, Value l, Value r, SourceRange at);
  Value comprehension(Frame& f, const std::vector<syntax::Ident>& names, const syntax::Expr& body,
                      std::optional<sema::ReduceKind> reduce, SourceRange at);
  std::optional<int64_t> extentOf(Frame& f, const syntax::Expr& e, const std::string& var);
  Value reduce(Frame& f, sema::ReduceKind k, const Value& x, std::vector<int64_t> axes, bool keepdims,
               SourceRange at);

  // -- primitives (primitive_calls.cpp)
  Value primitive(Frame& f, const syntax::CallExpr& call, sema::Primitive p);
  int axisArg(Frame& f, const syntax::CallExpr& call, int rank);
  static bool keepdimsArg(const syntax::CallExpr& call);
  Value matmul(Frame& f, const Value& a, const Value& b, SourceRange at);
};

}  // namespace linnet::elab
