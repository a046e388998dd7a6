// The elaborated program: the instance tree, entries, and the small
// helpers every part of the elaborator shares.
#include "elaborate/program.h"

#include <fmt/format.h>

#include "elaborate/builder.h"

namespace linnet::elab {

using namespace syntax;

std::string TensorType::str() const { return fmt::format("{}[{}]", sema::name(dtype), fmt::join(shape, ", ")); }

std::string Type::key() const {
  switch (kind) {
    case Tensor: return tensor.str() + (tensor.weak ? "~" : "");
    case None: return "none";
    case Some: return "some(" + elems[0].key() + ")";
    case Tuple: {
      std::string s = "(";
      for (const Type& e : elems) s += e.key() + ",";
      return s + ")";
    }
    case Block: return fmt::format("{}<{}>", block->block->name.name, block->env.key());
    case Array: return fmt::format("[{}]", array);
  }
  return "?";
}

const Member* Instance::param(const std::string& n) const {
  for (const Member& m : params)
    if (m.name == n) return &m;
  return nullptr;
}

const Member* Instance::state(const std::string& n) const {
  for (const Member& m : states)
    if (m.name == n) return &m;
  return nullptr;
}

bool swapsLastTwoAxes(const Expr& e) {
  if (e.kind != ExprKind::Permute) return false;
  size_t n = e.ints.size();
  if (n < 2) return false;
  for (size_t i = 0; i + 2 < n; ++i)
    if (e.ints[i] != static_cast<int64_t>(i)) return false;
  return e.ints[n - 2] == static_cast<int64_t>(n - 1) && e.ints[n - 1] == static_cast<int64_t>(n - 2);
}

// ------------------------------------------------------------ the builder's helpers

StaticInts Program::Builder::staticsOf(Frame& f) {
  return [this, &f](const std::string& n) -> std::optional<int64_t> {
    if (Value* v = lookup(f, n); v && v->staticInt) return v->staticInt;
    return std::nullopt;
  };
}
int64_t Program::Builder::dim(Frame& f, const syntax::Expr& e) {
  return guarded([&] { return evalDim(f.env, staticsOf(f), e); });
}
std::vector<int64_t> Program::Builder::shapeList(Frame& f, const std::vector<ExprPtr>& list) {
  return guarded([&] { return evalShape(f.env, staticsOf(f), list); });
}
Scalar Program::Builder::dtypeOf(Frame& f, const std::string& n, SourceRange at) {
  return guarded([&] { return evalDType(f.env, n, at); });
}
Scalar Program::Builder::dtypeOf(Frame& f, const syntax::Expr& e) {
  return guarded([&] { return evalDType(f.env, e); });
}
Scalar Program::Builder::declaredDType(Frame& f, const TypeExpr& t) {
  return dtypeOf(f, t.elem ? t.elem->name.name : t.name.name, t.range);
}
TensorType Program::Builder::declared(Frame& f, const ParamDecl& p) {
  const TypeExpr& t = *p.type;
  TensorType s;
  if (t.kind == TypeKind::Tensor) {
    s.dtype = dtypeOf(f, t.elem->name.name, t.range);
    for (const ExprPtr& d : t.dims) {
      if (d->kind == syntax::ExprKind::Spread) {
        auto it = f.env.packs.find(static_cast<const SpreadExpr&>(*d).pack.name);
        if (it == f.env.packs.end()) fail(d->range, "a dimension pack without a value");
        s.shape.insert(s.shape.end(), it->second.begin(), it->second.end());
      } else {
        s.shape.push_back(dim(f, *d));
      }
    }
  } else {
    s.dtype = dtypeOf(f, t.name.name, t.range);
  }
  return s;
}

Expr* Program::Builder::node(Frame& f, ExprKind kind, Type type, SourceRange at,
                             std::vector<const Expr*> operands) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->type = std::move(type);
  e->range = at;
  e->operands = std::move(operands);
  f.fn->exprs.push_back(std::move(e));
  return f.fn->exprs.back().get();
}

Stmt* Program::Builder::stmt(Frame& f, StmtKind kind, SourceRange at) {
  auto s = std::make_unique<Stmt>();
  s->kind = kind;
  s->range = at;
  f.fn->stmts.push_back(std::move(s));
  f.out->push_back(f.fn->stmts.back().get());
  return f.fn->stmts.back().get();
}

SlotId Program::Builder::newSlot(Frame& f, const std::string& name, Type type, bool mutableVar) {
  f.fn->slots.push_back(Slot{name, std::move(type), mutableVar});
  return static_cast<SlotId>(f.fn->slots.size() - 1);
}

Value Program::Builder::local(Frame& f, SlotId slot, SourceRange at) {
  Expr* e = node(f, ExprKind::Local, f.fn->slots[slot].type, at);
  e->slot = slot;
  return tensorValue(e);
}

Value Program::Builder::constantInt(Frame& f, Scalar dt, int64_t v, bool weak, SourceRange at) {
  Expr* e = node(f, ExprKind::Constant, Type::of({dt, {}, weak}), at);
  e->integer = v;
  e->number = static_cast<double>(v);
  return tensorValue(e);
}

Value Program::Builder::constantFloat(Frame& f, Scalar dt, double v, bool weak, SourceRange at) {
  Expr* e = node(f, ExprKind::Constant, Type::of({dt, {}, weak}), at);
  e->number = v;
  return tensorValue(e);
}

Value Program::Builder::cast(Frame& f, const Value& x, Scalar to, SourceRange at) {
  if (x.t().dtype == to) return finalize(x);
  return tensorValue(node(f, ExprKind::Cast, Type::of({to, x.t().shape, false}), at, {x.expr}));
}

Value Program::Builder::broadcastTo(Frame& f, const Value& x, const std::vector<int64_t>& shape, SourceRange at) {
  if (x.t().shape == shape) return x;
  Value v = tensorValue(node(f, ExprKind::Broadcast, Type::of({x.t().dtype, shape, x.t().weak}), at, {x.expr}));
  return v;
}

Value Program::Builder::finalize(Value v) {
  v.type.tensor.weak = false;
  return v;
}

std::vector<int64_t> Program::Builder::broadcastShapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                                                       SourceRange at) const {
  if (auto out = broadcast(a, b)) return *out;
  fail(at, fmt::format("shapes [{}] and [{}] do not broadcast", fmt::join(a, ", "), fmt::join(b, ", ")));
}

Value* Program::Builder::lookup(Frame& f, const std::string& n) {
  for (auto it = f.scopes.rbegin(); it != f.scopes.rend(); ++it)
    if (auto s = it->find(n); s != it->end()) return &s->second;
  return nullptr;
}

// ------------------------------------------------------------ the instance tree

std::unique_ptr<Instance> Program::Builder::instantiate(const BlockDecl* block, const sema::Module* module, Env env,
                                                        std::string path) {
  auto inst = std::make_unique<Instance>();
  inst->block = block;
  inst->module = module;
  inst->env = std::move(env);
  inst->path = std::move(path);
  inst->id = static_cast<int>(program.instances_.size());
  program.instances_.push_back(inst.get());
  Frame f;
  f.env = inst->env;
  f.module = module;
  for (const MemberDecl& m : block->members) {
    if (m.kind != MemberKind::Sub) {
      Member member{m.name.name, {dtypeOf(f, m.type->elem->name.name, m.type->elem->range), shapeList(f, m.type->dims)}};
      (m.kind == MemberKind::Param ? inst->params : inst->states).push_back(std::move(member));
      continue;
    }
    const TypeExpr* t = m.type.get();
    int64_t count = -1;
    if (t->kind == TypeKind::Array) {
      count = dim(f, *t->count);
      t = t->elem.get();
    }
    const sema::Item* item = source.lookup(*module, t->name.name);
    if (!item || item->kind != sema::Item::Block) fail(m.range, fmt::format("`{}` is not a block", t->name.name));
    const BlockDecl* callee = item->block;
    Env args;
    for (size_t i = 0; i < callee->generics.size(); ++i) {
      const GenericParam& g = callee->generics[i];
      const syntax::Expr* arg = i < t->generics.size() ? t->generics[i].get() : g.defaultValue.get();
      Frame& in = i < t->generics.size() ? f : empty;
      if (g.kind.name == "Dim") args.dims[g.name.name] = dim(in, *arg);
      else args.dtypes[g.name.name] = dtypeOf(in, *arg);
    }
    std::string memberPath = inst->pathOf(m.name.name);
    if (count < 0) {
      inst->subs[m.name.name] = instantiate(callee, item->module, args, memberPath);
    } else {
      auto& list = inst->arrays[m.name.name];
      for (int64_t k = 0; k < count; ++k)
        list.push_back(instantiate(callee, item->module, args, fmt::format("{}.{}", memberPath, k)));
    }
  }
  return inst;
}

Program::Program(const sema::Program& program) : source_(program) {
  const sema::Package& pkg = program.package();
  const sema::Item* item = program.lookup(*program.root(), pkg.rootBlock);
  if (!item || item->kind != sema::Item::Block) throw Error(fmt::format("{}: no root block `{}`", pkg.dir, pkg.rootBlock));
  Builder b(*this);
  Env env;
  for (const GenericParam& g : item->block->generics) {
    auto it = pkg.generics.find(g.name.name);
    if (g.kind.name == "Dim")
      env.dims[g.name.name] = it != pkg.generics.end() && it->second.number ? *it->second.number : b.dim(b.empty, *g.defaultValue);
    else
      env.dtypes[g.name.name] = it != pkg.generics.end() ? *sema::scalarNamed(it->second.dtype) : b.dtypeOf(b.empty, *g.defaultValue);
  }
  root_ = b.instantiate(item->block, item->module, env, "");
}

Program::~Program() = default;

const FnInstance& Program::adopt(std::unique_ptr<FnInstance> fn) {
  std::string key = fn->key;
  auto it = fns_.emplace(key, std::move(fn)).first;  // an equal key derives an equal function: keep the first
  return *it->second;
}

std::string Program::where(SourceRange r) const {
  if (!r.valid()) return "<unknown>";
  const SourceFile& f = source_.sources().file(r.file);
  LineCol lc = f.lineCol(r.begin);
  return fmt::format("{}:{}:{}", f.path(), lc.line, lc.col);
}

const FnDecl& Program::entryDecl(const std::string& name) const {
  for (const auto& fn : root_->block->fns)
    if (fn->name.name == name && fn->isEntry) return *fn;
  std::vector<std::string> entries;
  for (const auto& fn : root_->block->fns)
    if (fn->isEntry) entries.push_back(fn->name.name);
  throw Error(fmt::format("`{}` is not an entry of `{}` (its entries: {})", name, root_->block->name.name,
                          fmt::join(entries, ", ")));
}

EntryInstance Program::entry(const std::string& name, const std::vector<TensorType>& args,
                             const std::map<std::string, int64_t>& generics) {
  const FnDecl& fn = entryDecl(name);
  if (args.size() != fn.params.size())
    throw Error(fmt::format("entry `{}` takes {} arguments, {} were given", name, fn.params.size(), args.size()));
  std::string key = name;
  for (const TensorType& a : args) key += "|" + a.str() + (a.weak ? "~" : "");
  for (const auto& [n, v] : generics) key += fmt::format("|{}={}", n, v);
  if (auto it = entries_.find(key); it != entries_.end()) return it->second;

  Builder b(*this);
  Frame none;
  std::vector<Value> values;
  for (const TensorType& a : args) values.push_back(Value{nullptr, Type::of(a), std::nullopt});
  Env env = b.bindCallEnv(none, fn, root_->env, nullptr, values, generics);
  EntryInstance out;
  for (const GenericParam& g : fn.generics)
    if (auto it = env.dims.find(g.name.name); it != env.dims.end()) out.generics[g.name.name] = it->second;
  // Each argument must have its declared type with the generics bound; a
  // literal fits a parameter of its kind.
  Frame probe;
  probe.env = env;
  std::vector<std::string> problems;
  for (size_t k = 0; k < fn.params.size(); ++k) {
    TensorType want = b.declared(probe, fn.params[k]);
    bool literalFits = args[k].weak && (sema::isFloat(want.dtype) || !sema::isFloat(args[k].dtype));
    bool floatForInt = args[k].weak && sema::isFloat(args[k].dtype) && !sema::isFloat(want.dtype);
    if (want.shape == args[k].shape && floatForInt)
      problems.push_back(fmt::format("argument `{}` must be {}, not a number with a fraction or exponent (a {} "
                                     "literal); pass an integer",
                                     fn.params[k].name.name, want.str(), args[k].str()));
    else if (want.shape != args[k].shape || (want.dtype != args[k].dtype && !literalFits))
      problems.push_back(fmt::format("argument `{}` must be {}, not {}", fn.params[k].name.name, want.str(),
                                     args[k].str()));
    out.inputs.push_back(want);
  }
  for (std::string& w : b.guarded([&] { return failedWhereClauses(fn, env, source_.sources()); }))
    problems.push_back(std::move(w));
  if (!problems.empty()) throw Error(fmt::format("entry `{}`: {}", name, fmt::join(problems, "; ")));
  // The arguments as the entry's parameters receive them.
  std::vector<Value> params;
  for (const TensorType& t : out.inputs) params.push_back(Value{nullptr, Type::of(t), std::nullopt});
  out.fn = b.instantiateFn(fn, root_->module, root_.get(), env, params);
  entries_[key] = out;
  return out;
}

std::vector<TensorType> Program::entryParams(const std::string& name, const std::map<std::string, int64_t>& generics) const {
  const FnDecl& fn = entryDecl(name);
  Builder b(const_cast<Program&>(*this));
  Frame f;
  f.env = root_->env;
  for (const auto& [n, v] : generics) f.env.dims[n] = v;
  for (const GenericParam& g : fn.generics)
    if (g.kind.name == "Dim" && !f.env.dims.count(g.name.name)) {
      if (!g.defaultValue)
        throw Error(fmt::format("entry `{}` needs a value for its generic `{}` (--generic {}=N)", name, g.name.name,
                                g.name.name));
      f.env.dims[g.name.name] = b.dim(b.empty, *g.defaultValue);
    }
  std::vector<TensorType> out;
  for (const ParamDecl& p : fn.params) out.push_back(b.declared(f, p));
  return out;
}

}  // namespace linnet::elab
