#include "targets/reference/model.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "syntax/ast.h"

namespace linnet::reference {

using namespace syntax;

namespace {

// A runtime value: a tensor, a tuple, an option, or a sub-block.
struct RValue {
  enum Kind { TensorV, Tuple, None, Some, BlockV, ArrayV } kind = TensorV;
  Tensor t;
  std::vector<RValue> elems;  // Tuple; Some holds elems[0]
  Instance* inst = nullptr;
  std::vector<std::unique_ptr<Instance>>* array = nullptr;
  std::optional<int64_t> staticInt;  // a dimension or a static loop variable
  static RValue of(Tensor t) {
    RValue v;
    v.t = std::move(t);
    return v;
  }
};

struct Slot {
  RValue value;
  bool mutableVar = false;
};

struct Frame {
  Instance* self = nullptr;
  const sema::Module* module = nullptr;
  Env env;
  std::vector<std::map<std::string, Slot>> scopes;
  int gridRank = 0;  // axes of the index grid of enclosing comprehensions and reductions
  std::optional<RValue> result;
};

std::string where(const sema::Program& program, SourceRange r) {
  if (!r.valid()) return "";
  const SourceFile& f = program.sources().file(r.file);
  LineCol lc = f.lineCol(r.begin);
  return fmt::format("{}:{}:{}", f.path(), lc.line, lc.col);
}

}  // namespace

struct Model::Impl {
  const sema::Program& program;
  std::unique_ptr<Instance> root;
  std::map<std::string, Model::Observer> watches;  // Model::watch; usually empty

  explicit Impl(const sema::Program& p) : program(p) {}

  // Reports a `let`-bound tensor to its watch, if there is one.
  void observe(const Ident& name, const RValue& v) {
    if (watches.empty() || v.kind != RValue::TensorV) return;
    if (auto it = watches.find(name.name); it != watches.end()) it->second(v.t, where(program, name.range));
  }

  [[noreturn]] void fail(SourceRange at, const std::string& message) {
    throw EvalError(fmt::format("{}: {}", where(program, at), message));
  }

  // ------------------------------------------------------------ dimensions
  // Generics are evaluated as every backend does (sema/generics.h); a
  // failure becomes this backend's error, with the place.
  template <typename Fn>
  auto guarded(Fn&& fn) -> decltype(fn()) {
    try {
      return fn();
    } catch (const sema::GenericError& e) {
      fail(e.at, e.what());
    }
  }
  sema::StaticInts staticsOf(Frame& f) {
    return [this, &f](const std::string& n) -> std::optional<int64_t> {
      if (Slot* s = lookup(f, n); s && s->value.staticInt) return s->value.staticInt;
      return std::nullopt;
    };
  }
  int64_t dim(Frame& f, const Expr& e) {
    return guarded([&] { return sema::evalDim(f.env, staticsOf(f), e); });
  }
  std::vector<int64_t> shapeList(Frame& f, const std::vector<ExprPtr>& list) {
    return guarded([&] { return sema::evalShape(f.env, staticsOf(f), list); });
  }
  Scalar dtypeOf(Frame& f, const std::string& n, SourceRange at) {
    return guarded([&] { return sema::evalDType(f.env, n, at); });
  }
  Scalar dtypeOf(Frame& f, const Expr& e) {
    return guarded([&] { return sema::evalDType(f.env, e); });
  }

  // ------------------------------------------------------------ the instance tree
  const syntax::BlockDecl* findBlock(const sema::Module& m, const std::string& name,
                                     const sema::Module** where) {
    const sema::Item* item = program.lookup(m, name);
    if (!item || item->kind != sema::Item::Block) return nullptr;
    *where = item->module;
    return item->block;
  }

  std::unique_ptr<Instance> instantiate(const BlockDecl* block, const sema::Module* module, Env env,
                                        std::string path) {
    auto inst = std::make_unique<Instance>();
    inst->block = block;
    inst->module = module;
    inst->env = std::move(env);
    inst->path = std::move(path);
    Frame f;
    f.env = inst->env;
    f.module = module;
    for (const MemberDecl& m : block->members) {
      std::string memberPath = inst->path.empty() ? m.name.name : inst->path + "." + m.name.name;
      if (m.kind != MemberKind::Sub) {
        // Shape and dtype only: the data comes with bind() and resetState(),
        // after the checkpoint has been checked.
        Tensor slot;
        slot.shape = shapeList(f, m.type->dims);
        slot.dtype = dtypeOf(f, m.type->elem->name.name, m.type->elem->range);
        (m.kind == MemberKind::Param ? inst->params : inst->states)[m.name.name] = std::move(slot);
        continue;
      }
      const TypeExpr* t = m.type.get();
      int64_t count = -1;
      if (t->kind == TypeKind::Array) {
        count = dim(f, *t->count);
        t = t->elem.get();
      }
      const sema::Module* calleeModule = nullptr;
      const BlockDecl* callee = findBlock(*module, t->name.name, &calleeModule);
      Env args;
      for (size_t i = 0; i < callee->generics.size(); ++i) {
        const GenericParam& g = callee->generics[i];
        const Expr* arg = i < t->generics.size() ? t->generics[i].get() : g.defaultValue.get();
        Frame& in = i < t->generics.size() ? f : empty_;
        if (g.kind.name == "Dim") args.dims[g.name.name] = dim(in, *arg);
        else args.dtypes[g.name.name] = dtypeOf(in, *arg);
      }
      if (count < 0) {
        inst->subs[m.name.name] = instantiate(callee, calleeModule, args, memberPath);
      } else {
        auto& list = inst->arrays[m.name.name];
        for (int64_t k = 0; k < count; ++k)
          list.push_back(instantiate(callee, calleeModule, args, fmt::format("{}.{}", memberPath, k)));
      }
    }
    return inst;
  }

  template <typename Fn>
  void eachInstance(Instance& inst, Fn fn) {
    fn(inst);
    for (const MemberDecl& m : inst.block->members) {
      if (m.kind != MemberKind::Sub) continue;
      if (auto it = inst.subs.find(m.name.name); it != inst.subs.end()) eachInstance(*it->second, fn);
      if (auto it = inst.arrays.find(m.name.name); it != inst.arrays.end())
        for (auto& x : it->second) eachInstance(*x, fn);
    }
  }

  // ------------------------------------------------------------ scopes
  Slot* lookup(Frame& f, const std::string& n) {
    for (auto it = f.scopes.rbegin(); it != f.scopes.rend(); ++it)
      if (auto s = it->find(n); s != it->end()) return &s->second;
    return nullptr;
  }
  void bindName(Frame& f, const std::string& n, RValue v, bool mut = false) {
    f.scopes.back()[n] = Slot{std::move(v), mut};
  }

  static Tensor finalize(Tensor t) {
    if (!t.weak) return t;
    t.weak = false;
    return t;  // a weak int is stored as i64 and a weak float as f32 already
  }

  // ------------------------------------------------------------ calls
  const FnDecl* methodOf(const Instance& inst, const std::string& name) {
    for (const auto& fn : inst.block->fns)
      if (fn->name.name == name) return fn.get();
    return nullptr;
  }

  RValue callFn(Frame& caller, const FnDecl& fn, Instance* self, const sema::Module* module,
                const CallExpr* call, std::vector<RValue> args,
                const std::map<std::string, int64_t>& given = {}) {
    Frame f;
    f.self = self;
    f.module = module;
    f.scopes.emplace_back();
    std::vector<sema::ArgType> types;
    for (const RValue& a : args) types.push_back({a.kind == RValue::TensorV, a.t.dtype, a.t.weak, a.t.shape});
    f.env = guarded([&] {
      return sema::bindCallGenerics(
          fn, self ? self->env : Env{}, given, call, types, [&](const Expr& e) { return dim(caller, e); },
          [&](const Expr& e) { return dtypeOf(caller, e); });
    });
    if (!call) checkEntryArgs(f, fn, args);
    // Parameters take their declared dtype: a literal argument becomes it.
    for (size_t k = 0; k < fn.params.size(); ++k) {
      RValue v = std::move(args[k]);
      const TypeExpr& t = *fn.params[k].type;
      if (v.kind == RValue::TensorV && v.t.weak) {
        const std::string& dn = t.kind == TypeKind::Tensor ? t.elem->name.name : t.name.name;
        v.t = cast(v.t, dtypeOf(f, dn, t.range));
        v.staticInt.reset();
      }
      bindName(f, fn.params[k].name.name, std::move(v));
    }
    execBody(f, fn.body);
    if (!f.result) return RValue{RValue::Tuple, {}, {}, nullptr, nullptr, {}};
    return std::move(*f.result);
  }

  // An entry's arguments come from outside: each must have its declared
  // type with the generics bound, and the entry's where clause must hold.
  void checkEntryArgs(Frame& f, const FnDecl& fn, const std::vector<RValue>& args) {
    std::vector<std::string> problems;
    for (size_t k = 0; k < fn.params.size(); ++k) {
      const TypeExpr& t = *fn.params[k].type;
      const Tensor& a = args[k].t;
      std::vector<int64_t> shape;
      std::string dtypeName = t.kind == TypeKind::Tensor ? t.elem->name.name : t.name.name;
      if (t.kind == TypeKind::Tensor) {
        for (const ExprPtr& d : t.dims) {
          if (d->kind == ExprKind::Spread) {
            const auto& p = f.env.packs[static_cast<const SpreadExpr&>(*d).pack.name];
            shape.insert(shape.end(), p.begin(), p.end());
          } else {
            shape.push_back(dim(f, *d));
          }
        }
      }
      Tensor want = Tensor::zeros(dtypeOf(f, dtypeName, t.range), shape);
      if (a.shape != want.shape || (a.dtype != want.dtype && !a.weak))
        problems.push_back(fmt::format("argument `{}` must be {}, but it is {}", fn.params[k].name.name,
                                       want.describe(), a.describe()));
    }
    for (std::string& w : guarded([&] { return sema::failedWhereClauses(fn, f.env, program.sources()); }))
      problems.push_back(std::move(w));
    if (!problems.empty())
      throw EvalError(fmt::format("entry `{}`: {}", fn.name.name, fmt::join(problems, "; ")));
  }

  // ------------------------------------------------------------ statements
  void execBody(Frame& f, const StmtList& body) {
    f.scopes.emplace_back();
    for (const StmtPtr& s : body) {
      exec(f, *s);
      if (f.result) break;
    }
    f.scopes.pop_back();
  }

  void exec(Frame& f, const Stmt& s) {
    switch (s.kind) {
      case StmtKind::Let: {
        const auto& l = static_cast<const LetStmt&>(s);
        RValue v = eval(f, *l.value);
        if (v.kind == RValue::TensorV) {
          if (l.type && v.t.weak) v.t = cast(v.t, dtypeOf(f, l.type->elem ? l.type->elem->name.name : l.type->name.name, l.type->range));
          v.t = finalize(std::move(v.t));
        }
        v.staticInt.reset();
        observe(l.name, v);
        bindName(f, l.name.name, std::move(v));
        return;
      }
      case StmtKind::LetTuple: {
        const auto& l = static_cast<const LetTupleStmt&>(s);
        RValue v = eval(f, *l.value);
        for (size_t i = 0; i < l.names.size(); ++i) {
          observe(l.names[i], v.elems.at(i));
          bindName(f, l.names[i].name, v.elems.at(i));
        }
        return;
      }
      case StmtKind::Comprehension: {
        const auto& c = static_cast<const ComprehensionStmt&>(s);
        RValue v = RValue::of(finalize(comprehension(f, c.indices, *c.body, std::nullopt)));
        observe(c.name, v);
        bindName(f, c.name.name, std::move(v));
        return;
      }
      case StmtKind::Var: {
        const auto& v = static_cast<const VarStmt&>(s);
        RValue x = eval(f, *v.value);
        if (v.type && x.kind == RValue::TensorV && x.t.weak) {
          const TypeExpr& t = *v.type;
          x.t = cast(x.t, dtypeOf(f, t.kind == TypeKind::Tensor ? t.elem->name.name : t.name.name, t.range));
        }
        if (x.kind == RValue::TensorV) x.t = finalize(std::move(x.t));
        x.staticInt.reset();
        bindName(f, v.name.name, std::move(x), true);
        return;
      }
      case StmtKind::Assign: {
        const auto& a = static_cast<const AssignStmt&>(s);
        RValue v = eval(f, *a.value);
        if (Slot* slot = lookup(f, a.target.name)) {
          if (v.kind == RValue::TensorV && slot->value.kind == RValue::TensorV &&
              v.t.dtype != slot->value.t.dtype)
            v.t = cast(v.t, slot->value.t.dtype);
          v.staticInt.reset();
          slot->value = std::move(v);
          return;
        }
        Tensor& state = f.self->states.at(a.target.name);
        if (v.t.shape != state.shape)
          fail(a.range, fmt::format("state `{}` is {} but is assigned {}", a.target.name,
                                    state.describe(), v.t.describe()));
        state = v.t.dtype == state.dtype ? finalize(std::move(v.t)) : cast(v.t, state.dtype);
        return;
      }
      case StmtKind::Return: {
        const auto& r = static_cast<const ReturnStmt&>(s);
        f.result = r.value ? eval(f, *r.value) : RValue{RValue::Tuple, {}, {}, nullptr, nullptr, {}};
        if (f.result->kind == RValue::TensorV) f.result->t = finalize(std::move(f.result->t));
        return;
      }
      case StmtKind::Expr:
        eval(f, *static_cast<const ExprStmt&>(s).expr);
        return;
      case StmtKind::StaticFor: {
        const auto& l = static_cast<const StaticForStmt&>(s);
        if (l.iterable) {
          RValue it = eval(f, *l.iterable);
          for (auto& inst : *it.array) {
            f.scopes.emplace_back();
            RValue b;
            b.kind = RValue::BlockV;
            b.inst = inst.get();
            bindName(f, l.var.name, b);
            execBody(f, l.body);
            f.scopes.pop_back();
            if (f.result) return;
          }
        } else {
          int64_t lo = dim(f, *l.lo), hi = dim(f, *l.hi);
          for (int64_t i = lo; i < hi; ++i) {
            f.scopes.emplace_back();
            RValue v = RValue::of(Tensor::scalarI(Scalar::I64, i, true));
            v.staticInt = i;
            bindName(f, l.var.name, v);
            execBody(f, l.body);
            f.scopes.pop_back();
            if (f.result) return;
          }
        }
        return;
      }
      case StmtKind::While: {
        const auto& w = static_cast<const WhileStmt&>(s);
        while (true) {
          RValue c = eval(f, *w.cond);
          if (!c.t.i.at(0)) break;
          execBody(f, w.body);
          if (f.result) return;
        }
        return;
      }
    }
  }

  // ------------------------------------------------------------ comprehensions
  // The extent of index `var` from the first subscript that uses it directly.
  std::optional<int64_t> extentOf(Frame& f, const Expr& e, const std::string& var) {
    if (e.kind == ExprKind::Index) {
      const auto& ix = static_cast<const IndexExpr&>(e);
      for (size_t k = 0; k < ix.items.size(); ++k) {
        const IndexItem& item = ix.items[k];
        if (item.kind == IndexItem::Single && item.index->kind == ExprKind::Name &&
            static_cast<const NameExpr&>(*item.index).name == var) {
          RValue base = eval(f, *ix.base);
          return base.t.shape.at(k);
        }
      }
    }
    std::optional<int64_t> found;
    sema::forEachChild(e, [&](const Expr& c) {
      if (!found) found = extentOf(f, c, var);
    });
    return found;
  }

  // Evaluates `body` over the grid of `names`: the index variables take
  // leading axes ahead of the enclosing grid's, so values of the enclosing
  // grid broadcast against them. With `reduce`, the new axes are reduced.
  Tensor comprehension(Frame& f, const std::vector<Ident>& names, const Expr& body,
                       std::optional<sema::ReduceKind> reduce) {
    std::vector<int64_t> extents;
    for (const Ident& n : names) {
      f.scopes.emplace_back();  // hide an outer variable of the same name while searching
      auto x = extentOf(f, body, n.name);
      f.scopes.pop_back();
      if (!x) fail(n.range, fmt::format("cannot find the range of index `{}`", n.name));
      extents.push_back(*x);
    }
    int m = static_cast<int>(names.size());
    int outer = f.gridRank;
    f.scopes.emplace_back();
    for (int k = 0; k < m; ++k) {
      std::vector<int64_t> shape(m + outer, 1);
      shape[k] = extents[k];
      bindName(f, names[k].name, RValue::of(reshape(iota(Scalar::I64, extents[k]), shape)));
      f.scopes.back()[names[k].name].value.t.weak = true;
    }
    f.gridRank = outer + m;
    RValue v = eval(f, body);
    f.gridRank = outer;
    f.scopes.pop_back();
    std::vector<int64_t> grid = extents;
    grid.insert(grid.end(), outer, 1);
    std::vector<int64_t> full = broadcastShapes(v.t.shape, grid);
    Tensor t = broadcastTo(v.t, full);
    if (reduce) return reduceLeading(*reduce, t, m);
    // A comprehension is a statement: its grid is the whole result.
    return t;
  }

  // ------------------------------------------------------------ expressions
  RValue eval(Frame& f, const Expr& e) {
    switch (e.kind) {
      case ExprKind::IntLiteral: {
        int64_t v = static_cast<const IntLiteralExpr&>(e).value;
        RValue r = RValue::of(Tensor::scalarI(Scalar::I64, v, true));
        r.staticInt = v;
        return r;
      }
      case ExprKind::FloatLiteral:
        return RValue::of(Tensor::scalarF(Scalar::F32, static_cast<const FloatLiteralExpr&>(e).value, true));
      case ExprKind::BoolLiteral:
        return RValue::of(Tensor::scalarI(Scalar::Bool, static_cast<const BoolLiteralExpr&>(e).value));
      case ExprKind::Name: return name(f, static_cast<const NameExpr&>(e));
      case ExprKind::Unary: {
        const auto& u = static_cast<const UnaryExpr&>(e);
        RValue v = eval(f, *u.operand);
        RValue out = RValue::of(unary(sema::unaryKind(u.op), v.t));
        if (v.staticInt) out.staticInt = -*v.staticInt;
        return out;
      }
      case ExprKind::Binary: {
        const auto& b = static_cast<const BinaryExpr&>(e);
        RValue l = eval(f, *b.lhs), r = eval(f, *b.rhs);
        RValue out = RValue::of(binary(sema::binaryKind(b.op), l.t, r.t));
        if (l.staticInt && r.staticInt) {
          switch (b.op) {
            case BinaryOp::Add: out.staticInt = *l.staticInt + *r.staticInt; break;
            case BinaryOp::Sub: out.staticInt = *l.staticInt - *r.staticInt; break;
            case BinaryOp::Mul: out.staticInt = *l.staticInt * *r.staticInt; break;
            case BinaryOp::Div: if (*r.staticInt > 0) out.staticInt = out.t.i[0]; break;
            default: break;
          }
        }
        return out;
      }
      case ExprKind::Tuple: {
        RValue t;
        t.kind = RValue::Tuple;
        for (const auto& x : static_cast<const TupleExpr&>(e).elems) {
          RValue v = eval(f, *x);
          if (v.kind == RValue::TensorV) v.t = finalize(std::move(v.t));
          t.elems.push_back(std::move(v));
        }
        return t;
      }
      case ExprKind::Member: return member(f, static_cast<const MemberExpr&>(e));
      case ExprKind::Index: return index(f, static_cast<const IndexExpr&>(e));
      case ExprKind::Reduce: {
        const auto& r = static_cast<const ReduceExpr&>(e);
        return RValue::of(comprehension(f, r.binders, *r.body, sema::reduceKind(*sema::reducerNamed(r.op.name))));
      }
      case ExprKind::Call: return callExpr(f, static_cast<const CallExpr&>(e));
      default: fail(e.range, "cannot evaluate this expression");
    }
  }

  RValue name(Frame& f, const NameExpr& e) {
    if (e.name == "none") return RValue{RValue::None, {}, {}, nullptr, nullptr, {}};
    if (Slot* s = lookup(f, e.name)) return s->value;
    if (auto it = f.env.dims.find(e.name); it != f.env.dims.end()) {
      RValue v = RValue::of(Tensor::scalarI(Scalar::I64, it->second, true));
      v.staticInt = it->second;
      return v;
    }
    if (f.self) {
      if (auto it = f.self->params.find(e.name); it != f.self->params.end()) return RValue::of(it->second);
      if (auto it = f.self->states.find(e.name); it != f.self->states.end()) return RValue::of(it->second);
      if (auto it = f.self->subs.find(e.name); it != f.self->subs.end()) {
        RValue v;
        v.kind = RValue::BlockV;
        v.inst = it->second.get();
        return v;
      }
      if (auto it = f.self->arrays.find(e.name); it != f.self->arrays.end()) {
        RValue v;
        v.kind = RValue::ArrayV;
        v.array = &it->second;
        return v;
      }
    }
    if (const sema::Item* item = program.lookup(*f.module, e.name); item && item->kind == sema::Item::Const) {
      Frame cf;
      cf.module = item->module;
      cf.scopes.emplace_back();
      RValue v = eval(cf, *item->constant->value);
      Scalar dt = dtypeOf(cf, item->constant->type->name.name, item->constant->type->range);
      v.t = cast(v.t, dt);
      v.staticInt.reset();
      return v;
    }
    fail(e.range, fmt::format("unknown name `{}`", e.name));
  }

  RValue member(Frame& f, const MemberExpr& e) {
    RValue base = eval(f, *e.base);
    Instance* inst = base.inst;
    const std::string& n = e.member.name;
    if (auto it = inst->params.find(n); it != inst->params.end()) return RValue::of(it->second);
    if (auto it = inst->subs.find(n); it != inst->subs.end()) {
      RValue v;
      v.kind = RValue::BlockV;
      v.inst = it->second.get();
      return v;
    }
    fail(e.range, fmt::format("no member `{}`", n));
  }

  RValue index(Frame& f, const IndexExpr& e) {
    Tensor x = eval(f, *e.base).t;
    bool anyGrid = false, anySlice = false;
    std::vector<Tensor> idx;
    std::vector<BasicItem> basic;
    for (size_t k = 0; k < e.items.size(); ++k) {
      const IndexItem& item = e.items[k];
      if (item.kind == IndexItem::Slice) {
        anySlice = true;
        BasicItem b;
        b.slice = true;
        b.lo = item.lo ? *eval(f, *item.lo).staticInt : 0;
        b.hi = item.hi ? *eval(f, *item.hi).staticInt : x.shape[k];
        basic.push_back(b);
        idx.push_back(Tensor::scalarI(Scalar::I64, 0));
        continue;
      }
      Tensor v = eval(f, *item.index).t;
      if (v.rank() > 0) anyGrid = true;
      int64_t s = v.rank() == 0 ? std::clamp<int64_t>(v.asInt(0), 0, std::max<int64_t>(x.shape[k] - 1, 0)) : 0;
      basic.push_back(BasicItem{false, 0, 0, s});
      idx.push_back(std::move(v));
    }
    if (anyGrid && anySlice) fail(e.range, "the reference backend cannot mix slices with index tensors");
    if (anyGrid) return RValue::of(advancedIndex(x, idx));
    return RValue::of(basicIndex(x, basic));
  }

  // ------------------------------------------------------------ calls
  RValue callExpr(Frame& f, const CallExpr& call) {
    if (call.callee->kind == ExprKind::Member) {
      const auto& m = static_cast<const MemberExpr&>(*call.callee);
      RValue base = eval(f, *m.base);
      const FnDecl* fn = methodOf(*base.inst, m.member.name);
      return callFn(f, *fn, base.inst, base.inst->module, &call, args(f, call));
    }
    const std::string& n = static_cast<const NameExpr&>(*call.callee).name;
    if (f.self)
      if (const FnDecl* fn = methodOf(*f.self, n)) return callFn(f, *fn, f.self, f.self->module, &call, args(f, call));
    if (const sema::Item* item = program.lookup(*f.module, n); item && item->kind == sema::Item::Fn)
      return callFn(f, *item->fn, nullptr, item->module, &call, args(f, call));
    if (auto p = sema::primitiveCalled(n)) return builtin(f, call, *p);
    fail(call.range, fmt::format("unknown fn `{}`", n));
  }

  std::vector<RValue> args(Frame& f, const CallExpr& call) {
    std::vector<RValue> out;
    for (const Argument& a : call.args) out.push_back(eval(f, *a.value));
    return out;
  }

  int axisArg(Frame& f, const CallExpr& call, int rank) {
    for (const Argument& a : call.args)
      if (a.name.name == "axis") {
        int64_t k = *eval(f, *a.value).staticInt;
        return static_cast<int>(k < 0 ? k + rank : k);
      }
    fail(call.range, "missing `axis`");
  }
  bool keepdimsArg(const CallExpr& call) {
    for (const Argument& a : call.args)
      if (a.name.name == "keepdims") return static_cast<const BoolLiteralExpr&>(*a.value).value;
    return false;
  }

  RValue builtin(Frame& f, const CallExpr& call, sema::Primitive p) {
    using sema::Primitive;
    std::vector<const Expr*> pos;
    for (const Argument& a : call.args)
      if (a.name.name.empty()) pos.push_back(a.value.get());
    auto arg = [&](size_t k) { return eval(f, *pos.at(k)).t; };
    auto list = [&](size_t k) -> const ListExpr& { return static_cast<const ListExpr&>(*pos.at(k)); };
    switch (sema::info(p).cls) {
      case sema::PrimitiveClass::UnaryMath: return RValue::of(unary(sema::unaryKind(p), arg(0)));
      case sema::PrimitiveClass::BinaryMath:
        return RValue::of(binary(sema::binaryKind(p), arg(0), arg(1)));
      case sema::PrimitiveClass::Reducer: {
        Tensor x = arg(0);
        return RValue::of(reduceAxis(sema::reduceKind(p), x, axisArg(f, call, x.rank()), keepdimsArg(call)));
      }
      case sema::PrimitiveClass::Other: break;
    }
    switch (p) {
      case Primitive::Reshape: return RValue::of(reshape(arg(0), shapeList(f, list(1).elems)));
      case Primitive::Permute: {
        std::vector<int64_t> perm;
        for (const auto& x : list(1).elems) perm.push_back(*eval(f, *x).staticInt);
        return RValue::of(permute(arg(0), perm));
      }
      case Primitive::Concat: {
        std::vector<Tensor> xs;
        for (size_t k = 0; k < pos.size(); ++k) xs.push_back(arg(k));
        Scalar dt = xs[0].dtype;
        for (const Tensor& x : xs)
          if (!x.weak) dt = x.dtype;
        for (Tensor& x : xs) x = cast(x, dt);
        return RValue::of(concat(xs, axisArg(f, call, xs[0].rank())));
      }
      case Primitive::Iota:
        return RValue::of(iota(dtypeOf(f, *call.generics[0]), *eval(f, *pos[0]).staticInt));
      case Primitive::Fill:
        return RValue::of(fill(dtypeOf(f, *call.generics[0]), shapeList(f, list(0).elems), arg(1)));
      case Primitive::Cast: return RValue::of(cast(arg(0), dtypeOf(f, *call.generics[0])));
      case Primitive::Select: return RValue::of(select(arg(0), arg(1), arg(2)));
      case Primitive::Matmul: return matmulCall(f, pos);
      case Primitive::Gather: return RValue::of(gather(arg(0), arg(1)));
      case Primitive::Some: {
        RValue v;
        v.kind = RValue::Some;
        v.elems.push_back(eval(f, *pos[0]));
        return v;
      }
      case Primitive::UnwrapOr: {
        RValue o = eval(f, *pos[0]);
        return o.kind == RValue::Some ? o.elems[0] : eval(f, *pos[1]);
      }
      case Primitive::ShardSum: case Primitive::ShardMax: case Primitive::ShardShared:
        return eval(f, *pos[0]);
      case Primitive::ShardConcat:
        if (dim(f, *call.generics[0]) != 1)
          fail(call.range, "the reference backend runs on one device: Shards must be 1");
        return eval(f, *pos[0]);
      case Primitive::ShardIndex: return RValue::of(Tensor::scalarI(Scalar::I64, 0));
      default: break;
    }
    fail(call.range, fmt::format("internal: primitive `{}` has no kernel", sema::spelling(p)));
  }

  RValue matmulCall(Frame& f, const std::vector<const Expr*>& pos) {
    // `matmul(x, permute(w, [1, 0]))`, as Linear writes it: read w's rows
    // directly instead of forming its transpose on every call.
    if (pos[1]->kind == ExprKind::Call) {
      const auto& inner = static_cast<const CallExpr&>(*pos[1]);
      if (inner.callee->kind == ExprKind::Name &&
          static_cast<const NameExpr&>(*inner.callee).name == "permute" && inner.args.size() == 2 &&
          inner.args[1].value->kind == ExprKind::List) {
        const auto& perm = static_cast<const ListExpr&>(*inner.args[1].value);
        Tensor w = eval(f, *inner.args[0].value).t;
        if (w.rank() == 2 && perm.elems.size() == 2 && *eval(f, *perm.elems[0]).staticInt == 1)
          return RValue::of(matmulTransposed(eval(f, *pos[0]).t, w));
      }
    }
    return RValue::of(matmul(eval(f, *pos[0]).t, eval(f, *pos[1]).t));
  }

  Frame empty_;
};

Model::Model(const sema::Program& program) : impl_(std::make_unique<Impl>(program)) {
  const sema::Package& pkg = program.package();
  const sema::Item* item = program.lookup(*program.root(), pkg.rootBlock);
  if (!item || item->kind != sema::Item::Block)
    throw EvalError(fmt::format("{}: no root block `{}`", pkg.dir, pkg.rootBlock));
  Env env;
  Frame f;
  for (const GenericParam& g : item->block->generics) {
    auto it = pkg.generics.find(g.name.name);
    if (g.kind.name == "Dim") {
      env.dims[g.name.name] = it != pkg.generics.end() && it->second.number
                                  ? *it->second.number
                                  : impl_->dim(f, *g.defaultValue);
    } else {
      env.dtypes[g.name.name] = it != pkg.generics.end()
                                    ? *sema::scalarNamed(it->second.dtype)
                                    : impl_->dtypeOf(f, *g.defaultValue);
    }
  }
  impl_->root = impl_->instantiate(item->block, item->module, env, "");
}

Model::~Model() = default;

std::vector<ParamSpec> Model::params() const {
  std::vector<ParamSpec> out;
  impl_->eachInstance(*impl_->root, [&](Instance& inst) {
    for (const MemberDecl& m : inst.block->members)
      if (m.kind == MemberKind::Param) {
        const Tensor& t = inst.params.at(m.name.name);
        out.push_back({inst.path.empty() ? m.name.name : inst.path + "." + m.name.name, t.shape, t.dtype});
      }
  });
  return out;
}

void Model::bind(const ParamSource& source) {
  impl_->eachInstance(*impl_->root, [&](Instance& inst) {
    for (const MemberDecl& m : inst.block->members) {
      if (m.kind != MemberKind::Param) continue;
      Tensor& slot = inst.params.at(m.name.name);
      ParamSpec spec{inst.path.empty() ? m.name.name : inst.path + "." + m.name.name, slot.shape, slot.dtype};
      Tensor t = source(spec);
      if (t.shape != slot.shape || t.dtype != slot.dtype)
        throw EvalError(fmt::format("param `{}` is {}, but {} was supplied", spec.path,
                                    slot.describe(), t.describe()));
      slot = std::move(t);
    }
  });
  resetState();
}

void Model::resetState() {
  impl_->eachInstance(*impl_->root, [&](Instance& inst) {
    for (auto& [n, t] : inst.states) t = Tensor::zeros(t.dtype, t.shape);
  });
}

void Model::watch(std::string name, Observer observer) {
  if (observer) impl_->watches[std::move(name)] = std::move(observer);
  else impl_->watches.erase(name);
}

std::vector<Tensor> Model::call(const std::string& entry, const std::vector<Tensor>& args,
                                const std::map<std::string, int64_t>& generics) {
  const FnDecl* fn = impl_->methodOf(*impl_->root, entry);
  if (!fn || !fn->isEntry)
    throw EvalError(fmt::format("`{}` is not an entry of `{}`", entry, impl_->root->block->name.name));
  if (args.size() != fn->params.size())
    throw EvalError(fmt::format("entry `{}` takes {} arguments, {} were given", entry,
                                fn->params.size(), args.size()));
  std::vector<RValue> values;
  for (const Tensor& t : args) values.push_back(RValue::of(t));
  Frame caller;
  for (const auto& [n, v] : generics) {
    bool known = false;
    for (const GenericParam& g : fn->generics) known |= g.name.name == n && g.kind.name == "Dim";
    if (!known)
      throw EvalError(fmt::format("entry `{}` has no dimension generic `{}`", entry, n));
  }
  RValue r = impl_->callFn(caller, *fn, impl_->root.get(), impl_->root->module, nullptr, values,
                           generics);
  std::vector<Tensor> out;
  if (r.kind == RValue::Tuple)
    for (auto& e : r.elems) out.push_back(e.t);
  else
    out.push_back(r.t);
  return out;
}

}  // namespace linnet::reference
