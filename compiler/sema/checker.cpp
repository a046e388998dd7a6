// Definitions: blocks, fns and consts, their signatures, the contexts their
// bodies are checked in, type expressions, and proofs.
#include "sema/checker.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "sema/checker_impl.h"

namespace linnet::sema {

using namespace syntax;
using dims::Expr;
using dims::Rel;
using dims::Relation;

Checker::Checker(const Program& program, Diagnostics& diags)
    : impl_(std::make_unique<Impl>(program, diags)) {}
Checker::~Checker() = default;

void Checker::setExplainer(Explainer* e) { impl_->explainer = e; }
void Checker::setIndex(SemanticIndex* i) { impl_->index = i; }

void Checker::Impl::noteGeneric(const Ctx& ctx, SourceRange at, const std::string& name, const std::string& value) {
  auto decl = ctx.genericDecls.find(name);
  if (decl != ctx.genericDecls.end())
    index->reference(at, decl->second, fmt::format("generic `{}: {}`", name, ctx.generics.at(name)));
  // Symbolically a generic is itself; a concrete check binds it.
  if (ctx.concrete) recordType(ctx, at, value);
}

void Checker::checkDefinitions() {
  for (const auto& m : impl_->program.modules()) impl_->checkBlockCycles(*m);
  for (const auto& m : impl_->program.modules()) impl_->checkModule(*m);
  impl_->checkRecursion();
}

// Every call is inlined, so the call graph must have no cycle.
void Checker::Impl::checkRecursion() {
  std::map<const FnDecl*, int> state;  // 0 new, 1 on the path, 2 done
  std::vector<std::pair<const FnDecl*, SourceRange>> path;
  std::function<void(const FnDecl*)> visit = [&](const FnDecl* f) {
    state[f] = 1;
    for (const auto& [callee, at] : calls[f]) {
      if (state[callee] == 1) {
        if (callee == f) continue;  // direct recursion is reported at the call
        std::vector<std::string> names;
        bool on = false;
        for (const auto& [g, _] : path) {
          on |= g == callee;
          if (on) names.push_back(fmt::format("`{}`", g->name.name));
        }
        names.push_back(fmt::format("`{}`", f->name.name));
        names.push_back(fmt::format("`{}`", callee->name.name));
        diags.error(at, fmt::format("fns cannot recurse, since every call is inlined: {}",
                                    fmt::join(names, " calls ")));
      } else if (state[callee] == 0) {
        path.push_back({f, at});
        visit(callee);
        path.pop_back();
      }
    }
    state[f] = 2;
  };
  for (const auto& [f, _] : calls)
    if (state[f] == 0) visit(f);
}

// A block may not contain itself, directly or through its subs.
void Checker::Impl::checkBlockCycles(const Module& m) {
  for (const auto& b : m.ast->blocks) {
    std::vector<const BlockDecl*> path;
    std::function<bool(const BlockDecl*, const Module*)> reaches = [&](const BlockDecl* x,
                                                                     const Module* xm) {
      if (std::find(path.begin(), path.end(), x) != path.end()) return x == b.get();
      path.push_back(x);
      for (const MemberDecl& mem : x->members) {
        if (mem.kind != MemberKind::Sub || !mem.type) continue;
        const TypeExpr* t = mem.type.get();
        if (t->kind == TypeKind::Array && t->elem) t = t->elem.get();
        if (t->kind != TypeKind::Named) continue;
        const Item* item = program.lookup(*xm, t->name.name);
        if (!item || item->kind != Item::Block) continue;
        if (item->block == b.get() || reaches(item->block, item->module)) {
          if (x == b.get())
            diags.error(mem.range, fmt::format("block `{}` contains itself through sub `{}`",
                                               b->name.name, mem.name.name));
          path.pop_back();
          return true;
        }
      }
      path.pop_back();
      return false;
    };
    reaches(b.get(), &m);
  }
}

static const std::set<std::string> kGenericKinds = {"Dim", "Dims", "Float", "Int", "DType"};

// ------------------------------------------------------------------ contexts

Diagnostic& Checker::Impl::error(Ctx& ctx, SourceRange at, std::string message) {
  Diagnostic& d = diags.error(at, std::move(message));
  addContextNotes(ctx, d);
  return d;
}

void Checker::Impl::addContextNotes(Ctx& ctx, Diagnostic& d) {
  for (auto it = ctx.chain.rbegin(); it != ctx.chain.rend(); ++it) Diagnostics::note(d, {}, *it);
}

void Checker::Impl::addGenerics(Ctx& ctx, const std::vector<GenericParam>& generics) {
  const GenericParam* defaulted = nullptr;
  for (const GenericParam& g : generics) {
    const std::string& n = g.name.name;
    if (g.defaultValue) {
      defaulted = &g;
    } else if (defaulted) {
      Diagnostic& d = error(ctx, g.name.range,
                            fmt::format("generic `{}` has no default but follows `{}`, which has "
                                        "one; parameters with defaults come last",
                                        n, defaulted->name.name));
      Diagnostics::note(d, defaulted->name.range, "the earlier default");
    }
    std::string kind = g.kind.name;
    if (!kGenericKinds.count(kind)) {
      error(ctx, g.kind.range, fmt::format("unknown generic kind `{}`; use Dim, Dims, Float, Int "
                                           "or DType",
                                           g.kind.name));
      kind = "Dim";  // go on as a dimension, so its uses do not cascade
    }
    if (ctx.generics.count(n)) {
      error(ctx, g.name.range, fmt::format("generic parameter `{}` is declared twice", n));
      continue;
    }
    ctx.generics[n] = kind;
    if (index) ctx.genericDecls[n] = g.name.range;
    if (kind == "Dim") {
      ctx.bindings.dims[n] = Expr::var(n);
    } else if (kind == "Dims") {
      ctx.bindings.packs[n] = Shape{Dim::spread(n)};
    } else {
      ctx.bindings.dtypes[n] = DType::generic(n, kind);
    }
    if (g.defaultValue) {
      if (kind == "Dim") {
        auto v = evalDim(ctx, *g.defaultValue);
        if (v && !v->isConstant())
          error(ctx, g.defaultValue->range, "a generic's default must be a number");
      } else if (kind != "Dims") {
        evalDType(ctx, *g.defaultValue);
      }
    }
  }
}

// Adds a where clause to the facts, in order: a fact may divide only by what
// the facts before it prove positive.
void Checker::Impl::addWhere(Ctx& ctx, const std::vector<ExprPtr>& where,
                             std::vector<Relation>* out, std::vector<SourceRange>* ranges,
                             const std::string& owner) {
  for (const ExprPtr& e : where) {
    auto r = evalRelation(ctx, *e);
    if (!r) continue;
    addFact(ctx, *r, [&] { return FactOrigin{fmt::format("where clause of {}", owner), e->range}; });
    ctx.where.push_back(r->str());
    if (out) out->push_back(*r);
    if (ranges) ranges->push_back(e->range);
  }
}

void Checker::Impl::addFact(Ctx& ctx, const Relation& r, FunctionRef<FactOrigin()> origin) {
  ctx.facts.add(r);
  if (explainer) ctx.origins.push_back(origin());
}

Ctx Checker::Impl::definitionCtx(const Module* m, const BlockSig* block, const FnDecl* fn,
                                 bool withFnWhere) {
  Ctx ctx;
  ctx.module = m;
  ctx.block = block;
  if (block) {
    addGenerics(ctx, block->block->generics);
    for (size_t i = 0; i < block->where.size(); ++i) {
      addFact(ctx, block->where[i], [&] {
        return FactOrigin{fmt::format("where clause of block `{}`", block->block->name.name), block->whereRanges[i]};
      });
      ctx.where.push_back(block->where[i].str());
    }
  }
  if (fn) {
    addGenerics(ctx, fn->generics);
    std::string what = block ? fmt::format("fn `{}` of block `{}`", fn->name.name, block->block->name.name)
                             : fmt::format("fn `{}`", fn->name.name);
    if (withFnWhere) addWhere(ctx, fn->where, nullptr, nullptr, what);
    ctx.what = what;
  } else if (block) {
    ctx.what = fmt::format("block `{}`", block->block->name.name);
  }
  if (!ctx.what.empty()) ctx.chain.push_back(fmt::format("in {}, checked for all generics", ctx.what));
  return ctx;
}

const BlockSig& Checker::Impl::blockSig(const BlockDecl* b, const Module* m) {
  auto it = blockSigs.find(b);
  if (it != blockSigs.end()) return it->second;
  BlockSig& sig = blockSigs[b];
  sig.block = b;
  sig.module = m;
  Ctx ctx;
  ctx.module = m;
  ctx.label = fmt::format("block `{}`", b->name.name);
  size_t errorsBefore = diags.errorCount();
  addGenerics(ctx, b->generics);
  addWhere(ctx, b->where, &sig.where, &sig.whereRanges, ctx.label);
  for (const MemberDecl& mem : b->members) {
    if (sig.members.count(mem.name.name)) {
      error(ctx, mem.name.range, fmt::format("member `{}` is declared twice in block `{}`",
                                             mem.name.name, b->name.name));
      continue;
    }
    MemberInfo info;
    info.decl = &mem;
    if (mem.kind == MemberKind::Sub) {
      info.type = blockType(ctx, *mem.type);
    } else {
      info.type = evalType(ctx, *mem.type);
      if (info.type.kind != Type::Tensor && !info.type.isError())
        error(ctx, mem.type->range,
              fmt::format("a `{}` member must be a tensor, not `{}`",
                          mem.kind == MemberKind::State ? "state" : "param", info.type.str()));
    }
    sig.members[mem.name.name] = info;
  }
  for (const auto& f : b->fns) {
    if (sig.members.count(f->name.name) || sig.fns.count(f->name.name)) {
      error(ctx, f->name.range, fmt::format("`{}` is declared twice in block `{}`", f->name.name,
                                            b->name.name));
      continue;
    }
    sig.fns[f->name.name] = f.get();
  }
  sig.ok = diags.errorCount() == errorsBefore;
  return sig;
}

const Signature& Checker::Impl::signature(const FnDecl* fn, const BlockSig* block, const Module* m) {
  auto it = signatures.find(fn);
  if (it != signatures.end()) return it->second;
  Signature& sig = signatures[fn];
  sig.fn = fn;
  sig.module = m;
  sig.block = block ? block->block : nullptr;
  size_t errorsBefore = diags.errorCount();
  Ctx ctx = definitionCtx(m, block, fn, false);
  addWhere(ctx, fn->where, &sig.where, &sig.whereRanges, ctx.what);
  std::set<std::string> seen;
  for (const ParamDecl& p : fn->params) {
    if (!seen.insert(p.name.name).second)
      error(ctx, p.name.range, fmt::format("parameter `{}` is declared twice", p.name.name));
    sig.params.push_back(evalType(ctx, *p.type));
  }
  sig.result = fn->result ? evalType(ctx, *fn->result) : Type::unit();
  sig.ok = diags.errorCount() == errorsBefore;
  return sig;
}

void Checker::Impl::checkModule(const Module& m) {
  for (const auto& c : m.ast->consts) {
    Ctx ctx;
    ctx.module = &m;
    ctx.label = fmt::format("constant `{}`", c->name.name);
    Type declared = evalType(ctx, *c->type);
    Value v = checkExpr(ctx, *c->value);
    if (!declared.isError() && !v.type.isError()) {
      std::string why = mismatch(ctx, v.type, declared, c->value->range, [&] {
        return fmt::format("constant `{}` is declared `{}`", c->name.name, declared.str());
      });
      if (!why.empty())
        error(ctx, c->value->range, fmt::format("constant `{}` is declared `{}` but its value is "
                                                "`{}`",
                                                c->name.name, declared.str(), v.type.str()));
    }
  }
  for (const auto& b : m.ast->blocks) {
    const BlockSig& sig = blockSig(b.get(), &m);
    Ctx ctx = definitionCtx(&m, &sig, nullptr, false);
    checkBlockMembers(ctx, sig);
    for (const auto& f : b->fns) {
      const Signature& fs = signature(f.get(), &sig, &m);
      if (!fs.ok) continue;
      Ctx fctx = definitionCtx(&m, &sig, f.get(), true);
      checkFnBody(fctx, *f);
    }
  }
  for (const auto& f : m.ast->fns) {
    const Signature& fs = signature(f.get(), nullptr, &m);
    if (!fs.ok) continue;
    Ctx fctx = definitionCtx(&m, nullptr, f.get(), true);
    checkFnBody(fctx, *f);
  }
}

// A sub's block arguments must satisfy that block's where clause, proven
// from this block's facts.
void Checker::Impl::checkBlockMembers(Ctx& ctx, const BlockSig& sig) {
  for (const MemberDecl& mem : sig.block->members) {
    if (mem.kind != MemberKind::Sub) continue;
    auto it = sig.members.find(mem.name.name);
    if (it == sig.members.end() || it->second.decl != &mem) continue;
    Type t = substitute(it->second.type, ctx.bindings);
    if (t.isError() || !t.block) continue;
    const char* countWhy = "an array of sub-blocks needs a non-negative length";
    if (t.kind == Type::BlockArray &&
        !require(ctx, {t.count, Rel::Ge, Expr::constant(0)}, mem.type->count->range, [&] { return countWhy; }))
      unproven(ctx, mem.type->count->range, {t.count, Rel::Ge, Expr::constant(0)}, countWhy);
    const BlockSig& callee = blockSig(t.block, program.moduleOf(t.block));
    Bindings args;
    args.dims = t.blockDims;
    args.packs = t.blockPacks;
    args.dtypes = t.blockDTypes;
    for (size_t i = 0; i < callee.where.size(); ++i) {
      Relation need{callee.where[i].lhs.substitute(args.dims), callee.where[i].op,
                    callee.where[i].rhs.substitute(args.dims)};
      auto why = [&] {
        return fmt::format("required by the where clause of `{}` (`{}`) for sub `{}`", t.block->name.name,
                           callee.where[i].str(), mem.name.name);
      };
      if (!require(ctx, need, mem.type->range, why)) {
        Diagnostic& d = unproven(ctx, mem.type->range, need, why());
        Diagnostics::note(d, callee.whereRanges[i], "the callee's fact is stated here");
      }
    }
  }
}

// ---------------------------------------------------------------- types

std::optional<DType> Checker::Impl::evalDType(Ctx& ctx, const syntax::Expr& e) {
  if (e.kind != ExprKind::Name) {
    error(ctx, e.range, "expected an element type such as `f32` or a generic such as `T`");
    return std::nullopt;
  }
  const std::string& n = static_cast<const NameExpr&>(e).name;
  if (auto s = scalarNamed(n)) return DType::concrete(*s);
  if (auto it = ctx.generics.find(n); it != ctx.generics.end()) {
    if (it->second == "Float" || it->second == "Int" || it->second == "DType") {
      DType t = substitute(DType::generic(n, it->second), ctx.bindings);
      if (index) noteGeneric(ctx, e.range, n, t.str());
      return t;
    }
    error(ctx, e.range, fmt::format("`{}` is a `{}`, not an element type", n, it->second));
    return std::nullopt;
  }
  error(ctx, e.range, fmt::format("unknown element type `{}`", n));
  return std::nullopt;
}

// One step of evalDim's chain: `l op r` for the operator of b.
std::optional<Expr> Checker::Impl::combineDim(Ctx& ctx, const BinaryExpr& b, const Expr& l,
                                              const Expr& r) {
  try {
    switch (b.op) {
      case BinaryOp::Add: return l + r;
      case BinaryOp::Sub: return l - r;
      case BinaryOp::Mul: return l * r;
      case BinaryOp::Div:
      case BinaryOp::Rem: {
        Relation positive{r, Rel::Gt, Expr::constant(0)};
        auto why = [&] { return fmt::format("the divisor of `{}` must be positive", spelling(b.op)); };
        if (!require(ctx, positive, b.rhs->range, why)) {
          unproven(ctx, b.rhs->range, positive, why());
          return std::nullopt;
        }
        return b.op == BinaryOp::Div ? Expr::floorDiv(l, r) : Expr::mod(l, r);
      }
      default:
        break;
    }
  } catch (const dims::DimOverflow& o) {
    error(ctx, b.range, overflowMessage(o));
    return std::nullopt;
  }
  error(ctx, b.range, fmt::format("`{}` is not allowed in a dimension; use + - * / %",
                                  spelling(b.op)));
  return std::nullopt;
}

std::optional<Expr> Checker::Impl::evalDim(Ctx& ctx, const syntax::Expr& e) {
  switch (e.kind) {
    case ExprKind::IntLiteral:
      return Expr::constant(static_cast<const IntLiteralExpr&>(e).value);
    case ExprKind::Name: {
      const std::string& n = static_cast<const NameExpr&>(e).name;
      if (Local* l = findLocal(ctx, n); l && l->staticInt) return l->staticInt;
      auto it = ctx.generics.find(n);
      if (it != ctx.generics.end() && it->second == "Dim") {
        const Expr& value = ctx.bindings.dims.at(n);
        if (index) noteGeneric(ctx, e.range, n, value.str());
        return value;
      }
      if (it != ctx.generics.end()) {
        error(ctx, e.range, fmt::format("`{}` is a `{}` generic, not a dimension", n, it->second));
        return std::nullopt;
      }
      error(ctx, e.range, fmt::format("unknown dimension `{}`", n));
      return std::nullopt;
    }
    case ExprKind::Binary: {
      // A left-leaning chain by a loop down its left spine, not recursion.
      std::vector<const BinaryExpr*> spine{static_cast<const BinaryExpr*>(&e)};
      while (spine.back()->lhs->kind == ExprKind::Binary)
        spine.push_back(static_cast<const BinaryExpr*>(spine.back()->lhs.get()));
      auto l = evalDim(ctx, *spine.back()->lhs);
      for (auto it = spine.rbegin(); it != spine.rend(); ++it) {
        auto r = evalDim(ctx, *(*it)->rhs);
        l = l && r ? combineDim(ctx, **it, *l, *r) : std::nullopt;
      }
      return l;
    }
    case ExprKind::Unary: {
      const auto& u = static_cast<const UnaryExpr&>(e);
      if (u.op == UnaryOp::Neg) {
        auto v = evalDim(ctx, *u.operand);
        if (v) return Expr::constant(0) - *v;
        return std::nullopt;
      }
      break;
    }
    default:
      break;
  }
  error(ctx, e.range, "expected a dimension expression (numbers, `Dim` generics, + - * / %)");
  return std::nullopt;
}

std::optional<Relation> Checker::Impl::evalRelation(Ctx& ctx, const syntax::Expr& e) {
  if (e.kind == ExprKind::Binary) {
    const auto& b = static_cast<const BinaryExpr&>(e);
    std::optional<Rel> rel;
    switch (b.op) {
      case BinaryOp::Eq: rel = Rel::Eq; break;
      case BinaryOp::Ne: rel = Rel::Ne; break;
      case BinaryOp::Lt: rel = Rel::Lt; break;
      case BinaryOp::Le: rel = Rel::Le; break;
      case BinaryOp::Gt: rel = Rel::Gt; break;
      case BinaryOp::Ge: rel = Rel::Ge; break;
      default: break;
    }
    if (rel) {
      auto l = evalDim(ctx, *b.lhs);
      auto r = evalDim(ctx, *b.rhs);
      if (!l || !r) return std::nullopt;
      return Relation{*l, *rel, *r};
    }
  }
  error(ctx, e.range, "a where clause states comparisons of dimensions, as in `H % Heads == 0`");
  return std::nullopt;
}

Shape Checker::Impl::evalShapeList(Ctx& ctx, const std::vector<ExprPtr>& list, SourceRange range) {
  Shape shape;
  int packs = 0;
  for (const ExprPtr& d : list) {
    if (d->kind == ExprKind::Spread) {
      const auto& s = static_cast<const SpreadExpr&>(*d);
      auto it = ctx.generics.find(s.pack.name);
      if (it == ctx.generics.end() || it->second != "Dims") {
        error(ctx, s.pack.range, fmt::format("`..{}` needs a `Dims` generic named `{}`",
                                             s.pack.name, s.pack.name));
        shape.push_back(Dim::of(Expr::constant(1)));
        continue;
      }
      const Shape& bound = ctx.bindings.packs.at(s.pack.name);
      for (const Dim& x : bound) packs += x.isPack();
      shape.insert(shape.end(), bound.begin(), bound.end());
      continue;
    }
    auto v = evalDim(ctx, *d);
    const char* extentWhy = "an extent must not be negative";
    if (v && !require(ctx, {*v, Rel::Ge, Expr::constant(0)}, d->range, [&] { return extentWhy; }))
      unproven(ctx, d->range, {*v, Rel::Ge, Expr::constant(0)}, extentWhy);
    shape.push_back(Dim::of(v ? *v : Expr::constant(1)));
  }
  if (packs > 1) error(ctx, range, "a shape may spread at most one dimension pack");
  return shape;
}

Type Checker::Impl::blockType(Ctx& ctx, const TypeExpr& t) {
  if (t.kind == TypeKind::Array) {
    Type elem = blockType(ctx, *t.elem);
    auto count = evalDim(ctx, *t.count);
    if (elem.isError() || !count) return Type::error();
    elem.kind = Type::BlockArray;
    elem.count = *count;
    return elem;
  }
  if (t.kind != TypeKind::Named) {
    error(ctx, t.range, "a `sub` member is a block, as in `sub norm: RmsNorm<H, T>`, or an array "
                        "of blocks, as in `sub layers: [Layer<H, T>; Layers]`");
    return Type::error();
  }
  const Item* item = program.lookup(*ctx.module, t.name.name);
  if (!item) {
    error(ctx, t.name.range, fmt::format("unknown block `{}`", t.name.name));
    return Type::error();
  }
  if (item->kind != Item::Block) {
    error(ctx, t.name.range, fmt::format("`{}` is not a block", t.name.name));
    return Type::error();
  }
  const BlockDecl* b = item->block;
  refer(t.name.range, b->name.range, [&] { return fmt::format("block `{}` of module `{}`", b->name.name, item->module->name); });
  Type out;
  out.kind = Type::Block;
  out.block = b;
  size_t required = 0;
  for (const auto& g : b->generics)
    if (!g.defaultValue) ++required;
  if (t.generics.size() < required || t.generics.size() > b->generics.size()) {
    error(ctx, t.range,
          fmt::format("block `{}` takes {} generic arguments, but {} were given", b->name.name,
                      required == b->generics.size()
                          ? std::to_string(required)
                          : fmt::format("{} to {}", required, b->generics.size()),
                      t.generics.size()));
    return Type::error();
  }
  for (size_t i = 0; i < b->generics.size(); ++i) {
    const GenericParam& g = b->generics[i];
    const syntax::Expr* arg = i < t.generics.size() ? t.generics[i].get() : g.defaultValue.get();
    Ctx* evalIn = &ctx;
    Ctx defaults;
    if (i >= t.generics.size()) evalIn = &defaults;  // defaults are closed: numbers, dtypes
    if (g.kind.name == "Dim") {
      auto v = evalDim(*evalIn, *arg);
      if (!v) return Type::error();
      out.blockDims[g.name.name] = *v;
    } else if (g.kind.name == "Dims") {
      error(ctx, arg->range, "blocks cannot take `Dims` generics");
      return Type::error();
    } else {
      auto d = evalDType(*evalIn, *arg);
      if (!d) return Type::error();
      if (g.kind.name == "Float" && !(d->kind == DType::Concrete ? isFloat(d->scalar)
                                                                   : d->paramKind == "Float")) {
        error(ctx, arg->range, fmt::format("generic `{}` of `{}` is a Float; `{}` is not",
                                           g.name.name, b->name.name, d->str()));
        return Type::error();
      }
      out.blockDTypes[g.name.name] = *d;
    }
  }
  return out;
}

Type Checker::Impl::evalType(Ctx& ctx, const TypeExpr& t) {
  switch (t.kind) {
    case TypeKind::Tensor: {
      Shape shape = evalShapeList(ctx, t.dims, t.range);
      if (t.elem->kind != TypeKind::Named || t.elem->hasGenerics) {
        error(ctx, t.elem->range, "a tensor's element type is a scalar type or a generic");
        return Type::error();
      }
      NameExpr name(t.elem->name.range, t.elem->name.name);
      auto d = evalDType(ctx, name);
      if (!d) return Type::error();
      return Type::tensor(std::move(shape), *d);
    }
    case TypeKind::Tuple: {
      Type out;
      out.kind = Type::Tuple;
      for (const auto& e : t.elems) out.elems.push_back(evalType(ctx, *e));
      return out;
    }
    case TypeKind::Option: {
      Type out;
      out.kind = Type::Option;
      out.elems.push_back(evalType(ctx, *t.elem));
      return out;
    }
    case TypeKind::Array:
      error(ctx, t.range, "arrays of blocks are only allowed as `sub` members");
      return Type::error();
    case TypeKind::Named: {
      if (!t.hasGenerics) {
        if (auto s = scalarNamed(t.name.name)) return Type::scalar(DType::concrete(*s));
        auto it = ctx.generics.find(t.name.name);
        if (it != ctx.generics.end() && it->second != "Dim" && it->second != "Dims")
          return Type::scalar(*evalDType(ctx, NameExpr(t.name.range, t.name.name)));
      }
      if (const Item* item = program.lookup(*ctx.module, t.name.name);
          item && item->kind == Item::Block) {
        error(ctx, t.range, fmt::format("block `{}` can only be the type of a `sub` member",
                                        t.name.name));
        return Type::error();
      }
      error(ctx, t.name.range, fmt::format("unknown type `{}`", t.name.name));
      return Type::error();
    }
  }
  return Type::error();
}

// ---------------------------------------------------------------- proofs

bool Checker::Impl::prove(Ctx& ctx, const Relation& r) { return ctx.facts.prove(r); }

bool Checker::Impl::dimsEqual(Ctx& ctx, const Expr& a, const Expr& b) {
  return a == b || ctx.facts.prove({a, Rel::Eq, b});
}

bool Checker::Impl::require(Ctx& ctx, const Relation& r, SourceRange at, Why why) {
  bool proven = ctx.facts.prove(r);
  if (explainer && (!proven || !ctx.concrete)) recordObligation(ctx, r, at, why, proven);
  return proven;
}

bool Checker::Impl::requireEqual(Ctx& ctx, const Expr& a, const Expr& b, SourceRange at, Why why) {
  return a == b || require(ctx, {a, Rel::Eq, b}, at, why);
}

std::string Checker::Impl::definitionOf(const Ctx& ctx) const {
  if (!ctx.what.empty()) return ctx.what;
  if (!ctx.label.empty()) return ctx.label;
  if (ctx.concrete && !ctx.chain.empty())
    return ctx.chain.back().rfind("in ", 0) == 0 ? ctx.chain.back().substr(3) : ctx.chain.back();
  return {};
}

namespace {

Relation negation(const Relation& r) {
  Rel op = Rel::Eq;
  switch (r.op) {
    case Rel::Eq: op = Rel::Ne; break;
    case Rel::Ne: op = Rel::Eq; break;
    case Rel::Lt: op = Rel::Ge; break;
    case Rel::Le: op = Rel::Gt; break;
    case Rel::Gt: op = Rel::Le; break;
    case Rel::Ge: op = Rel::Lt; break;
  }
  return {r.lhs, op, r.rhs};
}

// Facts that would settle a goal over `/` and `%`: each divisor dividing
// its dividend, each divisor positive.
void candidateFacts(const Expr& e, std::vector<Relation>& out) {
  for (const auto& t : e.terms()) {
    for (const auto& f : t.factors) {
      if (f.atom->kind != dims::AtomNode::Kind::Div && f.atom->kind != dims::AtomNode::Kind::Mod) continue;
      candidateFacts(f.atom->lhs, out);
      candidateFacts(f.atom->rhs, out);
      try {
        Expr rem = Expr::mod(f.atom->lhs, f.atom->rhs);
        if (!rem.isConstant()) out.push_back({rem, Rel::Eq, Expr::constant(0)});
      } catch (const dims::DimOverflow&) {
      }
      if (!f.atom->rhs.isConstant()) out.push_back({f.atom->rhs, Rel::Gt, Expr::constant(0)});
    }
  }
}

}  // namespace

void Checker::Impl::recordObligation(Ctx& ctx, const Relation& r, SourceRange at, Why why, bool proven) {
  std::string requirement = why();
  std::string relation = r.str();
  if (!explainer->fresh(at, relation, requirement)) return;
  Obligation o;
  o.at = at;
  o.definition = definitionOf(ctx);
  o.requirement = std::move(requirement);
  o.obligation = std::move(relation);
  o.simplified = Relation{ctx.facts.simplify(r.lhs), r.op, ctx.facts.simplify(r.rhs)}.str();
  o.proven = proven;
  o.concrete = ctx.concrete;
  if (ctx.concrete) o.context = ctx.chain;
  const auto& given = ctx.facts.relations();
  auto cite = [&](size_t i) {
    CitedFact c;
    c.fact = given[i].str();
    if (i < ctx.origins.size()) c.origin = ctx.origins[i];
    return c;
  };
  if (proven) {
    auto used = explainer->usedBy(ctx.facts, r);
    if (used) {
      for (size_t i : *used) o.because.push_back(cite(i));
    } else {  // not expected: usedBy proves with these very facts; cite them all
      for (size_t i = 0; i < given.size(); ++i) o.because.push_back(cite(i));
    }
    explainer->add(std::move(o));
    return;
  }
  std::set<std::string> names = r.names();
  for (size_t i = 0; i < given.size(); ++i) {
    auto mine = given[i].names();
    if (std::any_of(mine.begin(), mine.end(), [&](const std::string& n) { return names.count(n) > 0; }))
      o.closest.push_back(cite(i));
  }
  Relation no = negation(r);
  if (dims::Facts().prove(no)) {
    o.missing = fmt::format("nothing: it never holds, since `{}` for all nonnegative dimensions", no.str());
  } else if (ctx.facts.prove(no)) {
    o.missing = fmt::format("nothing: it cannot hold where the facts in scope do, since they prove `{}`", no.str());
  } else if (!ctx.concrete) {
    std::vector<Relation> candidates;
    candidateFacts(r.lhs, candidates);
    candidateFacts(r.rhs, candidates);
    for (const Relation& c : candidates) {
      std::string text = c.str();
      if (text == o.obligation || text == o.simplified) continue;
      if (std::any_of(given.begin(), given.end(), [&](const Relation& g) { return g.str() == text; })) continue;
      dims::Facts more = ctx.facts;
      more.add(c);
      if (more.prove(r)) {
        o.missing = fmt::format("`{}`, from which it follows", text);
        break;
      }
    }
    if (o.missing.empty())
      o.missing = fmt::format("a fact from which it follows, such as `{}` itself", o.simplified);
  }
  explainer->add(std::move(o));
}

Diagnostic& Checker::Impl::unproven(Ctx& ctx, SourceRange at, const Relation& r,
                                    const std::string& why) {
  Diagnostic& d = diags.error(at, fmt::format("cannot prove `{}`: {}", r.str(), why));
  Relation simplified{ctx.facts.simplify(r.lhs), r.op, ctx.facts.simplify(r.rhs)};
  if (simplified.str() != r.str())
    Diagnostics::note(d, {}, fmt::format("after simplification: `{}`", simplified.str()));
  if (ctx.where.empty())
    Diagnostics::note(d, {}, "no where clause is in scope");
  else
    Diagnostics::note(d, {}, fmt::format("where clause in scope: {}", fmt::join(ctx.where, ", ")));
  std::set<std::string> vars;
  r.lhs.collectVars(vars);
  r.rhs.collectVars(vars);
  // No help for facts over loop variables, or that can never hold.
  bool overGenerics = !vars.empty() && !ctx.facts.simplify(r.lhs - r.rhs).isConstant();
  for (const auto& v : vars) overGenerics &= ctx.generics.count(v) > 0;
  if (!ctx.concrete && !ctx.what.empty() && overGenerics)
    Diagnostics::note(d, {}, fmt::format("help: if it holds, state `{}` in the where clause of {}",
                                         r.str(), ctx.what));
  addContextNotes(ctx, d);
  return d;
}

std::optional<DType> Checker::Impl::unifyDTypes(const DType& a, const DType& b) {
  if (a.kind == DType::Error || b.kind == DType::Error) return DType::error();
  if (a == b) return a;
  if (a.isWeak() && b.isWeak()) {
    if (a.kind == DType::WeakFloat || b.kind == DType::WeakFloat) {
      if (a.kind == DType::WeakBool || b.kind == DType::WeakBool) return std::nullopt;
      return DType::weakFloat();
    }
    return a.kind == b.kind ? std::optional(a) : std::nullopt;
  }
  const DType& weak = a.isWeak() ? a : b;
  const DType& strong = a.isWeak() ? b : a;
  if (!weak.isWeak()) return std::nullopt;
  if (weak.kind == DType::WeakFloat && strong.floatLike()) return strong;
  if (weak.kind == DType::WeakInt && (strong.intLike() || strong.floatLike())) return strong;
  if (weak.kind == DType::WeakBool && strong.boolLike()) return strong;
  return std::nullopt;
}

std::optional<Shape> Checker::Impl::broadcast(Ctx& ctx, const Shape& a, const Shape& b,
                                              std::string& why, SourceRange at, Why need) {
  // Align from the right while both sides have plain dimensions.
  Shape suffix;
  size_t i = a.size(), j = b.size();
  while (i > 0 && j > 0 && !a[i - 1].isPack() && !b[j - 1].isPack()) {
    const Expr& x = a[i - 1].expr;
    const Expr& y = b[j - 1].expr;
    auto dimWhy = [&] {
      return fmt::format("{}: dimension `{}` against `{}` (a dimension of 1 broadcasts; others must be equal)",
                         need(), x.str(), y.str());
    };
    bool one = (x.isConstant() && x.constantValue() == 1) || (y.isConstant() && y.constantValue() == 1);
    // Equal or 1: not equal is an obligation only where neither side is 1.
    bool equal = x == y || (one ? dimsEqual(ctx, x, y) : require(ctx, {x, Rel::Eq, y}, at, dimWhy));
    if (equal && x != y && one && explainer) recordObligation(ctx, {x, Rel::Eq, y}, at, dimWhy, true);
    if (equal) {
      suffix.push_back(a[i - 1]);
    } else if (x.isConstant() && x.constantValue() == 1) {
      suffix.push_back(b[j - 1]);
    } else if (y.isConstant() && y.constantValue() == 1) {
      suffix.push_back(a[i - 1]);
    } else {
      why = fmt::format("dimension `{}` against `{}` (neither is 1, and they cannot be proven "
                        "equal)",
                        x.str(), y.str());
      return std::nullopt;
    }
    --i;
    --j;
  }
  Shape prefix;
  if (i == 0) {
    prefix.assign(b.begin(), b.begin() + j);
  } else if (j == 0) {
    prefix.assign(a.begin(), a.begin() + i);
  } else {
    Shape pa(a.begin(), a.begin() + i), pb(b.begin(), b.begin() + j);
    bool same = pa.size() == pb.size();
    for (size_t k = 0; same && k < pa.size(); ++k)
      same = pa[k].isPack() == pb[k].isPack() &&
             (pa[k].isPack() ? pa[k].pack == pb[k].pack
                             : requireEqual(ctx, pa[k].expr, pb[k].expr, at, [&] {
                                 return fmt::format("{}: leading dimension {} (before a dimension pack)", need(), k);
                               }));
    if (!same) {
      why = fmt::format("leading dimensions `[{}]` against `[{}]`", str(pa), str(pb));
      return std::nullopt;
    }
    prefix = pa;
  }
  prefix.insert(prefix.end(), suffix.rbegin(), suffix.rend());
  return prefix;
}

std::string Checker::Impl::mismatch(Ctx& ctx, const Type& actual, const Type& expected, SourceRange at,
                                   Why need) {
  if (actual.isError() || expected.isError()) return {};
  if (expected.kind == Type::Option && actual.kind == Type::Option)
    return mismatch(ctx, actual.elems[0], expected.elems[0], at, need);
  if (expected.kind == Type::Option && actual.kind == Type::None) return {};
  if (expected.kind != actual.kind) return "different kinds of value";
  switch (expected.kind) {
    case Type::Tensor: {
      auto d = unifyDTypes(actual.dtype, expected.dtype);
      if (!d || (!actual.dtype.isWeak() && !(actual.dtype == expected.dtype)))
        return fmt::format("element type `{}` is not `{}`", actual.dtype.str(),
                           expected.dtype.str());
      if (actual.shape.size() != expected.shape.size())
        return fmt::format("rank {} is not {}", actual.shape.size(), expected.shape.size());
      for (size_t k = 0; k < actual.shape.size(); ++k) {
        const Dim& x = actual.shape[k];
        const Dim& y = expected.shape[k];
        if (x.isPack() != y.isPack() || (x.isPack() && x.pack != y.pack))
          return fmt::format("dimension {} differs", k);
        if (!x.isPack() && !requireEqual(ctx, x.expr, y.expr, at, [&] {
              return fmt::format("{} (dimension {})", need(), k);
            }))
          return fmt::format("dimension {}: cannot prove `{} == {}`", k, x.expr.str(),
                             y.expr.str());
      }
      return {};
    }
    case Type::Tuple: {
      if (actual.elems.size() != expected.elems.size())
        return fmt::format("{} elements, not {}", actual.elems.size(), expected.elems.size());
      for (size_t k = 0; k < actual.elems.size(); ++k) {
        std::string why = mismatch(ctx, actual.elems[k], expected.elems[k], at,
                                   [&] { return fmt::format("{} (element {})", need(), k); });
        if (!why.empty()) return fmt::format("element {}: {}", k, why);
      }
      return {};
    }
    default:
      return actual.str() == expected.str() ? "" : "different types";
  }
}

Type Checker::Impl::finalizeWeak(const Type& t) {
  if (t.kind != Type::Tensor || !t.dtype.isWeak()) return t;
  Type out = t;
  out.dtype = DType::concrete(t.dtype.kind == DType::WeakFloat ? Scalar::F32
                              : t.dtype.kind == DType::WeakBool ? Scalar::Bool
                                                                : Scalar::I64);
  return out;
}

}  // namespace linnet::sema
