#include "elaborate/generics.h"

#include <fmt/format.h>

#include <algorithm>

namespace linnet::elab {

using namespace syntax;

std::string Env::key() const {
  std::string k;
  for (const auto& [n, v] : dims) k += fmt::format("{}={};", n, v);
  for (const auto& [n, v] : packs) k += fmt::format("{}=[{}];", n, fmt::join(v, ","));
  for (const auto& [n, v] : dtypes) k += fmt::format("{}={};", n, sema::name(v));
  return k;
}

int64_t evalDim(const Env& env, const StaticInts& statics, const syntax::Expr& e) {
  switch (e.kind) {
    case syntax::ExprKind::IntLiteral: return static_cast<const IntLiteralExpr&>(e).value;
    case syntax::ExprKind::Name: {
      const std::string& n = static_cast<const NameExpr&>(e).name;
      if (statics)
        if (auto v = statics(n)) return *v;
      if (auto it = env.dims.find(n); it != env.dims.end()) return it->second;
      throw GenericError(e.range, fmt::format("`{}` has no value here", n));
    }
    case syntax::ExprKind::Unary: {
      int64_t v = evalDim(env, statics, *static_cast<const UnaryExpr&>(e).operand), neg = 0;
      if (__builtin_sub_overflow(int64_t{0}, v, &neg))
        throw GenericError(e.range, fmt::format("dimension arithmetic overflows: -({}) leaves int64", v));
      return neg;
    }
    case syntax::ExprKind::Binary: {
      // A left-leaning chain by a loop down its left spine, not recursion;
      // each step checked: a value that leaves int64 is an error, not UB.
      std::vector<const BinaryExpr*> spine{static_cast<const BinaryExpr*>(&e)};
      while (spine.back()->lhs->kind == syntax::ExprKind::Binary)
        spine.push_back(static_cast<const BinaryExpr*>(spine.back()->lhs.get()));
      int64_t l = evalDim(env, statics, *spine.back()->lhs);
      for (auto it = spine.rbegin(); it != spine.rend(); ++it) {
        const BinaryExpr& b = **it;
        int64_t r = evalDim(env, statics, *b.rhs), v = 0;
        bool overflow = false;
        switch (b.op) {
          case BinaryOp::Add: overflow = __builtin_add_overflow(l, r, &v); break;
          case BinaryOp::Sub: overflow = __builtin_sub_overflow(l, r, &v); break;
          case BinaryOp::Mul: overflow = __builtin_mul_overflow(l, r, &v); break;
          case BinaryOp::Div:
            if (r <= 0) throw GenericError(b.range, "division by a non-positive dimension");
            v = l >= 0 ? l / r : -((-l + r - 1) / r);
            break;
          case BinaryOp::Rem:
            if (r <= 0) throw GenericError(b.range, "remainder by a non-positive dimension");
            v = ((l % r) + r) % r;
            break;
          default: throw GenericError(b.range, "not a dimension expression");
        }
        if (overflow)
          throw GenericError(b.range, fmt::format("dimension arithmetic overflows: {} {} {} leaves int64 "
                                                  "({} to {}); use smaller dimensions or generics",
                                                  l, spelling(b.op), r, INT64_MIN, INT64_MAX));
        l = v;
      }
      return l;
    }
    default: break;
  }
  throw GenericError(e.range, "not a dimension expression");
}

std::vector<int64_t> evalShape(const Env& env, const StaticInts& statics, const std::vector<ExprPtr>& dims) {
  std::vector<int64_t> out;
  for (const ExprPtr& d : dims) {
    if (d->kind == syntax::ExprKind::Spread) {
      const auto& p = env.packs.at(static_cast<const SpreadExpr&>(*d).pack.name);
      out.insert(out.end(), p.begin(), p.end());
    } else {
      out.push_back(evalDim(env, statics, *d));
    }
  }
  return out;
}

Scalar evalDType(const Env& env, const std::string& n, SourceRange at) {
  if (auto s = sema::scalarNamed(n)) return *s;
  if (auto it = env.dtypes.find(n); it != env.dtypes.end()) return it->second;
  throw GenericError(at, fmt::format("unknown element type `{}`", n));
}

Scalar evalDType(const Env& env, const syntax::Expr& e) {
  if (e.kind != syntax::ExprKind::Name) throw GenericError(e.range, "expected an element type");
  return evalDType(env, static_cast<const NameExpr&>(e).name, e.range);
}

Env bindCallGenerics(const FnDecl& fn, Env env, const std::map<std::string, int64_t>& given, const CallExpr* call,
                     const std::vector<ArgType>& args, const std::function<int64_t(const syntax::Expr&)>& explicitDim,
                     const std::function<Scalar(const syntax::Expr&)>& explicitDType) {
  for (const auto& [n, v] : given) env.dims[n] = v;
  for (size_t i = 0; call && i < call->generics.size(); ++i) {
    const GenericParam& g = fn.generics[i];
    if (g.kind.name == "Dim") env.dims[g.name.name] = explicitDim(*call->generics[i]);
    else env.dtypes[g.name.name] = explicitDType(*call->generics[i]);
  }
  for (size_t k = 0; k < fn.params.size() && k < args.size(); ++k) {
    const TypeExpr& t = *fn.params[k].type;
    if (t.kind != TypeKind::Tensor && !(t.kind == TypeKind::Named && !t.hasGenerics)) continue;
    const ArgType& a = args[k];
    if (!a.tensor) continue;
    if (t.kind == TypeKind::Named) {
      if (!sema::scalarNamed(t.name.name) && !env.dtypes.count(t.name.name) && !a.weak) env.dtypes[t.name.name] = a.dtype;
      continue;
    }
    const std::string& dn = t.elem->name.name;
    if (!sema::scalarNamed(dn) && !env.dtypes.count(dn) && !a.weak) env.dtypes[dn] = a.dtype;
    size_t packAt = t.dims.size();
    for (size_t i = 0; i < t.dims.size(); ++i)
      if (t.dims[i]->kind == syntax::ExprKind::Spread) packAt = i;
    size_t suffix = packAt == t.dims.size() ? 0 : t.dims.size() - packAt - 1;
    auto bindDim = [&](const syntax::Expr& d, int64_t v) {
      if (d.kind != syntax::ExprKind::Name) return;
      const std::string& n = static_cast<const NameExpr&>(d).name;
      if (!env.dims.count(n)) env.dims[n] = v;
    };
    if (packAt == t.dims.size()) {
      if (a.shape.size() != t.dims.size())
        throw GenericError(call ? call->range : fn.name.range,
                           fmt::format("argument `{}` of `{}` has rank {}, expected {}", fn.params[k].name.name,
                                       fn.name.name, a.shape.size(), t.dims.size()));
      for (size_t i = 0; i < t.dims.size(); ++i) bindDim(*t.dims[i], a.shape[i]);
    } else {
      for (size_t i = 0; i < packAt; ++i) bindDim(*t.dims[i], a.shape[i]);
      for (size_t i = 0; i < suffix; ++i) bindDim(*t.dims[t.dims.size() - 1 - i], a.shape[a.shape.size() - 1 - i]);
      const std::string& pack = static_cast<const SpreadExpr&>(*t.dims[packAt]).pack.name;
      if (!env.packs.count(pack))
        env.packs[pack] = std::vector<int64_t>(a.shape.begin() + packAt, a.shape.end() - suffix);
    }
  }
  for (const GenericParam& g : fn.generics) {
    if (!g.defaultValue) continue;
    if (g.kind.name == "Dim" && !env.dims.count(g.name.name)) env.dims[g.name.name] = evalDim(Env{}, {}, *g.defaultValue);
    if (g.kind.name != "Dim" && g.kind.name != "Dims" && !env.dtypes.count(g.name.name))
      env.dtypes[g.name.name] = evalDType(Env{}, *g.defaultValue);
  }
  return env;
}

std::vector<std::string> failedWhereClauses(const FnDecl& fn, const Env& env, const SourceManager& sources) {
  std::vector<std::string> out;
  for (const ExprPtr& w : fn.where) {
    const auto& b = static_cast<const BinaryExpr&>(*w);
    int64_t l = evalDim(env, {}, *b.lhs), r = evalDim(env, {}, *b.rhs);
    bool holds = b.op == BinaryOp::Eq ? l == r : b.op == BinaryOp::Ne ? l != r
                 : b.op == BinaryOp::Lt ? l < r : b.op == BinaryOp::Le ? l <= r
                 : b.op == BinaryOp::Gt ? l > r : l >= r;
    if (!holds)
      out.push_back(fmt::format("the where clause `{}` does not hold ({} {} {})", std::string(sources.text(w->range)),
                                l, spelling(b.op), r));
  }
  return out;
}

std::optional<std::vector<int64_t>> broadcast(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n);
  for (size_t k = 0; k < n; ++k) {
    int64_t x = k < n - a.size() ? 1 : a[k - (n - a.size())];
    int64_t y = k < n - b.size() ? 1 : b[k - (n - b.size())];
    if (x != y && x != 1 && y != 1) return std::nullopt;
    out[k] = x == 1 ? y : x;
  }
  return out;
}

void forEachChild(const syntax::Expr& e, const std::function<void(const syntax::Expr&)>& fn) {
  switch (e.kind) {
    case syntax::ExprKind::Unary: fn(*static_cast<const UnaryExpr&>(e).operand); break;
    case syntax::ExprKind::Binary:
      fn(*static_cast<const BinaryExpr&>(e).lhs);
      fn(*static_cast<const BinaryExpr&>(e).rhs);
      break;
    case syntax::ExprKind::Call:
      for (const Argument& a : static_cast<const CallExpr&>(e).args) fn(*a.value);
      break;
    case syntax::ExprKind::Index: {
      const auto& ix = static_cast<const IndexExpr&>(e);
      fn(*ix.base);
      for (const IndexItem& it : ix.items) {
        if (it.index) fn(*it.index);
        if (it.lo) fn(*it.lo);
        if (it.hi) fn(*it.hi);
      }
      break;
    }
    case syntax::ExprKind::Reduce: fn(*static_cast<const ReduceExpr&>(e).body); break;
    case syntax::ExprKind::Tuple:
      for (const auto& x : static_cast<const TupleExpr&>(e).elems) fn(*x);
      break;
    default: break;
  }
}

}  // namespace linnet::elab
