// Syntax tree of a parsed template (internal header).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/value.h"

namespace linnet::chat::detail {

enum class ExprKind : uint8_t {
  Const,     // value
  Name,      // name
  List,      // children
  Tuple,     // children
  Dict,      // children: key0, value0, key1, value1, ...
  Getattr,   // a.name
  Getitem,   // a[b]
  Slice,     // a[children[0]:children[1]:children[2]] (null entries omitted)
  Call,      // a(children..., kwargs...)
  Filter,    // a | name(children..., kwargs...)
  Test,      // a is [not] name(children..., kwargs...)
  Unary,     // name ("-" or "+") a
  Binary,    // a name b: + - * / // % ** ~
  Compare,   // a ops[0] children[0] ops[1] children[1] ...
  And,       // a and b
  Or,        // a or b
  Not,       // not a
  CondExpr,  // b if a else c (c may be null)
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  ExprKind kind;
  size_t offset = 0;
  Value value;
  std::string name;
  ExprPtr a, b, c;
  std::vector<ExprPtr> children;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;
  bool negated = false;
};

struct Target {
  enum class Kind : uint8_t { Name, Tuple, NsAttr } kind = Kind::Name;
  std::string name;  // Name, NsAttr (the namespace variable)
  std::string attr;  // NsAttr
  std::vector<Target> items;
  size_t offset = 0;
};

enum class StmtKind : uint8_t {
  Data,         // text
  Print,        // expr
  If,           // branches, elseBody
  For,          // target, expr (iterable), filter, body, elseBody
  Set,          // target, expr
  SetBlock,     // target, body, expr (an optional Filter chain applied to the body, input null)
  Macro,        // name, params, body
  Break,
  Continue,
  With,         // withTargets/withValues, body
  FilterBlock,  // expr (Filter chain, input null), body
  Scope,        // body (e.g. {% generation %}): rendered in place
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct MacroParam {
  std::string name;
  ExprPtr defaultValue;  // may be null
};

struct Stmt {
  StmtKind kind;
  size_t offset = 0;
  std::string text;
  ExprPtr expr;
  ExprPtr filter;
  Target target;
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body body;
  Body elseBody;
  std::string name;
  std::vector<MacroParam> params;
  std::vector<Target> withTargets;
  std::vector<ExprPtr> withValues;
  // Names jinja2 starts as undefined in the frame of `body` (and of
  // `elseBody`, for a loop) rather than resolving them from enclosing
  // scopes; see analyzeScopes().
  std::vector<std::string> bodyUndefined;
  std::vector<std::string> elseUndefined;
};

// jinja2 gives every frame (the template, a loop body, a macro, a block
// set, ...) its own variable slots. A name whose first use in a frame is an
// unconditional assignment, and which no enclosing frame uses, starts as
// undefined there: a nested frame that reads it before the assignment runs
// sees undefined, not the context's value. Fills the *Undefined lists and
// returns the template frame's list.
std::vector<std::string> analyzeScopes(Body& root);

}  // namespace linnet::chat::detail
