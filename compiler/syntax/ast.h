// The abstract syntax tree. Every node keeps its SourceRange; nodes own their
// children. Kinds are declared once in the .def files beside this header.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/source.h"

namespace linnet::syntax {

enum class ExprKind : uint8_t {
#define EXPR(Name) Name,
#include "syntax/expr_kinds.def"
};
enum class StmtKind : uint8_t {
#define STMT(Name) Name,
#include "syntax/stmt_kinds.def"
};
enum class BinaryOp : uint8_t {
#define BINARY_OP(Name, Spelling, Precedence) Name,
#include "syntax/operators.def"
};
enum class UnaryOp : uint8_t {
#define UNARY_OP(Name, Spelling) Name,
#include "syntax/operators.def"
};

const char* spelling(BinaryOp op);
const char* spelling(UnaryOp op);
const char* name(ExprKind kind);
const char* name(StmtKind kind);

// A name with the range it was written at.
struct Ident {
  std::string name;
  SourceRange range;
};

// ---------------------------------------------------------------- expressions

struct Expr {
  Expr(ExprKind k, SourceRange r) : kind(k), range(r) {}
  virtual ~Expr() = default;
  const ExprKind kind;
  SourceRange range;
};
using ExprPtr = std::unique_ptr<Expr>;

// Destroys e's child expressions with an explicit stack instead of recursion:
// `x + x + ... + x` with 700,000 terms is a left-leaning chain that deep, and
// unique_ptr's nested destructors would overflow the stack. Every node with
// children calls it from its destructor, so the children it reaches are
// already empty when they are destroyed.
void destroyChildren(Expr& e) noexcept;

struct IntLiteralExpr : Expr {
  IntLiteralExpr(SourceRange r, int64_t v) : Expr(ExprKind::IntLiteral, r), value(v) {}
  int64_t value;
};
struct FloatLiteralExpr : Expr {
  FloatLiteralExpr(SourceRange r, double v) : Expr(ExprKind::FloatLiteral, r), value(v) {}
  double value;
};
struct BoolLiteralExpr : Expr {
  BoolLiteralExpr(SourceRange r, bool v) : Expr(ExprKind::BoolLiteral, r), value(v) {}
  bool value;
};
struct NameExpr : Expr {
  NameExpr(SourceRange r, std::string n) : Expr(ExprKind::Name, r), name(std::move(n)) {}
  std::string name;
};
struct UnaryExpr : Expr {
  UnaryExpr(SourceRange r, UnaryOp o, ExprPtr e)
      : Expr(ExprKind::Unary, r), op(o), operand(std::move(e)) {}
  UnaryOp op;
  ExprPtr operand;
  ~UnaryExpr() override { destroyChildren(*this); }
};
struct BinaryExpr : Expr {
  BinaryExpr(SourceRange r, BinaryOp o, ExprPtr l, ExprPtr rr)
      : Expr(ExprKind::Binary, r), op(o), lhs(std::move(l)), rhs(std::move(rr)) {}
  BinaryOp op;
  ExprPtr lhs, rhs;
  ~BinaryExpr() override { destroyChildren(*this); }
};
struct Argument {
  Ident name;  // empty name: positional
  ExprPtr value;
};
// `f(x)`, `f<A, B>(x, axis = -1)`, `block.method(x)`.
struct CallExpr : Expr {
  CallExpr(SourceRange r) : Expr(ExprKind::Call, r) {}
  ExprPtr callee;  // a Name or a Member
  bool hasGenerics = false;
  std::vector<ExprPtr> generics;  // dimension expressions or dtype names
  std::vector<Argument> args;
  ~CallExpr() override { destroyChildren(*this); }
};
struct MemberExpr : Expr {
  MemberExpr(SourceRange r, ExprPtr b, Ident m)
      : Expr(ExprKind::Member, r), base(std::move(b)), member(std::move(m)) {}
  ExprPtr base;
  Ident member;
  ~MemberExpr() override { destroyChildren(*this); }
};
// One subscript: `i`, `:`, `lo:hi`, `:hi`, `lo:`.
struct IndexItem {
  enum Kind { Single, Slice } kind = Single;
  ExprPtr index;   // Single
  ExprPtr lo, hi;  // Slice; either may be null
  SourceRange range;
};
struct IndexExpr : Expr {
  IndexExpr(SourceRange r, ExprPtr b) : Expr(ExprKind::Index, r), base(std::move(b)) {}
  ExprPtr base;
  std::vector<IndexItem> items;
  ~IndexExpr() override { destroyChildren(*this); }
};
struct TupleExpr : Expr {
  TupleExpr(SourceRange r) : Expr(ExprKind::Tuple, r) {}
  std::vector<ExprPtr> elems;
  ~TupleExpr() override { destroyChildren(*this); }
};
// `[B, S * H]`: a list of dimensions (reshape, fill) or of axes (permute).
struct ListExpr : Expr {
  ListExpr(SourceRange r) : Expr(ExprKind::List, r) {}
  std::vector<ExprPtr> elems;
  ~ListExpr() override { destroyChildren(*this); }
};
// `..L` inside a list or a tensor type: the dimensions of pack L.
struct SpreadExpr : Expr {
  SpreadExpr(SourceRange r, Ident p) : Expr(ExprKind::Spread, r), pack(std::move(p)) {}
  Ident pack;
};
// `all[b] (next[b] == eos)`: a reduction whose binders range like a
// comprehension's indices.
struct ReduceExpr : Expr {
  ReduceExpr(SourceRange r) : Expr(ExprKind::Reduce, r) {}
  Ident op;  // all, any, sum, prod, max, min
  std::vector<Ident> binders;
  ExprPtr body;
  ~ReduceExpr() override { destroyChildren(*this); }
};

// ---------------------------------------------------------------------- types

enum class TypeKind : uint8_t { Named, Tensor, Tuple, Option, Array };

struct TypeExpr {
  TypeKind kind = TypeKind::Named;
  SourceRange range;
  Ident name;                                  // Named: `f32`, `T`, `Linear`
  bool hasGenerics = false;                    // Named: `Linear<H, Out, T>`
  std::vector<ExprPtr> generics;               // Named
  std::vector<ExprPtr> dims;                   // Tensor; may hold SpreadExpr
  std::unique_ptr<TypeExpr> elem;              // Tensor dtype, Option/Array element
  std::vector<std::unique_ptr<TypeExpr>> elems;  // Tuple
  ExprPtr count;                               // Array
};
using TypeExprPtr = std::unique_ptr<TypeExpr>;

// ----------------------------------------------------------------- statements

struct Stmt {
  Stmt(StmtKind k, SourceRange r) : kind(k), range(r) {}
  virtual ~Stmt() = default;
  const StmtKind kind;
  SourceRange range;
};
using StmtPtr = std::unique_ptr<Stmt>;
using StmtList = std::vector<StmtPtr>;

struct LetStmt : Stmt {
  LetStmt(SourceRange r) : Stmt(StmtKind::Let, r) {}
  Ident name;
  TypeExprPtr type;  // optional
  ExprPtr value;
};
struct LetTupleStmt : Stmt {
  LetTupleStmt(SourceRange r) : Stmt(StmtKind::LetTuple, r) {}
  std::vector<Ident> names;
  ExprPtr value;
};
// `let name[i, j] = body`.
struct ComprehensionStmt : Stmt {
  ComprehensionStmt(SourceRange r) : Stmt(StmtKind::Comprehension, r) {}
  Ident name;
  std::vector<Ident> indices;
  ExprPtr body;
};
struct VarStmt : Stmt {
  VarStmt(SourceRange r) : Stmt(StmtKind::Var, r) {}
  Ident name;
  TypeExprPtr type;  // optional
  ExprPtr value;
};
struct AssignStmt : Stmt {
  AssignStmt(SourceRange r) : Stmt(StmtKind::Assign, r) {}
  Ident target;
  ExprPtr value;
};
struct ReturnStmt : Stmt {
  ReturnStmt(SourceRange r) : Stmt(StmtKind::Return, r) {}
  ExprPtr value;  // optional
};
struct ExprStmt : Stmt {
  ExprStmt(SourceRange r, ExprPtr e) : Stmt(StmtKind::Expr, r), expr(std::move(e)) {}
  ExprPtr expr;
};
// `static for layer in layers { }` or `static for i in lo..hi { }`.
struct StaticForStmt : Stmt {
  StaticForStmt(SourceRange r) : Stmt(StmtKind::StaticFor, r) {}
  Ident var;
  ExprPtr iterable;  // set for `in layers`
  ExprPtr lo, hi;    // set for `in lo..hi`
  StmtList body;
};
struct WhileStmt : Stmt {
  WhileStmt(SourceRange r) : Stmt(StmtKind::While, r) {}
  ExprPtr cond;
  StmtList body;
};

// ---------------------------------------------------------------------- items

struct GenericParam {
  Ident name;
  Ident kind;          // Dim, Dims, Float, Int, DType
  ExprPtr defaultValue;  // optional
};

struct ParamDecl {
  Ident name;
  TypeExprPtr type;
};

struct FnDecl {
  SourceRange range;
  bool isPub = false;
  bool isEntry = false;
  Ident name;
  std::vector<GenericParam> generics;
  std::vector<ParamDecl> params;
  TypeExprPtr result;  // null: returns nothing
  std::vector<ExprPtr> where;
  StmtList body;
};

enum class MemberKind : uint8_t { Sub, State, Param };

struct MemberDecl {
  SourceRange range;
  MemberKind kind = MemberKind::Sub;
  Ident name;
  TypeExprPtr type;
};

struct BlockDecl {
  SourceRange range;
  bool isPub = false;
  Ident name;
  std::vector<GenericParam> generics;
  std::vector<ExprPtr> where;
  std::vector<MemberDecl> members;
  std::vector<std::unique_ptr<FnDecl>> fns;
};

struct ConstDecl {
  SourceRange range;
  bool isPub = false;
  Ident name;
  TypeExprPtr type;
  ExprPtr value;
};

// `use std.nn.linear::{Linear}`.
struct UseDecl {
  SourceRange range;
  std::vector<Ident> path;
  std::vector<Ident> names;
};

struct ModuleAst {
  uint32_t file = 0;
  Ident name;  // from `module a.b`; empty when the file has none
  std::vector<UseDecl> uses;
  std::vector<std::unique_ptr<BlockDecl>> blocks;
  std::vector<std::unique_ptr<FnDecl>> fns;
  std::vector<std::unique_ptr<ConstDecl>> consts;
};

}  // namespace linnet::syntax
