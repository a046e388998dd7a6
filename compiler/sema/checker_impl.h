// The checker's internals, shared by checker.cpp (items, statements,
// expressions, calls) and builtins.cpp (the typing rules of the primitives).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "sema/checker.h"
#include "sema/explain.h"
#include "sema/index.h"
#include "sema/primitives.h"
#include "syntax/ast.h"

namespace linnet::sema {

// The diagnostic for dimension arithmetic that leaves int64.
inline std::string overflowMessage(const dims::DimOverflow& o) {
  return std::string("dimension arithmetic overflows: ") + o.what() +
         "; use smaller dimensions or generics";
}

// A callable passed down without copying or allocating: the checker builds
// an obligation's reason and a fact's origin only when explaining.
template <class Sig>
class FunctionRef;
template <class R, class... A>
class FunctionRef<R(A...)> {
 public:
  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, FunctionRef>>>
  FunctionRef(F&& f)  // NOLINT: implicit, like std::function
      : obj_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* o, A... a) -> R { return (*static_cast<std::remove_reference_t<F>*>(o))(a...); }) {}
  R operator()(A... a) const { return call_(obj_, a...); }

 private:
  void* obj_;
  R (*call_)(void*, A...);
};

// What requires an obligation, in words, built on demand.
using Why = FunctionRef<std::string()>;

// A fn's signature in its own terms: its block's and its own generics are
// free names. Calls substitute their arguments into it.
struct Signature {
  const syntax::FnDecl* fn = nullptr;
  const Module* module = nullptr;
  const syntax::BlockDecl* block = nullptr;  // the enclosing block, if a method
  std::vector<Type> params;
  Type result;
  std::vector<dims::Relation> where;
  std::vector<SourceRange> whereRanges;
  bool ok = true;
};

struct MemberInfo {
  const syntax::MemberDecl* decl = nullptr;
  Type type;  // in the block's own terms
};

struct BlockSig {
  const syntax::BlockDecl* block = nullptr;
  const Module* module = nullptr;
  std::vector<dims::Relation> where;
  std::vector<SourceRange> whereRanges;
  std::map<std::string, MemberInfo> members;
  std::map<std::string, const syntax::FnDecl*> fns;
  bool ok = true;
};

// A name bound inside a body.
struct Local {
  enum Kind { Let, Var, Param, IndexVar, StaticInt, StaticBlock } kind = Let;
  Type type;
  std::optional<dims::Expr> staticInt;
  SourceRange declared;
};

// The extents of a comprehension's (or reduction's) index variables, learnt
// from the subscripts they appear in.
struct IndexScope {
  struct Var {
    std::optional<dims::Expr> extent;
    SourceRange firstUse;
    SourceRange declared;
  };
  std::map<std::string, Var> vars;
};

// The result of checking an expression.
struct Value {
  Type type;
  std::optional<dims::Expr> staticInt;  // a compile-time integer (literal, dimension, ...)
  std::string indexVar;                 // set when the expression is an index variable
  static Value error() { return {}; }
};

// Everything a body is checked in.
struct Ctx {
  const Module* module = nullptr;
  const BlockSig* block = nullptr;
  std::map<std::string, std::string> generics;  // name -> kind, in scope
  std::map<std::string, SourceRange> genericDecls;  // name -> where declared; kept only when indexing
  Bindings bindings;  // generic -> value: itself (symbolic) or a number (concrete)
  dims::Facts facts;
  // Where each of facts.relations() came from; kept only when explaining.
  std::vector<FactOrigin> origins;
  std::string label;  // for explanations where `what` is empty: "block `Heads`"
  std::vector<std::string> where;  // the where clause in scope, as written, for notes
  std::vector<std::string> chain;  // how we got here, outermost first, for notes
  bool concrete = false;
  std::optional<Type> result;  // a fn body's declared result
  bool sawReturn = false;
  int loopDepth = 0;
  std::vector<std::map<std::string, Local>> scopes;
  std::vector<IndexScope*> indexScopes;
  std::string what;  // "fn `forward` of block `Model`", for messages
};

struct Checker::Impl {
  Impl(const Program& p, Diagnostics& d) : program(p), diags(d) {}

  const Program& program;
  Diagnostics& diags;
  Explainer* explainer = nullptr;  // set: record every obligation (linnetc explain)
  SemanticIndex* index = nullptr;  // set: record types and references (linnetc lsp)
  // A name at `at` refers to `target`; `what` is built only when indexing.
  void refer(SourceRange at, SourceRange target, Why what) {
    if (index) index->reference(at, target, what());
  }
  // The type an expression or binding at `at` has in this check, with the
  // instantiation it belongs to when concrete.
  void recordType(const Ctx& ctx, SourceRange at, std::string type) {
    if (index) index->type(at, std::move(type), ctx.concrete, ctx.concrete && !ctx.chain.empty() ? ctx.chain.back() : "");
  }
  // A generic named at `at`: its declaration and its value here (the
  // number or dtype it is bound to in a concrete check).
  void noteGeneric(const Ctx& ctx, SourceRange at, const std::string& name, const std::string& value);
  std::map<const syntax::FnDecl*, Signature> signatures;
  std::map<const syntax::BlockDecl*, BlockSig> blockSigs;
  std::set<std::string> concreteDone;  // memo of concrete instances checked
  size_t concreteBlocks = 0;
  std::vector<const syntax::FnDecl*> activeFns;  // fns being checked, outermost first
  // Calls between fns, for rejecting recursion: caller -> (callee, call site).
  std::map<const syntax::FnDecl*, std::vector<std::pair<const syntax::FnDecl*, SourceRange>>> calls;
  std::vector<const syntax::BlockDecl*> activeBlocks;  // blocks being instantiated
  void checkRecursion();
  void checkBlockCycles(const Module& m);
  int depth = 0;

  // -- definitions (checker.cpp)
  void checkModule(const Module& m);
  const BlockSig& blockSig(const syntax::BlockDecl* b, const Module* m);
  const Signature& signature(const syntax::FnDecl* fn, const BlockSig* block, const Module* m);
  Ctx definitionCtx(const Module* m, const BlockSig* block, const syntax::FnDecl* fn,
                    bool withFnWhere);
  void addGenerics(Ctx& ctx, const std::vector<syntax::GenericParam>& generics);
  void addWhere(Ctx& ctx, const std::vector<syntax::ExprPtr>& where, std::vector<dims::Relation>* out,
                std::vector<SourceRange>* ranges, const std::string& owner);
  // A fact into ctx.facts, with its origin when explaining.
  void addFact(Ctx& ctx, const dims::Relation& r, FunctionRef<FactOrigin()> origin);
  void checkFnBody(Ctx& ctx, const syntax::FnDecl& fn);
  void checkBlockMembers(Ctx& ctx, const BlockSig& sig);
  Type memberType(Ctx& ctx, const MemberInfo& m);

  // -- concrete instantiation
  bool bindGenericsFromPackage(const syntax::BlockDecl& block, const std::map<std::string, GenericValue>& values,
                               Bindings& out, SourceRange at);
  void instantiateMember(const BlockSig& sig, const Bindings& b, const std::vector<std::string>& chain,
                         const std::string& path, Summary* summary, const syntax::MemberDecl& mem, Ctx& ctx);
  void instantiateBlock(const BlockSig& sig, const Bindings& b, const std::vector<std::string>& chain,
                        const std::string& path, Summary* summary);
  void checkFnInstance(const Signature& sig, const Bindings& b, std::vector<std::string> chain);

  // -- types
  Type evalType(Ctx& ctx, const syntax::TypeExpr& t);
  std::optional<dims::Expr> combineDim(Ctx& ctx, const syntax::BinaryExpr& b, const dims::Expr& l,
                                       const dims::Expr& r);
  std::optional<dims::Expr> evalDim(Ctx& ctx, const syntax::Expr& e);
  Shape evalShapeList(Ctx& ctx, const std::vector<syntax::ExprPtr>& dims, SourceRange range);
  std::optional<dims::Relation> evalRelation(Ctx& ctx, const syntax::Expr& e);
  std::optional<DType> evalDType(Ctx& ctx, const syntax::Expr& e);
  Type blockType(Ctx& ctx, const syntax::TypeExpr& t);

  // -- proofs
  // Whether r follows from the facts; not an obligation (never recorded).
  bool prove(Ctx& ctx, const dims::Relation& r);
  bool dimsEqual(Ctx& ctx, const dims::Expr& a, const dims::Expr& b);
  // An obligation at `at`: proven or not, recorded when explaining. The
  // caller reports a failure as before.
  bool require(Ctx& ctx, const dims::Relation& r, SourceRange at, Why why);
  // a == b; identical expressions are no obligation.
  bool requireEqual(Ctx& ctx, const dims::Expr& a, const dims::Expr& b, SourceRange at, Why why);
  void recordObligation(Ctx& ctx, const dims::Relation& r, SourceRange at, Why why, bool proven);
  std::string definitionOf(const Ctx& ctx) const;
  Diagnostic& unproven(Ctx& ctx, SourceRange at, const dims::Relation& r, const std::string& why);
  void addContextNotes(Ctx& ctx, Diagnostic& d);
  // Explains why `actual` is not `expected`; empty when it is. `at` and
  // `need` say what requires the match, for explanations.
  std::string mismatch(Ctx& ctx, const Type& actual, const Type& expected, SourceRange at, Why need);
  std::optional<Shape> broadcast(Ctx& ctx, const Shape& a, const Shape& b, std::string& why, SourceRange at,
                                 Why need);
  std::optional<DType> unifyDTypes(const DType& a, const DType& b);

  // -- statements and expressions
  void checkStmts(Ctx& ctx, const syntax::StmtList& stmts);
  void checkStmt(Ctx& ctx, const syntax::Stmt& s);
  // One rule per statement kind (check_body.cpp).
  void checkBinding(Ctx& ctx, const syntax::Ident& name, const syntax::Expr& value, const syntax::TypeExpr* type,
                    bool isVar);
  void checkLetStmt(Ctx& ctx, const syntax::Stmt& s);
  void checkLetTupleStmt(Ctx& ctx, const syntax::Stmt& s);
  void checkComprehensionStmt(Ctx& ctx, const syntax::Stmt& s);
  void checkVarStmt(Ctx& ctx, const syntax::Stmt& s);
  void checkAssignStmt(Ctx& ctx, const syntax::Stmt& s);
  void checkReturnStmt(Ctx& ctx, const syntax::Stmt& s);
  void checkExprStmt(Ctx& ctx, const syntax::Stmt& s);
  void checkStaticForStmt(Ctx& ctx, const syntax::Stmt& s);
  void checkWhileStmt(Ctx& ctx, const syntax::Stmt& s);
  Value checkExpr(Ctx& ctx, const syntax::Expr& e);
  Value checkName(Ctx& ctx, const syntax::NameExpr& e);
  Value checkUnary(Ctx& ctx, const syntax::UnaryExpr& e);
  Value combineBinary(Ctx& ctx, const syntax::BinaryExpr& e, Value l, Value r);
  Value checkBinary(Ctx& ctx, const syntax::BinaryExpr& e);
  Value checkIndex(Ctx& ctx, const syntax::IndexExpr& e);
  Value checkReduce(Ctx& ctx, const syntax::ReduceExpr& e);
  Value checkCall(Ctx& ctx, const syntax::CallExpr& e);
  Value checkMember(Ctx& ctx, const syntax::MemberExpr& e);
  Value callFn(Ctx& ctx, const syntax::CallExpr& call, const Signature& sig, const Bindings& blockArgs,
               const std::string& calleeName);
  bool checkCallArgs(Ctx& ctx, const syntax::CallExpr& call, const Signature& sig, const std::string& calleeName,
                     std::vector<const syntax::Expr*>& bound, std::vector<Value>& args);
  // The typing rules of the primitives (builtins.cpp).
  struct PrimitiveCall;
  Value checkPrimitive(Ctx& ctx, const syntax::CallExpr& call, Primitive p);
  Local* findLocal(Ctx& ctx, const std::string& name);
  void declare(Ctx& ctx, const syntax::Ident& name, Local local);
  Type finalizeWeak(const Type& t);

  Diagnostic& error(Ctx& ctx, SourceRange at, std::string message);
};

}  // namespace linnet::sema
