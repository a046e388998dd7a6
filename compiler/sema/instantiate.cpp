// Concrete instantiation: the root block with the package's generics, its
// subs recursively, and every fn that becomes concrete through a call,
// checked again with numbers. Collects the summary (parameters, state).
#include <fmt/format.h>

#include <algorithm>

#include "sema/checker_impl.h"

namespace linnet::sema {

using namespace syntax;
using dims::Expr;
using dims::Rel;
using dims::Relation;

bool Checker::Impl::bindGenericsFromPackage(const BlockDecl& block,
                                            const std::map<std::string, GenericValue>& values,
                                            Bindings& out, SourceRange at) {
  bool ok = true;
  Ctx empty;
  for (const auto& [name, value] : values) {
    bool known = false;
    for (const auto& g : block.generics) known |= g.name.name == name;
    if (!known) {
      std::vector<std::string> names;
      for (const auto& g : block.generics) names.push_back(g.name.name);
      diags.error(at, fmt::format("{}: `{}` is not a generic parameter of `{}` (it has {})",
                                  value.origin, name, block.name.name, fmt::join(names, ", ")));
      ok = false;
    }
  }
  for (const auto& g : block.generics) {
    const std::string& n = g.name.name;
    auto it = values.find(n);
    if (g.kind.name == "Dim") {
      if (it != values.end()) {
        if (!it->second.number || *it->second.number < 0) {
          diags.error(at, fmt::format("{}: `{}` is a dimension of `{}` and needs a non-negative "
                                      "integer, not `{}`",
                                      it->second.origin, n, block.name.name,
                                      it->second.number ? std::to_string(*it->second.number)
                                                        : it->second.dtype));
          ok = false;
          continue;
        }
        out.dims[n] = Expr::constant(*it->second.number);
      } else if (g.defaultValue) {
        if (auto v = evalDim(empty, *g.defaultValue)) out.dims[n] = *v;
      } else {
        diags.error(at, fmt::format("generic `{}` of `{}` has no value: set it in nest.toml "
                                    "[generics] or with --set {}=...",
                                    n, block.name.name, n));
        ok = false;
      }
    } else if (g.kind.name == "Dims") {
      diags.error(at, fmt::format("`{}` is a `Dims` generic; a root block cannot have one", n));
      ok = false;
    } else {
      std::optional<DType> d;
      if (it != values.end()) {
        auto s = scalarNamed(it->second.dtype);
        bool fits = s && (g.kind.name == "DType" || (g.kind.name == "Float" && isFloat(*s)) ||
                          (g.kind.name == "Int" && isInt(*s)));
        if (!fits) {
          diags.error(at, fmt::format("{}: `{}` of `{}` is a {} generic: give {}, not `{}`",
                                      it->second.origin, n, block.name.name, g.kind.name,
                                      g.kind.name == "Float"  ? "f32, bf16 or f16"
                                      : g.kind.name == "Int" ? "i32 or i64"
                                                             : "an element type",
                                      it->second.number ? std::to_string(*it->second.number)
                                                        : it->second.dtype));
          ok = false;
          continue;
        }
        d = DType::concrete(*s);
      } else if (g.defaultValue) {
        d = evalDType(empty, *g.defaultValue);
      }
      if (!d) {
        diags.error(at, fmt::format("generic `{}` of `{}` has no value: set it in nest.toml "
                                    "[generics] or with --set {}=...",
                                    n, block.name.name, n));
        ok = false;
        continue;
      }
      out.dtypes[n] = *d;
    }
  }
  return ok;
}

// `Heads = 30, KvHeads = 8`: the values a relation's generics take.
static std::string valuesOf(const Relation& r, const Bindings& b) {
  std::set<std::string> vars;
  r.lhs.collectVars(vars);
  r.rhs.collectVars(vars);
  std::vector<std::string> parts;
  for (const auto& v : vars)
    if (auto it = b.dims.find(v); it != b.dims.end())
      parts.push_back(fmt::format("{} = {}", v, it->second.str()));
  return fmt::format("{}", fmt::join(parts, ", "));
}

static std::vector<int64_t> numbers(const Shape& shape) {
  std::vector<int64_t> out;
  for (const Dim& d : shape) out.push_back(d.isPack() || !d.expr.isConstant() ? -1 : d.expr.constantValue());
  return out;
}

void Checker::Impl::instantiateBlock(const BlockSig& sig, const Bindings& b,
                                     const std::vector<std::string>& chain,
                                     const std::string& path, Summary* summary) {
  if (std::find(activeBlocks.begin(), activeBlocks.end(), sig.block) != activeBlocks.end())
    return;  // a block containing itself was reported with the definitions
  activeBlocks.push_back(sig.block);
  struct Pop {
    std::vector<const BlockDecl*>& v;
    ~Pop() { v.pop_back(); }
  } pop{activeBlocks};
  std::string key = fmt::format("block {} {}", static_cast<const void*>(sig.block), b.key());
  bool firstTime = concreteDone.insert(key).second;
  if (firstTime) ++concreteBlocks;
  Ctx ctx;
  ctx.module = sig.module;
  ctx.block = &sig;
  ctx.bindings = b;
  ctx.concrete = true;
  ctx.chain = chain;
  for (const auto& g : sig.block->generics) ctx.generics[g.name.name] = g.kind.name;
  if (firstTime) {
    dims::Facts none;
    for (size_t i = 0; i < sig.where.size(); ++i) {
      Relation r;
      try {
        r = Relation{sig.where[i].lhs.substitute(b.dims), sig.where[i].op,
                     sig.where[i].rhs.substitute(b.dims)};
      } catch (const dims::DimOverflow& o) {
        Diagnostic& d = diags.error(sig.whereRanges[i], overflowMessage(o));
        addContextNotes(ctx, d);
        return;
      }
      if (!none.prove(r)) {
        std::string message = fmt::format("the where clause of `{}` does not hold: `{}` is `{}`, which is false "
                                          "for {}",
                                          sig.block->name.name, sig.where[i].str(), r.str(),
                                          valuesOf(sig.where[i], b));
        if (explainer) {
          Obligation o;
          o.at = sig.whereRanges[i];
          o.definition = definitionOf(ctx);
          o.requirement = fmt::format("the where clause of block `{}`, for its generics' values", sig.block->name.name);
          o.obligation = sig.where[i].str();
          o.simplified = r.str();
          o.concrete = true;
          o.context = ctx.chain;
          o.message = message;
          o.missing = fmt::format("nothing: it is false for {}", valuesOf(sig.where[i], b));
          explainer->add(std::move(o));
        }
        Diagnostic& d = diags.error(sig.whereRanges[i], message);
        addContextNotes(ctx, d);
        return;
      }
      addFact(ctx, r, [&] {
        return FactOrigin{fmt::format("where clause of block `{}`, for {}", sig.block->name.name,
                                      valuesOf(sig.where[i], b)),
                          sig.whereRanges[i]};
      });
    }
  }
  for (const MemberDecl& mem : sig.block->members) {
    try {
      instantiateMember(sig, b, chain, path, summary, mem, ctx);
    } catch (const dims::DimOverflow& o) {
      Diagnostic& d = diags.error(mem.range, overflowMessage(o));
      addContextNotes(ctx, d);
    }
  }
}

// The most elements an array of sub-blocks may have at instantiation.
constexpr int64_t kMaxSubArray = 65536;

// The sizes of a parameter or state tensor, checked: `count *= x` in plain
// int64 would wrap (undefined behaviour) for a large enough shape.
static int64_t checkedProduct(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) throw dims::DimOverflow(a, '*', b);
  return r;
}
static int64_t checkedSum(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) throw dims::DimOverflow(a, '+', b);
  return r;
}

// One member of a block instance: a sub is instantiated, a param or state
// counted into the summary.
void Checker::Impl::instantiateMember(const BlockSig& sig, const Bindings& b,
                                      const std::vector<std::string>& chain, const std::string& path,
                                      Summary* summary, const MemberDecl& mem, Ctx& ctx) {
  auto it = sig.members.find(mem.name.name);
  if (it == sig.members.end() || it->second.decl != &mem) return;
  Type t = substitute(it->second.type, b);
  std::string memberPath = path.empty() ? mem.name.name : path + "." + mem.name.name;
  if (t.isError()) return;
  if (mem.kind == MemberKind::Sub) {
    const BlockSig& callee = blockSig(t.block, program.moduleOf(t.block));
    Bindings args;
    args.dims = t.blockDims;
    args.dtypes = t.blockDTypes;
    if (!args.concrete()) return;
    std::vector<std::string> next = chain;
    next.push_back(fmt::format("in sub `{}`: {}", memberPath, Type(t).str()));
    if (t.kind == Type::Block) {
      instantiateBlock(callee, args, next, memberPath, summary);
    } else {
      int64_t n = t.count.isConstant() ? t.count.constantValue() : 0;
      // Each element is instantiated (and summed into the summary): a
      // length like 10^12 would run for hours instead of failing.
      if (n > kMaxSubArray) {
        Diagnostic& d = diags.error(
            mem.range, fmt::format("the array of sub-blocks `{}` has {} elements; at most {} are "
                                   "allowed: give a smaller length",
                                   memberPath, n, kMaxSubArray));
        addContextNotes(ctx, d);
        return;
      }
      for (int64_t i = 0; i < n; ++i)
        instantiateBlock(callee, args, next, fmt::format("{}.{}", memberPath, i), summary);
    }
    return;
  }
  if (summary && t.dtype.kind == DType::Concrete) {
    ParamInfo p{memberPath, numbers(t.shape), t.dtype.scalar};
    int64_t count = 1;
    for (int64_t x : p.shape) count = checkedProduct(count, x);
    int64_t bytes = checkedProduct(count, byteSize(p.dtype));
    if (mem.kind == MemberKind::Param) {
      summary->paramCount = checkedSum(summary->paramCount, count);
      summary->paramBytes = checkedSum(summary->paramBytes, bytes);
      summary->params.push_back(std::move(p));
    } else {
      summary->stateBytes = checkedSum(summary->stateBytes, bytes);
      summary->states.push_back(std::move(p));
    }
  }
}

void Checker::Impl::checkFnInstance(const Signature& sig, const Bindings& b,
                                    std::vector<std::string> chain) {
  std::string key = fmt::format("fn {} {}", static_cast<const void*>(sig.fn), b.key());
  if (!concreteDone.insert(key).second) return;
  if (chain.size() > 64) return;  // the definitions were checked symbolically already
  const BlockSig* block = sig.block ? &blockSig(sig.block, sig.module) : nullptr;
  Ctx ctx;
  ctx.module = sig.module;
  ctx.block = block;
  ctx.bindings = b;
  ctx.concrete = true;
  ctx.chain = std::move(chain);
  if (block)
    for (const auto& g : block->block->generics) ctx.generics[g.name.name] = g.kind.name;
  for (const auto& g : sig.fn->generics) ctx.generics[g.name.name] = g.kind.name;
  checkFnBody(ctx, *sig.fn);
}

std::optional<Summary> Checker::instantiateRoot() {
  Impl& I = *impl_;
  const Package& pkg = I.program.package();
  if (pkg.rootBlock.empty() || !I.program.root()) return std::nullopt;
  const Item* item = I.program.lookup(*I.program.root(), pkg.rootBlock);
  if (!item || item->kind != Item::Block) {
    I.diags.error({}, fmt::format("{}/nest.toml: [source] root `{}` is not a block of module `{}`",
                                  pkg.dir, pkg.rootBlock, I.program.root()->name));
    return std::nullopt;
  }
  const BlockSig& sig = I.blockSig(item->block, item->module);
  if (!sig.ok) return std::nullopt;
  Bindings b;
  if (!I.bindGenericsFromPackage(*item->block, pkg.generics, b, {})) return std::nullopt;

  Summary summary;
  std::vector<std::string> args;
  for (const auto& g : item->block->generics) {
    const std::string& n = g.name.name;
    args.push_back(b.dims.count(n) ? b.dims.at(n).str() : b.dtypes.at(n).str());
  }
  summary.root = fmt::format("{}<{}>", pkg.rootBlock, fmt::join(args, ", "));
  std::vector<std::string> chain = {fmt::format("in the instantiation {}", summary.root)};
  size_t errorsBefore = I.diags.errorCount();
  I.instantiateBlock(sig, b, chain, "", &summary);
  if (I.diags.errorCount() != errorsBefore) return std::nullopt;

  // Every fn of the root block, its own generics from [check] where given.
  for (const auto& fn : item->block->fns) {
    const Signature& fs = I.signature(fn.get(), &sig, item->module);
    if (!fs.ok) continue;
    Ctx ctx;
    ctx.module = item->module;
    ctx.block = &sig;
    ctx.bindings = b;
    ctx.concrete = true;
    ctx.chain = chain;
    ctx.chain.push_back(fmt::format("in `{}`", fn->name.name));
    for (const auto& g : item->block->generics) ctx.generics[g.name.name] = g.kind.name;
    for (const auto& g : fn->generics) {
      ctx.generics[g.name.name] = g.kind.name;
      auto it = pkg.check.find(g.name.name);
      if (g.kind.name == "Dim") {
        ctx.bindings.dims[g.name.name] =
            it != pkg.check.end() && it->second.number ? Expr::constant(*it->second.number)
                                                       : Expr::var(g.name.name);
      } else if (g.kind.name == "Dims") {
        ctx.bindings.packs[g.name.name] = Shape{Dim::spread(g.name.name)};
      } else {
        ctx.bindings.dtypes[g.name.name] = DType::generic(g.name.name, g.kind.name);
      }
    }
    dims::Facts facts;
    bool holds = true;
    for (size_t i = 0; i < fs.where.size(); ++i) {
      Relation r{fs.where[i].lhs.substitute(ctx.bindings.dims), fs.where[i].op,
                 fs.where[i].rhs.substitute(ctx.bindings.dims)};
      std::set<std::string> vars;
      r.lhs.collectVars(vars);
      r.rhs.collectVars(vars);
      if (vars.empty() && !facts.prove(r)) {
        Diagnostic& d = I.diags.error(fs.whereRanges[i],
                                      fmt::format("the where clause of `{}` does not hold for "
                                                  "[check]: `{}` is `{}`",
                                                  fn->name.name, fs.where[i].str(), r.str()));
        I.addContextNotes(ctx, d);
        holds = false;
      }
      I.addFact(ctx, r, [&] {
        return FactOrigin{fmt::format("where clause of fn `{}`, with nest.toml's [check] values", fn->name.name),
                          fs.whereRanges[i]};
      });
      ctx.where.push_back(r.str());
    }
    if (!holds) continue;
    I.checkFnBody(ctx, *fn);
    if (fn->isEntry) {
      std::vector<std::string> params;
      for (size_t k = 0; k < fn->params.size(); ++k)
        params.push_back(fmt::format("{}: {}", fn->params[k].name.name,
                                     substitute(fs.params[k], b).str()));
      std::vector<std::string> gens;
      for (const auto& g : fn->generics) gens.push_back(g.name.name);
      summary.entries.push_back(
          {fn->name.name, fmt::format("{}{}({}) -> {}", fn->name.name,
                                      gens.empty() ? "" : "<" + fmt::format("{}", fmt::join(gens, ", ")) + ">",
                                      fmt::join(params, ", "), substitute(fs.result, b).str())});
    }
  }
  summary.blockCount = I.concreteBlocks;
  if (I.diags.errorCount() != errorsBefore) return std::nullopt;
  return summary;
}

}  // namespace linnet::sema
