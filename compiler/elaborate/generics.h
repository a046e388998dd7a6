// Generics bound to numbers, as every backend evaluates them: the values of
// an instance's generics (`Env`), dimension and dtype expressions under
// them, a call's generics bound from its explicit arguments and from its
// arguments' shapes (docs/language.md §5), and an entry's where clause.
// The elaborator evaluates every generic through these.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/source.h"
#include "sema/types.h"
#include "syntax/ast.h"

namespace linnet::elab {

using sema::Scalar;

// Raised with the place of the expression that cannot be evaluated; each
// backend turns it into its own error with `file:line:col`.
struct GenericError : std::runtime_error {
  GenericError(SourceRange at, const std::string& message) : std::runtime_error(message), at(at) {}
  SourceRange at;
};

struct Env {
  std::map<std::string, int64_t> dims;
  std::map<std::string, std::vector<int64_t>> packs;
  std::map<std::string, Scalar> dtypes;
  std::string key() const;  // equal for equal bindings
};

// Integers in scope beyond the env (a `static for` variable), by name.
using StaticInts = std::function<std::optional<int64_t>(const std::string&)>;

int64_t evalDim(const Env& env, const StaticInts& statics, const syntax::Expr& e);
std::vector<int64_t> evalShape(const Env& env, const StaticInts& statics, const std::vector<syntax::ExprPtr>& dims);
Scalar evalDType(const Env& env, const std::string& name, SourceRange at);
Scalar evalDType(const Env& env, const syntax::Expr& e);

// An argument as generic binding sees it.
struct ArgType {
  bool tensor = true;  // false: a tuple, option or block (binds nothing)
  Scalar dtype = Scalar::F32;
  bool weak = false;   // a literal: takes the parameter's dtype, binds none
  std::vector<int64_t> shape;
};

// The generics of a call of `fn`: `base` (the callee block's), then
// `given`, then the call's explicit generic arguments (`explicitDim` and
// `explicitDType` evaluate them in the caller), then those the arguments'
// shapes determine, then defaults.
Env bindCallGenerics(const syntax::FnDecl& fn, Env base, const std::map<std::string, int64_t>& given,
                     const syntax::CallExpr* call, const std::vector<ArgType>& args,
                     const std::function<int64_t(const syntax::Expr&)>& explicitDim,
                     const std::function<Scalar(const syntax::Expr&)>& explicitDType);

// The clauses of an entry's where that do not hold, as `the where clause
// `S > 0` does not hold (0 > 0)`.
std::vector<std::string> failedWhereClauses(const syntax::FnDecl& fn, const Env& env, const SourceManager& sources);

// The NumPy broadcast of two shapes (aligned at the right, size-1 axes
// stretch), or nothing when they do not broadcast.
std::optional<std::vector<int64_t>> broadcast(const std::vector<int64_t>& a, const std::vector<int64_t>& b);

// Calls `fn` on each direct sub-expression of `e`.
void forEachChild(const syntax::Expr& e, const std::function<void(const syntax::Expr&)>& fn);

}  // namespace linnet::elab
