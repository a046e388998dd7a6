// Calls of fns and methods: arguments matched to parameters, generic
// arguments given or inferred from the argument shapes, the callee's where
// clause proven from the caller's facts, the result type substituted.
#include <fmt/format.h>

#include <algorithm>

#include "sema/checker_impl.h"

namespace linnet::sema {

using namespace syntax;
using dims::Expr;
using dims::Rel;
using dims::Relation;

namespace {

// Generic names of the callee under inference are renamed `Name'` so they
// cannot collide with the caller's own names.
std::string fresh(const std::string& name) { return name + "'"; }

void unifyShape(const Shape& pattern, const Shape& actual, Bindings& out) {
  size_t packAt = pattern.size();
  for (size_t i = 0; i < pattern.size(); ++i)
    if (pattern[i].isPack() && pattern[i].pack.back() == '\'') packAt = i;
  auto unifyDim = [&](const Dim& p, const Dim& a) {
    if (p.isPack() || a.isPack()) return;
    if (auto v = p.expr.asVar(); v && v->back() == '\'' && !out.dims.count(*v))
      out.dims[*v] = a.expr;
  };
  if (packAt == pattern.size()) {
    if (pattern.size() != actual.size()) return;
    for (size_t i = 0; i < pattern.size(); ++i) unifyDim(pattern[i], actual[i]);
    return;
  }
  size_t suffix = pattern.size() - packAt - 1;
  if (actual.size() < packAt + suffix) return;
  for (size_t i = 0; i < packAt; ++i)
    if (actual[i].isPack()) return;
  for (size_t i = 0; i < suffix; ++i)
    if (actual[actual.size() - 1 - i].isPack()) return;
  for (size_t i = 0; i < packAt; ++i) unifyDim(pattern[i], actual[i]);
  for (size_t i = 0; i < suffix; ++i)
    unifyDim(pattern[pattern.size() - 1 - i], actual[actual.size() - 1 - i]);
  const std::string& pack = pattern[packAt].pack;
  if (!out.packs.count(pack))
    out.packs[pack] = Shape(actual.begin() + packAt, actual.end() - suffix);
}

void unify(const Type& pattern, const Type& actual, Bindings& out) {
  if (pattern.kind == Type::Option && actual.kind == Type::Option) {
    unify(pattern.elems[0], actual.elems[0], out);
    return;
  }
  if (pattern.kind != actual.kind) return;
  if (pattern.kind == Type::Tuple && pattern.elems.size() == actual.elems.size()) {
    for (size_t i = 0; i < pattern.elems.size(); ++i) unify(pattern.elems[i], actual.elems[i], out);
    return;
  }
  if (pattern.kind != Type::Tensor) return;
  if (pattern.dtype.kind == DType::Param && pattern.dtype.param.back() == '\'' &&
      !out.dtypes.count(pattern.dtype.param) && !actual.dtype.isWeak() &&
      actual.dtype.kind != DType::Error)
    out.dtypes[pattern.dtype.param] = actual.dtype;
  unifyShape(pattern.shape, actual.shape, out);
}

}  // namespace

Value Checker::Impl::checkCall(Ctx& ctx, const CallExpr& call) {
  auto checkArgsOnly = [&] {
    for (const Argument& a : call.args) checkExpr(ctx, *a.value);
  };
  if (call.callee->kind == ExprKind::Member) {
    const auto& member = static_cast<const MemberExpr&>(*call.callee);
    Value base = checkExpr(ctx, *member.base);
    if (base.type.isError()) {
      checkArgsOnly();
      return Value::error();
    }
    if (base.type.kind != Type::Block) {
      error(ctx, member.member.range, fmt::format("`{}` has no methods", base.type.str()));
      checkArgsOnly();
      return Value::error();
    }
    const Module* calleeModule = program.moduleOf(base.type.block);
    const BlockSig& bsig = blockSig(base.type.block, calleeModule);
    auto it = bsig.fns.find(member.member.name);
    if (it == bsig.fns.end()) {
      error(ctx, member.member.range, fmt::format("block `{}` has no fn `{}`",
                                                  base.type.block->name.name, member.member.name));
      checkArgsOnly();
      return Value::error();
    }
    if (!it->second->isPub) {
      Diagnostic& d = error(ctx, member.member.range,
                            fmt::format("fn `{}` of block `{}` is private; mark it `pub` to call "
                                        "it from outside the block",
                                        member.member.name, base.type.block->name.name));
      Diagnostics::note(d, it->second->name.range, "declared here");
      checkArgsOnly();
      return Value::error();
    }
    refer(member.member.range, it->second->name.range,
          [&] { return fmt::format("fn `{}` of block `{}`", member.member.name, base.type.block->name.name); });
    Bindings args;
    args.dims = base.type.blockDims;
    args.packs = base.type.blockPacks;
    args.dtypes = base.type.blockDTypes;
    const Signature& sig = signature(it->second, &bsig, calleeModule);
    return callFn(ctx, call, sig, args,
                  fmt::format("{}.{}", base.type.block->name.name, member.member.name));
  }
  if (call.callee->kind != ExprKind::Name) {
    error(ctx, call.callee->range, "only fns and methods can be called");
    checkArgsOnly();
    return Value::error();
  }
  const std::string& name = static_cast<const NameExpr&>(*call.callee).name;
  if (findLocal(ctx, name)) {
    error(ctx, call.callee->range, fmt::format("`{}` is a value, not a fn", name));
    checkArgsOnly();
    return Value::error();
  }
  if (ctx.block) {
    if (auto it = ctx.block->fns.find(name); it != ctx.block->fns.end()) {
      refer(call.callee->range, it->second->name.range,
            [&] { return fmt::format("fn `{}` of block `{}`", name, ctx.block->block->name.name); });
      Bindings self;
      for (const auto& g : ctx.block->block->generics) {
        const std::string& n = g.name.name;
        if (auto d = ctx.bindings.dims.find(n); d != ctx.bindings.dims.end()) self.dims[n] = d->second;
        if (auto d = ctx.bindings.dtypes.find(n); d != ctx.bindings.dtypes.end())
          self.dtypes[n] = d->second;
      }
      const Signature& sig = signature(it->second, ctx.block, ctx.block->module);
      return callFn(ctx, call, sig, self, name);
    }
  }
  if (const Item* item = program.lookup(*ctx.module, name)) {
    if (item->kind != Item::Fn) {
      error(ctx, call.callee->range, fmt::format("`{}` is a {}, not a fn", name,
                                                 item->kind == Item::Block ? "block" : "constant"));
      checkArgsOnly();
      return Value::error();
    }
    refer(call.callee->range, item->fn->name.range,
          [&] { return fmt::format("fn `{}` of module `{}`", name, item->module->name); });
    const Signature& sig = signature(item->fn, nullptr, item->module);
    return callFn(ctx, call, sig, {}, name);
  }
  if (auto p = primitiveCalled(name)) return checkPrimitive(ctx, call, *p);
  error(ctx, call.callee->range, fmt::format("unknown fn `{}`", name));
  checkArgsOnly();
  return Value::error();
}

// A call's arguments bound to the callee's parameters (positional first,
// then by name) and checked; false after reporting a problem.
bool Checker::Impl::checkCallArgs(Ctx& ctx, const CallExpr& call, const Signature& sig, const std::string& calleeName,
                                  std::vector<const syntax::Expr*>& bound, std::vector<Value>& args) {
  const FnDecl& fn = *sig.fn;
  // Arguments to parameters: positional first, then by name.
  bound.assign(fn.params.size(), nullptr);
  bool ok = true;
  size_t positional = 0;
  for (const Argument& a : call.args) {
    if (a.name.name.empty()) {
      if (positional < bound.size()) bound[positional] = a.value.get();
      ++positional;
      continue;
    }
    size_t k = 0;
    while (k < fn.params.size() && fn.params[k].name.name != a.name.name) ++k;
    if (k == fn.params.size()) {
      error(ctx, a.name.range, fmt::format("`{}` has no parameter named `{}`", calleeName,
                                           a.name.name));
      ok = false;
    } else if (bound[k]) {
      error(ctx, a.name.range, fmt::format("parameter `{}` of `{}` is given twice", a.name.name,
                                           calleeName));
      ok = false;
    } else {
      bound[k] = a.value.get();
    }
  }
  if (positional > fn.params.size()) {
    error(ctx, call.range, fmt::format("`{}` takes {} arguments, but {} were given", calleeName,
                                       fn.params.size(), positional));
    ok = false;
  }
  args.assign(fn.params.size(), Value());
  for (size_t k = 0; k < bound.size(); ++k) {
    if (bound[k]) {
      args[k] = checkExpr(ctx, *bound[k]);
    } else if (ok) {
      error(ctx, call.range, fmt::format("`{}` takes {} arguments, but {} were given; `{}` is "
                                         "missing",
                                         calleeName, fn.params.size(), call.args.size(),
                                         fn.params[k].name.name));
      ok = false;
    }
  }
  for (const Argument& a : call.args)
    if (!a.name.name.empty() && std::find(bound.begin(), bound.end(), a.value.get()) == bound.end())
      checkExpr(ctx, *a.value);
  if (!ok || !sig.ok) return false;
  for (const Value& v : args)
    if (v.type.isError()) return false;
  return true;
}

Value Checker::Impl::callFn(Ctx& ctx, const CallExpr& call, const Signature& sig,
                            const Bindings& blockArgs, const std::string& calleeName) {
  const FnDecl& fn = *sig.fn;
  if (!activeFns.empty()) calls[activeFns.back()].push_back({sig.fn, call.range});
  if (std::find(activeFns.begin(), activeFns.end(), sig.fn) != activeFns.end()) {
    error(ctx, call.range, fmt::format("`{}` calls itself; fns cannot recurse, since every call "
                                       "is inlined",
                                       calleeName));
    return Value::error();
  }
  std::vector<const syntax::Expr*> bound;
  std::vector<Value> args;
  if (!checkCallArgs(ctx, call, sig, calleeName, bound, args)) return Value::error();
  bool ok = true;

  // The callee's own generics, renamed, then given or inferred.
  Bindings rename = blockArgs;
  for (const GenericParam& g : fn.generics) {
    const std::string& n = g.name.name;
    if (g.kind.name == "Dim") rename.dims[n] = Expr::var(fresh(n));
    else if (g.kind.name == "Dims") rename.packs[n] = Shape{Dim::spread(fresh(n))};
    else rename.dtypes[n] = DType::generic(fresh(n), g.kind.name);
  }
  Bindings inferred;
  if (call.generics.size() > fn.generics.size()) {
    error(ctx, call.range, fmt::format("`{}` takes {} generic arguments, but {} were given",
                                       calleeName, fn.generics.size(), call.generics.size()));
    return Value::error();
  }
  for (size_t i = 0; i < call.generics.size(); ++i) {
    const GenericParam& g = fn.generics[i];
    const syntax::Expr& arg = *call.generics[i];
    if (g.kind.name == "Dim") {
      auto v = evalDim(ctx, arg);
      if (!v) return Value::error();
      inferred.dims[fresh(g.name.name)] = *v;
    } else if (g.kind.name == "Dims") {
      error(ctx, arg.range, fmt::format("`{}` is a `Dims` generic; it is inferred from the "
                                        "arguments",
                                        g.name.name));
      return Value::error();
    } else {
      auto d = evalDType(ctx, arg);
      if (!d) return Value::error();
      inferred.dtypes[fresh(g.name.name)] = *d;
    }
  }
  std::vector<Type> patterns;
  for (const Type& p : sig.params) patterns.push_back(substitute(p, rename));
  for (size_t k = 0; k < patterns.size(); ++k) unify(patterns[k], args[k].type, inferred);
  for (const GenericParam& g : fn.generics) {
    std::string f = fresh(g.name.name);
    bool known = inferred.dims.count(f) || inferred.packs.count(f) || inferred.dtypes.count(f);
    if (known) continue;
    if (g.defaultValue && g.kind.name == "Dim") {
      Ctx empty;
      if (auto v = evalDim(empty, *g.defaultValue)) {
        inferred.dims[f] = *v;
        continue;
      }
    }
    if (g.defaultValue && g.kind.name != "Dim" && g.kind.name != "Dims") {
      Ctx empty;
      if (auto d = evalDType(empty, *g.defaultValue)) {
        inferred.dtypes[f] = *d;
        continue;
      }
    }
    error(ctx, call.range, fmt::format("cannot infer generic `{}` of `{}` from the arguments; "
                                       "pass it explicitly, as in `{}<...>(...)`",
                                       g.name.name, calleeName, calleeName));
    return Value::error();
  }
  // A Float or Int generic bound from the arguments must be of its kind.
  for (const GenericParam& g : fn.generics) {
    auto it = inferred.dtypes.find(fresh(g.name.name));
    if (it == inferred.dtypes.end()) continue;
    bool fits = g.kind.name == "Float" ? it->second.floatLike() : g.kind.name == "Int" ? it->second.intLike() : true;
    if (!fits) {
      error(ctx, call.range, fmt::format("generic `{}` of `{}` is a {}; `{}` is not", g.name.name, calleeName,
                                         g.kind.name, it->second.str()));
      return Value::error();
    }
  }
  for (size_t k = 0; k < patterns.size(); ++k) {
    Type expected = substitute(patterns[k], inferred);
    std::string why = mismatch(ctx, args[k].type, expected, bound[k]->range, [&] {
      return fmt::format("argument `{}` of `{}` must be `{}`", fn.params[k].name.name, calleeName, expected.str());
    });
    if (!why.empty()) {
      error(ctx, bound[k]->range,
            fmt::format("argument `{}` of `{}` must be `{}`, but it is `{}`: {}",
                        fn.params[k].name.name, calleeName, expected.str(), args[k].type.str(),
                        why));
      ok = false;
    }
  }
  if (!ok) return Value::error();

  // The callee's where clause, in the caller's terms.
  Bindings full = blockArgs;
  for (const GenericParam& g : fn.generics) {
    const std::string& n = g.name.name;
    std::string f = fresh(n);
    if (auto it = inferred.dims.find(f); it != inferred.dims.end()) full.dims[n] = it->second;
    if (auto it = inferred.packs.find(f); it != inferred.packs.end()) full.packs[n] = it->second;
    if (auto it = inferred.dtypes.find(f); it != inferred.dtypes.end()) full.dtypes[n] = it->second;
  }
  for (size_t i = 0; i < sig.where.size(); ++i) {
    Relation need{sig.where[i].lhs.substitute(full.dims), sig.where[i].op,
                  sig.where[i].rhs.substitute(full.dims)};
    auto why = [&] {
      return fmt::format("required by the where clause of `{}` (`{}`)", calleeName, sig.where[i].str());
    };
    if (!require(ctx, need, call.range, why)) {
      Diagnostic& d = unproven(ctx, call.range, need, why());
      Diagnostics::note(d, sig.whereRanges[i], "the callee's fact is stated here");
      ok = false;
    }
  }
  if (!ok) return Value::error();
  if (ctx.concrete && full.concrete()) {
    std::vector<std::string> chain = ctx.chain;
    const SourceFile& file = program.sources().file(call.range.file);
    LineCol lc = file.lineCol(call.range.begin);
    chain.push_back(fmt::format("in the call of `{}` at {}:{}:{}", calleeName, file.path(),
                                lc.line, lc.col));
    checkFnInstance(sig, full, chain);
  }
  Value out;
  out.type = substitute(substitute(sig.result, rename), inferred);
  return out;
}

}  // namespace linnet::sema
