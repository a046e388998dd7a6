#include "ir/mlirgen.h"

#include <fmt/format.h>

#include <optional>

#include "ir/dialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Verifier.h"
#include "sema/generics.h"
#include "syntax/ast.h"

namespace linnet::ir {

using namespace syntax;
using sema::Scalar;

mlir::Type elementType(mlir::MLIRContext& c, Scalar s) {
  mlir::Builder b(&c);
  switch (s) {
    case Scalar::F32: return b.getF32Type();
    case Scalar::BF16: return b.getBF16Type();
    case Scalar::F16: return b.getF16Type();
    case Scalar::I32: return b.getI32Type();
    case Scalar::I64: return b.getI64Type();
    case Scalar::Bool: return b.getI1Type();
  }
  return {};
}

namespace {

using sema::Env;

struct Instance {
  const BlockDecl* block = nullptr;
  const sema::Module* module = nullptr;
  Env env;
  std::string path;
  std::vector<TensorSpec> params;  // in declaration order
  std::vector<TensorSpec> states;
  std::map<std::string, std::unique_ptr<Instance>> subs;
  std::map<std::string, std::vector<std::unique_ptr<Instance>>> arrays;
};

// A value while generating: a tensor (an SSA value of a static type), a
// tuple, an option, or a sub-block.
struct Val {
  enum Kind { TensorV, Tuple, None, Some, BlockV, ArrayV } kind = TensorV;
  mlir::Value v;
  Scalar dtype = Scalar::F32;
  bool weak = false;  // a literal or a dimension: takes the other operand's dtype
  std::vector<int64_t> shape;
  std::vector<Val> elems;
  Instance* inst = nullptr;
  std::vector<std::unique_ptr<Instance>>* array = nullptr;
  std::optional<int64_t> staticInt;
  int rank() const { return static_cast<int>(shape.size()); }
};

struct Slot {
  Val value;
  bool mutableVar = false;  // a `var`: carried through `while` loops
};

// The SSA values of the params and states of the instances a function sees.
struct FnCtx {
  std::map<const Instance*, std::map<std::string, mlir::Value>> params, states;
  // The root's sub-block arrays, stacked: `layers.*.mlp.up.weight` is one
  // tensor [Layers, ...] (see StackedArray).
  std::map<std::string, mlir::Value> stackedParams, stackedStates;
  mlir::Value layerIndex;  // inside a loop over a stacked array (an index)
};

struct Frame {
  Instance* self = nullptr;
  const sema::Module* module = nullptr;
  Env env;
  FnCtx* fn = nullptr;
  std::vector<std::map<std::string, Slot>> scopes;
  int gridRank = 0;
  std::optional<Val> result;
};

std::vector<int64_t> broadcastShapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  if (auto out = sema::broadcast(a, b)) return *out;
  throw GenError(fmt::format("shapes [{}] and [{}] do not broadcast", fmt::join(a, ", "), fmt::join(b, ", ")));
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

// A generated function for a method of a sub-block.
struct MethodFn {
  mlir::func::FuncOp op;
  int resultCount = 0;   // tensors of the method's result (a tuple gives several)
  bool tuple = false;
  std::vector<Scalar> resultDTypes;
  std::vector<size_t> modifiedStates;  // indices into the subtree's states, returned after the results
};

}  // namespace

// A sub-block array of the root (`layers`), passed to compiled code as one
// tensor per member with a leading axis of the array's length, so that
// `static for layer in layers` runs as one loop over a single copy of the
// layer's code: compile time and code size do not grow with `Layers`.
// Element 0's instances stand for every element while generating.
struct StackedArray {
  std::string name;
  std::vector<std::unique_ptr<Instance>>* elements = nullptr;
  struct Slot {
    Instance* inst;      // in element 0's subtree
    std::string member;  // the param's or state's name in `inst`
    std::string path;    // `layers.*.attention.q_proj.weight`
    TensorSpec spec;     // one element's
  };
  std::vector<Slot> params, states;
};

// Where an entry's param or state argument comes from.
struct ArgRef {
  Instance* inst = nullptr;  // a plain member of this instance, or
  std::string member;
  std::string stacked;       // a stacked one, by path
};

struct MLIRGen::Impl {
  mlir::MLIRContext& ctx;
  const sema::Program& program;
  mlir::OpBuilder b;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::unique_ptr<Instance> root;
  std::vector<TensorSpec> params, states;
  std::vector<ArgRef> paramRefs, stateRefs;  // parallel to params and states
  std::vector<StackedArray> stacked;
  std::map<std::string, MethodFn> methods;
  std::map<std::string, int> symbolUses;
  mlir::Location loc;
  Frame empty_;

  Impl(mlir::MLIRContext& c, const sema::Program& p)
      : ctx(c), program(p), b(&c), loc(mlir::UnknownLoc::get(&c)) {
    ctx.getOrLoadDialect<LinnetDialect>();
    ctx.getOrLoadDialect<mlir::func::FuncDialect>();
    ctx.getOrLoadDialect<mlir::arith::ArithDialect>();
    ctx.getOrLoadDialect<mlir::bufferization::BufferizationDialect>();
    ctx.getOrLoadDialect<mlir::memref::MemRefDialect>();
    ctx.getOrLoadDialect<mlir::scf::SCFDialect>();
    ctx.getOrLoadDialect<mlir::tensor::TensorDialect>();
    module = mlir::ModuleOp::create(loc);
  }

  [[noreturn]] void fail(SourceRange at, const std::string& message) {
    throw GenError(fmt::format("{}: {}", where(at), message));
  }
  std::string where(SourceRange r) {
    if (!r.valid()) return "<unknown>";
    const SourceFile& f = program.sources().file(r.file);
    LineCol lc = f.lineCol(r.begin);
    return fmt::format("{}:{}:{}", f.path(), lc.line, lc.col);
  }
  mlir::Location locOf(SourceRange r) {
    if (!r.valid()) return mlir::UnknownLoc::get(&ctx);
    const SourceFile& f = program.sources().file(r.file);
    LineCol lc = f.lineCol(r.begin);
    return mlir::FileLineColLoc::get(&ctx, f.path(), lc.line, lc.col);
  }

  // ------------------------------------------------------------ types and constants
  mlir::Type elem(Scalar s) { return elementType(ctx, s); }
  mlir::RankedTensorType tensorType(Scalar s, const std::vector<int64_t>& shape) {
    return mlir::RankedTensorType::get(shape, elem(s));
  }
  Val tensor(mlir::Value v, Scalar dt, std::vector<int64_t> shape, bool weak = false) {
    Val out;
    out.v = v;
    out.dtype = dt;
    out.shape = std::move(shape);
    out.weak = weak;
    return out;
  }
  Val constant(Scalar dt, double value, const std::vector<int64_t>& shape = {}, bool weak = false) {
    auto type = tensorType(dt, shape);
    mlir::Attribute a;
    if (sema::isFloat(dt)) a = b.getFloatAttr(elem(dt), value);
    else a = b.getIntegerAttr(elem(dt), static_cast<int64_t>(value));
    auto dense = mlir::DenseElementsAttr::get(type, a);
    return tensor(ConstantOp::create(b, loc, type, dense), dt, shape, weak);
  }
  Val constantInt(Scalar dt, int64_t value, bool weak = false) {
    auto type = tensorType(dt, {});
    auto dense = mlir::DenseElementsAttr::get(type, b.getIntegerAttr(elem(dt), value));
    Val v = tensor(ConstantOp::create(b, loc, type, dense), dt, {}, weak);
    return v;
  }

  Val cast(const Val& x, Scalar to) {
    if (x.dtype == to) {
      Val y = x;
      y.weak = false;
      return y;
    }
    auto type = tensorType(to, x.shape);
    return tensor(CastOp::create(b, loc, type, x.v), to, x.shape);
  }
  static Val finalize(Val v) {
    v.weak = false;
    return v;
  }

  // ------------------------------------------------------------ dimensions
  // Generics are evaluated as the reference backend does (sema/generics.h).
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
  std::unique_ptr<Instance> instantiate(const BlockDecl* block, const sema::Module* mod, Env env,
                                        std::string path) {
    auto inst = std::make_unique<Instance>();
    inst->block = block;
    inst->module = mod;
    inst->env = std::move(env);
    inst->path = std::move(path);
    Frame f;
    f.env = inst->env;
    f.module = mod;
    for (const MemberDecl& m : block->members) {
      std::string memberPath = inst->path.empty() ? m.name.name : inst->path + "." + m.name.name;
      if (m.kind != MemberKind::Sub) {
        TensorSpec spec{m.name.name, dtypeOf(f, m.type->elem->name.name, m.type->elem->range),
                        shapeList(f, m.type->dims)};
        (m.kind == MemberKind::Param ? inst->params : inst->states).push_back(spec);
        continue;
      }
      const TypeExpr* t = m.type.get();
      int64_t count = -1;
      if (t->kind == TypeKind::Array) {
        count = dim(f, *t->count);
        t = t->elem.get();
      }
      const sema::Item* item = program.lookup(*mod, t->name.name);
      if (!item || item->kind != sema::Item::Block) fail(m.range, "not a block");
      const BlockDecl* callee = item->block;
      Env args;
      for (size_t i = 0; i < callee->generics.size(); ++i) {
        const GenericParam& g = callee->generics[i];
        const Expr* arg = i < t->generics.size() ? t->generics[i].get() : g.defaultValue.get();
        Frame& in = i < t->generics.size() ? f : empty_;
        if (g.kind.name == "Dim") args.dims[g.name.name] = dim(in, *arg);
        else args.dtypes[g.name.name] = dtypeOf(in, *arg);
      }
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

  static std::string fullPath(const Instance& inst, const std::string& member) {
    return inst.path.empty() ? member : inst.path + "." + member;
  }

  // ------------------------------------------------------------ scopes
  Slot* lookup(Frame& f, const std::string& n) {
    for (auto it = f.scopes.rbegin(); it != f.scopes.rend(); ++it)
      if (auto s = it->find(n); s != it->end()) return &s->second;
    return nullptr;
  }
  void bindName(Frame& f, const std::string& n, Val v, bool mut = false) {
    f.scopes.back()[n] = Slot{std::move(v), mut};
  }

  const FnDecl* methodOf(const Instance& inst, const std::string& name) {
    for (const auto& fn : inst.block->fns)
      if (fn->name.name == name) return fn.get();
    return nullptr;
  }

  // ------------------------------------------------------------ calls
  // Binds a callee's generics as the reference backend does.
  Env bindCallEnv(Frame& caller, const FnDecl& fn, const Env& base, const CallExpr* call,
                  const std::vector<Val>& args, const std::map<std::string, int64_t>& given) {
    std::vector<sema::ArgType> types;
    for (const Val& a : args) types.push_back({a.kind == Val::TensorV, a.dtype, a.weak, a.shape});
    return guarded([&] {
      return sema::bindCallGenerics(
          fn, base, given, call, types, [&](const Expr& e) { return dim(caller, e); },
          [&](const Expr& e) { return dtypeOf(caller, e); });
    });
  }

  // Parameters take their declared dtype: a literal argument becomes it.
  std::vector<Val> coerceArgs(Frame& f, const FnDecl& fn, std::vector<Val> args) {
    for (size_t k = 0; k < fn.params.size(); ++k) {
      Val& v = args[k];
      const TypeExpr& t = *fn.params[k].type;
      if (v.kind == Val::TensorV && v.weak) {
        const std::string& dn = t.kind == TypeKind::Tensor ? t.elem->name.name : t.name.name;
        v = cast(v, dtypeOf(f, dn, t.range));
        v.staticInt.reset();
      }
    }
    return args;
  }

  // Runs `fn`'s body in the current function (inlined).
  Val inlineFn(Frame& caller, const FnDecl& fn, Instance* self, const sema::Module* mod,
               const CallExpr* call, std::vector<Val> args) {
    Frame f;
    f.self = self;
    f.module = mod;
    f.fn = caller.fn;
    f.env = bindCallEnv(caller, fn, self ? self->env : Env{}, call, args, {});
    f.scopes.emplace_back();
    args = coerceArgs(f, fn, std::move(args));
    for (size_t k = 0; k < fn.params.size(); ++k) bindName(f, fn.params[k].name.name, args[k]);
    execBody(f, fn.body);
    if (!f.result) return Val{Val::Tuple};
    return std::move(*f.result);
  }

  static void flatten(const Val& v, std::vector<Val>& out) {
    if (v.kind == Val::Tuple) {
      for (const Val& e : v.elems) flatten(e, out);
      return;
    }
    out.push_back(v);
  }

  StackedArray* stackedOf(const Instance* inst) {
    for (StackedArray& sa : stacked)
      if ((*sa.elements)[0].get() == inst) return &sa;
    return nullptr;
  }

  // A method of another block instance. A layer of a stacked array gets a
  // function of its own, one per distinct (block, generics, method,
  // argument types), called with the stacked params and states and the
  // layer's index; any other block's method is generated inline.
  Val callMethod(Frame& caller, const FnDecl& fn, Instance* inst, const CallExpr* call,
                 std::vector<Val> args) {
    StackedArray* sa = stackedOf(inst);
    if (!sa) return inlineFn(caller, fn, inst, inst->module, call, std::move(args));
    if (!caller.fn->layerIndex)
      fail(call ? call->range : fn.name.range,
           "compiled code calls a layer's methods only inside `static for` over its array");
    Frame probe;
    probe.env = bindCallEnv(caller, fn, inst->env, call, args, {});
    args = coerceArgs(probe, fn, std::move(args));
    std::string key = fmt::format("{}.{}|{}", inst->block->name.name, fn.name.name, probe.env.key());
    for (const Val& a : args) {
      if (a.kind != Val::TensorV)
        fail(call ? call->range : fn.name.range,
             "compiled code passes only tensors to a layer's method for now");
      key += fmt::format("|{}[{}]", sema::name(a.dtype), fmt::join(a.shape, ","));
    }
    auto it = methods.find(key);
    if (it == methods.end()) it = methods.emplace(key, emitLayerMethod(fn, *sa, probe.env, args)).first;
    MethodFn& m = it->second;
    std::vector<mlir::Value> operands;
    for (auto& p : sa->params) operands.push_back(caller.fn->stackedParams.at(p.path));
    for (auto& st : sa->states) operands.push_back(caller.fn->stackedStates.at(st.path));
    operands.push_back(caller.fn->layerIndex);
    for (const Val& a : args) operands.push_back(a.v);
    auto callOp = mlir::func::CallOp::create(b, loc, m.op, operands);
    std::vector<Val> results;
    for (int k = 0; k < m.resultCount; ++k) {
      mlir::Value r = callOp.getResult(k);
      auto t = mlir::cast<mlir::RankedTensorType>(r.getType());
      results.push_back(tensor(r, m.resultDTypes[k], std::vector<int64_t>(t.getShape().begin(), t.getShape().end())));
    }
    for (size_t k = 0; k < m.modifiedStates.size(); ++k)
      caller.fn->stackedStates[sa->states[m.modifiedStates[k]].path] = callOp.getResult(m.resultCount + k);
    if (!m.tuple) return m.resultCount ? results[0] : Val{Val::Tuple};
    Val t;
    t.kind = Val::Tuple;
    t.elems = std::move(results);
    return t;
  }

  // (stacked params..., stacked states..., layer index, args...) ->
  // (results..., the stacked states it wrote...). The layer's own params and
  // states are slices at the index: views with static strides, so the code
  // that reads them is the same as for a single layer.
  MethodFn emitLayerMethod(const FnDecl& fn, StackedArray& sa, const Env& env, const std::vector<Val>& args) {
    mlir::OpBuilder::InsertionGuard guard(b);
    mlir::Location saved = loc;
    loc = locOf(fn.name.range);
    Instance* inst = (*sa.elements)[0].get();
    int64_t count = static_cast<int64_t>(sa.elements->size());
    auto stackedType = [&](const TensorSpec& one) {
      std::vector<int64_t> shape = {count};
      shape.insert(shape.end(), one.shape.begin(), one.shape.end());
      return tensorType(one.dtype, shape);
    };
    std::vector<mlir::Type> inputs;
    for (auto& p : sa.params) inputs.push_back(stackedType(p.spec));
    for (auto& st : sa.states) inputs.push_back(stackedType(st.spec));
    inputs.push_back(b.getIndexType());
    for (const Val& a : args) inputs.push_back(a.v.getType());
    b.setInsertionPointToEnd(module->getBody());
    auto func = mlir::func::FuncOp::create(b, loc, uniqueSymbol(inst->block->name.name + "." + fn.name.name),
                                           b.getFunctionType(inputs, {}));
    func.setPrivate();
    // A layer's code exists once: LLVM must not copy it into each call site.
    func->setAttr("llvm.no_inline", b.getUnitAttr());
    mlir::Block* entry = func.addEntryBlock();
    b.setInsertionPointToStart(entry);
    mlir::Value index = entry->getArgument(sa.params.size() + sa.states.size());
    FnCtx ctxFn;
    size_t k = 0;
    for (auto& p : sa.params) ctxFn.params[p.inst][p.member] = sliceAt(entry->getArgument(k++), index, p.spec);
    std::vector<mlir::Value> initialStates;
    for (auto& st : sa.states) {
      initialStates.push_back(sliceAt(entry->getArgument(k++), index, st.spec));
      ctxFn.states[st.inst][st.member] = initialStates.back();
    }
    ++k;  // the index
    Frame f;
    f.self = inst;
    f.module = inst->module;
    f.env = env;
    f.fn = &ctxFn;
    f.scopes.emplace_back();
    for (size_t i = 0; i < fn.params.size(); ++i) {
      Val a = args[i];
      a.v = entry->getArgument(k++);
      bindName(f, fn.params[i].name.name, a);
    }
    execBody(f, fn.body);
    MethodFn m;
    m.op = func;
    std::vector<Val> results;
    if (f.result) {
      m.tuple = f.result->kind == Val::Tuple;
      flatten(*f.result, results);
    }
    std::vector<mlir::Value> returned;
    for (const Val& r : results) {
      if (r.kind != Val::TensorV) fail(fn.name.range, "compiled methods return tensors or tuples of tensors");
      returned.push_back(r.v);
      m.resultDTypes.push_back(r.dtype);
    }
    m.resultCount = static_cast<int>(results.size());
    // Only the states the method writes come back, inserted at the index.
    for (size_t i = 0; i < sa.states.size(); ++i) {
      mlir::Value v = ctxFn.states[sa.states[i].inst][sa.states[i].member];
      if (v == initialStates[i]) continue;
      m.modifiedStates.push_back(i);
      returned.push_back(insertAt(v, entry->getArgument(sa.params.size() + i), index, sa.states[i].spec));
    }
    mlir::func::ReturnOp::create(b, loc, returned);
    std::vector<mlir::Type> resultTypes;
    for (mlir::Value v : returned) resultTypes.push_back(v.getType());
    func.setFunctionType(b.getFunctionType(inputs, resultTypes));
    loc = saved;
    return m;
  }

  // Layer `index` of a stacked tensor: offsets [index, 0, ...], sizes
  // [1, shape...], unit strides.
  struct LayerWindow {
    llvm::SmallVector<mlir::OpFoldResult> offsets, sizes, strides;
  };
  LayerWindow layerWindow(mlir::Value index, const std::vector<int64_t>& shape) {
    LayerWindow w;
    w.offsets.assign(shape.size() + 1, b.getIndexAttr(0));
    w.offsets[0] = index;
    w.sizes.push_back(b.getIndexAttr(1));
    for (int64_t d : shape) w.sizes.push_back(b.getIndexAttr(d));
    w.strides.assign(shape.size() + 1, b.getIndexAttr(1));
    return w;
  }
  // One layer of a stacked tensor, and a layer put back.
  mlir::Value sliceAt(mlir::Value all, mlir::Value index, const TensorSpec& one) {
    LayerWindow w = layerWindow(index, one.shape);
    return mlir::tensor::ExtractSliceOp::create(b, loc, tensorType(one.dtype, one.shape), all, w.offsets, w.sizes,
                                                w.strides);
  }
  mlir::Value insertAt(mlir::Value one, mlir::Value all, mlir::Value index, const TensorSpec& spec) {
    LayerWindow w = layerWindow(index, spec.shape);
    return mlir::tensor::InsertSliceOp::create(b, loc, one, all, w.offsets, w.sizes, w.strides);
  }

  std::string uniqueSymbol(std::string base) {
    for (char& c : base)
      if (!isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
    int n = symbolUses[base]++;
    return n == 0 ? base : fmt::format("{}_{}", base, n);
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
    loc = locOf(s.range);
    switch (s.kind) {
      case StmtKind::Let: {
        const auto& l = static_cast<const LetStmt&>(s);
        Val v = eval(f, *l.value);
        if (v.kind == Val::TensorV) {
          if (l.type && v.weak)
            v = cast(v, dtypeOf(f, l.type->elem ? l.type->elem->name.name : l.type->name.name, l.type->range));
          v = finalize(std::move(v));
        }
        v.staticInt.reset();
        bindName(f, l.name.name, std::move(v));
        return;
      }
      case StmtKind::LetTuple: {
        const auto& l = static_cast<const LetTupleStmt&>(s);
        Val v = eval(f, *l.value);
        for (size_t i = 0; i < l.names.size(); ++i) bindName(f, l.names[i].name, v.elems.at(i));
        return;
      }
      case StmtKind::Comprehension: {
        const auto& c = static_cast<const ComprehensionStmt&>(s);
        bindName(f, c.name.name, finalize(comprehension(f, c.indices, *c.body, "")));
        return;
      }
      case StmtKind::Var: {
        const auto& v = static_cast<const VarStmt&>(s);
        Val x = eval(f, *v.value);
        if (v.type && x.kind == Val::TensorV && x.weak) {
          const TypeExpr& t = *v.type;
          x = cast(x, dtypeOf(f, t.kind == TypeKind::Tensor ? t.elem->name.name : t.name.name, t.range));
        }
        if (x.kind == Val::TensorV) x = finalize(std::move(x));
        x.staticInt.reset();
        bindName(f, v.name.name, std::move(x), true);
        return;
      }
      case StmtKind::Assign: {
        const auto& a = static_cast<const AssignStmt&>(s);
        Val v = eval(f, *a.value);
        if (Slot* slot = lookup(f, a.target.name)) {
          if (v.kind == Val::TensorV && slot->value.kind == Val::TensorV && v.dtype != slot->value.dtype)
            v = cast(v, slot->value.dtype);
          v.staticInt.reset();
          v.weak = false;
          slot->value = std::move(v);
          return;
        }
        const TensorSpec* state = nullptr;
        for (const TensorSpec& st : f.self->states)
          if (st.name == a.target.name) state = &st;
        if (!state) fail(a.range, fmt::format("no variable or state `{}`", a.target.name));
        if (v.shape != state->shape) fail(a.range, fmt::format("state `{}` is assigned a different shape", a.target.name));
        f.fn->states[f.self][a.target.name] = (v.dtype == state->dtype ? v : cast(v, state->dtype)).v;
        return;
      }
      case StmtKind::Return: {
        const auto& r = static_cast<const ReturnStmt&>(s);
        f.result = r.value ? eval(f, *r.value) : Val{Val::Tuple};
        if (f.result->kind == Val::TensorV) f.result = finalize(std::move(*f.result));
        return;
      }
      case StmtKind::Expr:
        eval(f, *static_cast<const ExprStmt&>(s).expr);
        return;
      case StmtKind::StaticFor: {
        const auto& l = static_cast<const StaticForStmt&>(s);
        if (l.iterable) {
          Val it = eval(f, *l.iterable);
          for (StackedArray& sa : stacked)
            if (sa.elements == it.array) return stackedLoop(f, l, sa);
          for (auto& inst : *it.array) {
            f.scopes.emplace_back();
            Val bv;
            bv.kind = Val::BlockV;
            bv.inst = inst.get();
            bindName(f, l.var.name, bv);
            execBody(f, l.body);
            f.scopes.pop_back();
            if (f.result) return;
          }
        } else {
          int64_t lo = dim(f, *l.lo), hi = dim(f, *l.hi);
          for (int64_t i = lo; i < hi; ++i) {
            f.scopes.emplace_back();
            Val v = constantInt(Scalar::I64, i, true);
            v.staticInt = i;
            bindName(f, l.var.name, v);
            execBody(f, l.body);
            f.scopes.pop_back();
            if (f.result) return;
          }
        }
        return;
      }
      case StmtKind::While:
        whileLoop(f, static_cast<const WhileStmt&>(s));
        return;
    }
  }

  // What a loop carries from one iteration to the next: every `var` in
  // scope (the body may assign it) and every state the function holds.
  struct Carried {
    size_t scope = 0;
    std::string name;                // a var, a state's member name, or a stacked state's path
    const Instance* inst = nullptr;  // the state's instance
    bool stackedState = false;
  };
  std::vector<Carried> carriedValues(Frame& f) {
    std::vector<Carried> carried;
    for (size_t k = 0; k < f.scopes.size(); ++k)
      for (auto& [n, slot] : f.scopes[k])
        if (slot.mutableVar && slot.value.kind == Val::TensorV) carried.push_back({k, n});
    for (auto& [inst, m] : f.fn->states)
      for (auto& [n, v] : m) carried.push_back({0, n, inst});
    for (auto& [path, v] : f.fn->stackedStates) carried.push_back({0, path, nullptr, true});
    return carried;
  }
  mlir::Value getCarried(Frame& f, const Carried& c) {
    if (c.stackedState) return f.fn->stackedStates[c.name];
    return c.inst ? f.fn->states[c.inst][c.name] : f.scopes[c.scope][c.name].value.v;
  }
  void setCarried(Frame& f, const Carried& c, mlir::Value v) {
    if (c.stackedState) f.fn->stackedStates[c.name] = v;
    else if (c.inst) f.fn->states[c.inst][c.name] = v;
    else f.scopes[c.scope][c.name].value.v = v;
  }

  // `static for layer in layers` over a stacked array: one scf.for over
  // the layer index, carrying every `var` in scope and every state. Each
  // iteration slices its layer's params and states out of the stacked
  // tensors, runs the body once with element 0's instances standing for
  // that layer, and inserts the states it wrote back.
  void stackedLoop(Frame& f, const StaticForStmt& l, StackedArray& sa) {
    mlir::Location at = locOf(l.range);
    std::vector<Carried> carried = carriedValues(f);
    auto get = [&](const Carried& c) { return getCarried(f, c); };
    auto set = [&](const Carried& c, mlir::Value v) { setCarried(f, c, v); };
    std::vector<mlir::Value> init;
    for (const Carried& c : carried) init.push_back(get(c));
    loc = at;
    mlir::Value lo = mlir::arith::ConstantIndexOp::create(b, loc, 0);
    mlir::Value hi = mlir::arith::ConstantIndexOp::create(b, loc, static_cast<int64_t>(sa.elements->size()));
    mlir::Value one = mlir::arith::ConstantIndexOp::create(b, loc, 1);
    auto loop = mlir::scf::ForOp::create(b, loc, lo, hi, one, init);
    mlir::Block* body = loop.getBody();
    b.setInsertionPointToStart(body);
    mlir::Value iv = loop.getInductionVar();
    for (size_t k = 0; k < carried.size(); ++k) set(carried[k], loop.getRegionIterArgs()[k]);
    // The layer's params, for code in the loop that reads them directly
    // (unused slices fold away); its methods take the stacked tensors.
    for (auto& p : sa.params) f.fn->params[p.inst][p.member] = sliceAt(f.fn->stackedParams.at(p.path), iv, p.spec);
    mlir::Value outerIndex = f.fn->layerIndex;
    f.fn->layerIndex = iv;
    f.scopes.emplace_back();
    Val bv{Val::BlockV};
    bv.inst = (*sa.elements)[0].get();
    bindName(f, l.var.name, bv);
    execBody(f, l.body);
    f.scopes.pop_back();
    f.fn->layerIndex = outerIndex;
    if (f.result) fail(l.range, "compiled code cannot `return` from inside a loop over layers yet");
    loc = at;
    // Element 0's instances stand for no layer outside the loop.
    eachInstance(*(*sa.elements)[0], [&](Instance& inst) { f.fn->params.erase(&inst); });
    std::vector<mlir::Value> next;
    for (const Carried& c : carried) next.push_back(get(c));
    mlir::scf::YieldOp::create(b, loc, next);
    b.setInsertionPointAfter(loop);
    for (size_t k = 0; k < carried.size(); ++k) set(carried[k], loop.getResult(k));
  }

  // A runtime loop: an scf.while carrying every `var` in scope and every
  // state of the function, since the body may assign any of them.
  void whileLoop(Frame& f, const WhileStmt& w) {
    std::vector<Carried> carried = carriedValues(f);
    auto get = [&](const Carried& c) { return getCarried(f, c); };
    auto set = [&](const Carried& c, mlir::Value v) { setCarried(f, c, v); };
    std::vector<mlir::Value> init;
    std::vector<mlir::Type> types;
    std::vector<mlir::Location> locs;
    for (const Carried& c : carried) {
      init.push_back(get(c));
      types.push_back(init.back().getType());
      locs.push_back(loc);
    }
    mlir::Location at = locOf(w.range);
    auto loop = mlir::scf::WhileOp::create(b, at, types, init);
    mlir::Block* before = b.createBlock(&loop.getBefore(), {}, types, locs);
    for (size_t k = 0; k < carried.size(); ++k) set(carried[k], before->getArgument(k));
    Val c = eval(f, *w.cond);
    if (c.kind != Val::TensorV || c.rank() != 0 || c.dtype != Scalar::Bool)
      fail(w.cond->range, "a `while` condition must be a bool");
    loc = at;
    mlir::Value flag = mlir::tensor::ExtractOp::create(b, loc, c.v, mlir::ValueRange{});
    std::vector<mlir::Value> forward;
    for (const Carried& x : carried) forward.push_back(get(x));
    mlir::scf::ConditionOp::create(b, loc, flag, forward);
    mlir::Block* after = b.createBlock(&loop.getAfter(), {}, types, locs);
    for (size_t k = 0; k < carried.size(); ++k) set(carried[k], after->getArgument(k));
    execBody(f, w.body);
    if (f.result) fail(w.range, "compiled code cannot `return` from inside a `while` loop yet");
    std::vector<mlir::Value> next;
    for (const Carried& x : carried) next.push_back(get(x));
    loc = at;
    mlir::scf::YieldOp::create(b, loc, next);
    b.setInsertionPointAfter(loop);
    for (size_t k = 0; k < carried.size(); ++k) set(carried[k], loop.getResult(k));
  }

  // ------------------------------------------------------------ comprehensions
  std::optional<int64_t> extentOf(Frame& f, const Expr& e, const std::string& var) {
    if (e.kind == ExprKind::Index) {
      const auto& ix = static_cast<const IndexExpr&>(e);
      for (size_t k = 0; k < ix.items.size(); ++k) {
        const IndexItem& item = ix.items[k];
        if (item.kind == IndexItem::Single && item.index->kind == ExprKind::Name &&
            static_cast<const NameExpr&>(*item.index).name == var) {
          Val base = shapeOnly(f, *ix.base);
          return base.shape.at(k);
        }
      }
    }
    std::optional<int64_t> found;
    sema::forEachChild(e, [&](const Expr& c) {
      if (!found) found = extentOf(f, c, var);
    });
    return found;
  }

  // The value of `e` for its shape only: generated into a scratch block that
  // is then erased, so nothing is left behind.
  Val shapeOnly(Frame& f, const Expr& e) {
    if (e.kind == ExprKind::Name) {
      const std::string& n = static_cast<const NameExpr&>(e).name;
      if (Slot* s = lookup(f, n)) return s->value;
    }
    mlir::OpBuilder::InsertionGuard guard(b);
    auto* scratch = new mlir::Block();
    b.setInsertionPointToStart(scratch);
    FnCtx savedStates = *f.fn;
    Val v = eval(f, e);
    *f.fn = savedStates;
    for (auto& op : llvm::make_early_inc_range(llvm::reverse(*scratch))) {
      op.dropAllUses();
      op.erase();
    }
    delete scratch;
    v.v = nullptr;
    return v;
  }

  Val iota(Scalar dt, std::vector<int64_t> shape, int axis, bool weak = false) {
    auto type = tensorType(dt, shape);
    return tensor(IotaOp::create(b, loc, type, b.getI64IntegerAttr(axis)), dt, shape, weak);
  }

  Val broadcastTo(const Val& x, const std::vector<int64_t>& shape) {
    if (x.shape == shape) return x;
    Val y = tensor(BroadcastOp::create(b, loc, tensorType(x.dtype, shape), x.v), x.dtype, shape, x.weak);
    return y;
  }

  Val reduce(const std::string& kind, const Val& x, std::vector<int64_t> axes, bool keepdims) {
    std::vector<int64_t> shape;
    for (int a = 0; a < x.rank(); ++a) {
      bool reduced = std::find(axes.begin(), axes.end(), a) != axes.end();
      if (!reduced) shape.push_back(x.shape[a]);
      else if (keepdims) shape.push_back(1);
    }
    Scalar dt = kind == "index_of_max" ? Scalar::I32 : x.dtype;
    auto op = ReduceOp::create(b, loc, tensorType(dt, shape), b.getStringAttr(kind), x.v,
                               b.getDenseI64ArrayAttr(axes), keepdims ? b.getUnitAttr() : nullptr);
    return tensor(op, dt, shape);
  }

  Val comprehension(Frame& f, const std::vector<Ident>& names, const Expr& body, const std::string& red) {
    std::vector<int64_t> extents;
    for (const Ident& n : names) {
      f.scopes.emplace_back();
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
      bindName(f, names[k].name, iota(Scalar::I64, shape, k, true));
    }
    f.gridRank = outer + m;
    Val v = eval(f, body);
    f.gridRank = outer;
    f.scopes.pop_back();
    std::vector<int64_t> grid = extents;
    grid.insert(grid.end(), outer, 1);
    Val t = broadcastTo(v, broadcastShapes(v.shape, grid));
    if (red.empty()) return t;
    std::vector<int64_t> axes;
    for (int k = 0; k < m; ++k) axes.push_back(k);
    std::string kind = red;
    return reduce(kind, t, axes, false);
  }

  // ------------------------------------------------------------ expressions
  Val eval(Frame& f, const Expr& e) {
    switch (e.kind) {
      case ExprKind::IntLiteral: {
        int64_t v = static_cast<const IntLiteralExpr&>(e).value;
        Val r = constantInt(Scalar::I64, v, true);
        r.staticInt = v;
        return r;
      }
      case ExprKind::FloatLiteral:
        return constant(Scalar::F32, static_cast<const FloatLiteralExpr&>(e).value, {}, true);
      case ExprKind::BoolLiteral:
        return constantInt(Scalar::Bool, static_cast<const BoolLiteralExpr&>(e).value);
      case ExprKind::Name: return name(f, static_cast<const NameExpr&>(e));
      case ExprKind::Unary: {
        const auto& u = static_cast<const UnaryExpr&>(e);
        Val v = eval(f, *u.operand);
        Val out = unary(u.op == syntax::UnaryOp::Neg ? "neg" : "not", v);
        if (v.staticInt) out.staticInt = -*v.staticInt;
        return out;
      }
      case ExprKind::Binary: {
        const auto& bin = static_cast<const BinaryExpr&>(e);
        Val l = eval(f, *bin.lhs), r = eval(f, *bin.rhs);
        Val out = binary(spelling(bin.op), l, r, e.range);
        if (l.staticInt && r.staticInt) {
          int64_t x = *l.staticInt, y = *r.staticInt;
          switch (bin.op) {
            case syntax::BinaryOp::Add: out.staticInt = x + y; break;
            case syntax::BinaryOp::Sub: out.staticInt = x - y; break;
            case syntax::BinaryOp::Mul: out.staticInt = x * y; break;
            case syntax::BinaryOp::Div:
              if (y > 0) out.staticInt = x / y;
              break;
            default: break;
          }
        }
        return out;
      }
      case ExprKind::Tuple: {
        Val t;
        t.kind = Val::Tuple;
        for (const auto& x : static_cast<const TupleExpr&>(e).elems) {
          Val v = eval(f, *x);
          if (v.kind == Val::TensorV) v = finalize(std::move(v));
          t.elems.push_back(std::move(v));
        }
        return t;
      }
      case ExprKind::Member: return member(f, static_cast<const MemberExpr&>(e));
      case ExprKind::Index: return index(f, static_cast<const IndexExpr&>(e));
      case ExprKind::Reduce: {
        const auto& r = static_cast<const ReduceExpr&>(e);
        return comprehension(f, r.binders, *r.body, r.op.name);
      }
      case ExprKind::Call: return callExpr(f, static_cast<const CallExpr&>(e));
      default: fail(e.range, "cannot generate code for this expression");
    }
  }

  Val unary(const std::string& op, const Val& x) {
    if (op != "not" && !sema::isFloat(x.dtype) && x.weak && op != "neg" && op != "abs") {
      Val y = cast(x, Scalar::F32);
      y.weak = true;
      return unary(op, y);
    }
    auto type = tensorType(x.dtype, x.shape);
    return tensor(UnaryOp::create(b, loc, type, b.getStringAttr(op), x.v), x.dtype, x.shape, x.weak);
  }

  Val binary(const std::string& op, Val l, Val r, SourceRange at) {
    bool compare = op == "==" || op == "!=" || op == "<" || op == "<=" || op == ">" || op == ">=";
    bool logical = op == "&&" || op == "||";
    Scalar dt;
    bool weak = false;
    if (logical) {
      dt = Scalar::Bool;
    } else {
      weak = l.weak && r.weak;
      if (l.weak && !r.weak) dt = r.dtype;
      else if (r.weak && !l.weak) dt = l.dtype;
      else if (l.weak && r.weak) dt = sema::isFloat(l.dtype) ? l.dtype : r.dtype;
      else if (l.dtype != r.dtype)
        fail(at, fmt::format("element types {} and {} differ", sema::name(l.dtype), sema::name(r.dtype)));
      else dt = l.dtype;
      if (l.dtype != dt) l = cast(l, dt);
      if (r.dtype != dt) r = cast(r, dt);
    }
    std::vector<int64_t> shape = broadcastShapes(l.shape, r.shape);
    Scalar outType = compare || logical ? Scalar::Bool : dt;
    auto op_ = BinaryOp_::create(b, loc, tensorType(outType, shape), b.getStringAttr(op), l.v, r.v);
    return tensor(op_, outType, shape, weak && !compare && !logical);
  }
  using BinaryOp_ = ::linnet::ir::BinaryOp;

  Val name(Frame& f, const NameExpr& e) {
    if (e.name == "none") return Val{Val::None};
    if (Slot* s = lookup(f, e.name)) return s->value;
    if (auto it = f.env.dims.find(e.name); it != f.env.dims.end()) {
      Val v = constantInt(Scalar::I64, it->second, true);
      v.staticInt = it->second;
      return v;
    }
    if (f.self) {
      if (Val v; selfMember(f, *f.self, e.name, v)) return v;
    }
    if (const sema::Item* item = program.lookup(*f.module, e.name); item && item->kind == sema::Item::Const) {
      Frame cf;
      cf.module = item->module;
      cf.fn = f.fn;
      cf.scopes.emplace_back();
      Val v = eval(cf, *item->constant->value);
      Scalar dt = dtypeOf(cf, item->constant->type->name.name, item->constant->type->range);
      v = cast(v, dt);
      v.staticInt.reset();
      return v;
    }
    fail(e.range, fmt::format("unknown name `{}`", e.name));
  }

  bool selfMember(Frame& f, Instance& inst, const std::string& n, Val& out) {
    for (const TensorSpec& p : inst.params)
      if (p.name == n) {
        out = tensor(f.fn->params.at(&inst).at(n), p.dtype, p.shape);
        return true;
      }
    for (const TensorSpec& s : inst.states)
      if (s.name == n) {
        out = tensor(f.fn->states.at(&inst).at(n), s.dtype, s.shape);
        return true;
      }
    if (auto it = inst.subs.find(n); it != inst.subs.end()) {
      out = Val{Val::BlockV};
      out.inst = it->second.get();
      return true;
    }
    if (auto it = inst.arrays.find(n); it != inst.arrays.end()) {
      out = Val{Val::ArrayV};
      out.array = &it->second;
      return true;
    }
    return false;
  }

  Val member(Frame& f, const MemberExpr& e) {
    Val base = eval(f, *e.base);
    if (base.kind != Val::BlockV) fail(e.range, "member of a value that is not a block");
    Val out;
    if (selfMember(f, *base.inst, e.member.name, out) && out.kind != Val::ArrayV) {
      for (const TensorSpec& s : base.inst->states)
        if (s.name == e.member.name) fail(e.range, "another block's state is not readable");
      return out;
    }
    fail(e.range, fmt::format("no member `{}`", e.member.name));
  }

  Val index(Frame& f, const IndexExpr& e) {
    Val x = eval(f, *e.base);
    bool anyGrid = false, anySlice = false;
    std::vector<Val> idx;
    std::vector<int64_t> items, lo, hi;
    std::vector<mlir::Value> scalars;
    std::vector<int64_t> shape;
    for (size_t k = 0; k < e.items.size(); ++k) {
      const IndexItem& item = e.items[k];
      if (item.kind == IndexItem::Slice) {
        anySlice = true;
        int64_t l = item.lo ? *eval(f, *item.lo).staticInt : 0;
        int64_t h = item.hi ? *eval(f, *item.hi).staticInt : x.shape[k];
        items.push_back(-1);
        lo.push_back(l);
        hi.push_back(h);
        shape.push_back(h - l);
        continue;
      }
      Val v = eval(f, *item.index);
      if (v.rank() > 0) anyGrid = true;
      if (!sema::isInt(v.dtype) && v.dtype != Scalar::Bool) {
        v = cast(v, Scalar::I64);
      }
      items.push_back(static_cast<int64_t>(scalars.size()));
      lo.push_back(0);
      hi.push_back(0);
      scalars.push_back(v.v);
      idx.push_back(v);
    }
    if (anyGrid && anySlice) fail(e.range, "compiled code cannot mix slices with index tensors");
    if (anyGrid) {
      std::vector<int64_t> out;
      std::vector<mlir::Value> values;
      for (const Val& v : idx) {
        out = broadcastShapes(out, v.shape);
        values.push_back(v.v);
      }
      auto op = GatherOp::create(b, loc, tensorType(x.dtype, out), x.v, values);
      return tensor(op, x.dtype, out);
    }
    auto op = SliceOp::create(b, loc, tensorType(x.dtype, shape), x.v, scalars,
                              b.getDenseI64ArrayAttr(items), b.getDenseI64ArrayAttr(lo),
                              b.getDenseI64ArrayAttr(hi));
    return tensor(op, x.dtype, shape);
  }

  // ------------------------------------------------------------ calls
  Val callExpr(Frame& f, const CallExpr& call) {
    mlir::Location here = locOf(call.range);
    loc = here;
    if (call.callee->kind == ExprKind::Member) {
      const auto& m = static_cast<const MemberExpr&>(*call.callee);
      Val base = eval(f, *m.base);
      const FnDecl* fn = methodOf(*base.inst, m.member.name);
      std::vector<Val> a = args(f, call);
      loc = here;
      if (base.inst == f.self) return inlineFn(f, *fn, base.inst, base.inst->module, &call, std::move(a));
      return callMethod(f, *fn, base.inst, &call, std::move(a));
    }
    const std::string& n = static_cast<const NameExpr&>(*call.callee).name;
    if (f.self)
      if (const FnDecl* fn = methodOf(*f.self, n)) {
        std::vector<Val> a = args(f, call);
        loc = here;
        return inlineFn(f, *fn, f.self, f.self->module, &call, std::move(a));
      }
    if (const sema::Item* item = program.lookup(*f.module, n); item && item->kind == sema::Item::Fn) {
      std::vector<Val> a = args(f, call);
      loc = here;
      return inlineFn(f, *item->fn, nullptr, item->module, &call, std::move(a));
    }
    return builtin(f, call, n);
  }

  std::vector<Val> args(Frame& f, const CallExpr& call) {
    std::vector<Val> out;
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

  Val reshape(const Val& x, std::vector<int64_t> shape) {
    return tensor(ReshapeOp::create(b, loc, tensorType(x.dtype, shape), x.v), x.dtype, shape, x.weak);
  }

  Val matmul(const Val& a, const Val& w) {
    const auto& p = a.shape;
    const auto& q = w.shape;
    std::vector<int64_t> shape;
    if (q.size() == 2) {
      shape.assign(p.begin(), p.end() - 1);
      shape.push_back(q.back());
    } else {
      std::vector<int64_t> batchA(p.begin(), p.end() - std::min<size_t>(2, p.size()));
      std::vector<int64_t> batchB(q.begin(), q.end() - 2);
      shape = broadcastShapes(batchA, batchB);
      shape.push_back(p.size() >= 2 ? p[p.size() - 2] : 1);
      shape.push_back(q.back());
    }
    auto op = MatmulOp::create(b, loc, tensorType(a.dtype, shape), a.v, w.v, nullptr);
    return tensor(op, a.dtype, shape);
  }

  Val builtin(Frame& f, const CallExpr& call, const std::string& n) {
    std::vector<const Expr*> pos;
    for (const Argument& a : call.args)
      if (a.name.name.empty()) pos.push_back(a.value.get());
    mlir::Location here = locOf(call.range);
    auto arg = [&](size_t k) {
      Val v = eval(f, *pos.at(k));
      loc = here;
      return v;
    };
    auto list = [&](size_t k) -> const ListExpr& { return static_cast<const ListExpr&>(*pos.at(k)); };
    if (n == "reshape") {
      Val x = arg(0);
      return reshape(x, shapeList(f, list(1).elems));
    }
    if (n == "permute") {
      Val x = arg(0);
      std::vector<int64_t> perm, shape;
      for (const auto& e : list(1).elems) perm.push_back(*eval(f, *e).staticInt);
      for (int64_t p : perm) shape.push_back(x.shape[p]);
      loc = here;
      return tensor(PermuteOp::create(b, loc, tensorType(x.dtype, shape), x.v, b.getDenseI64ArrayAttr(perm)),
                    x.dtype, shape);
    }
    if (n == "concat") {
      std::vector<Val> xs;
      for (size_t k = 0; k < pos.size(); ++k) xs.push_back(arg(k));
      Scalar dt = xs[0].dtype;
      for (const Val& x : xs)
        if (!x.weak) dt = x.dtype;
      int axis = axisArg(f, call, xs[0].rank());
      loc = here;
      std::vector<mlir::Value> values;
      std::vector<int64_t> shape = xs[0].shape;
      shape[axis] = 0;
      for (Val& x : xs) {
        x = cast(x, dt);
        values.push_back(x.v);
        shape[axis] += x.shape[axis];
      }
      return tensor(ConcatOp::create(b, loc, tensorType(dt, shape), values, b.getI64IntegerAttr(axis)), dt, shape);
    }
    if (n == "iota") {
      Scalar dt = dtypeOf(f, *call.generics[0]);
      int64_t len = *eval(f, *pos[0]).staticInt;
      loc = here;
      return iota(dt, {len}, 0);
    }
    if (n == "fill") {
      Scalar dt = dtypeOf(f, *call.generics[0]);
      std::vector<int64_t> shape = shapeList(f, list(0).elems);
      Val v = cast(arg(1), dt);
      return broadcastTo(v, shape);
    }
    if (n == "cast") {
      Val x = arg(0);
      return cast(x, dtypeOf(f, *call.generics[0]));
    }
    if (n == "select") {
      Val c = arg(0), x = arg(1), y = arg(2);
      // The branches join like a binary operation's operands.
      Scalar dt;
      if (x.weak && !y.weak) dt = y.dtype;
      else if (y.weak && !x.weak) dt = x.dtype;
      else if (x.weak && y.weak) dt = sema::isFloat(x.dtype) ? x.dtype : y.dtype;
      else dt = x.dtype;
      bool weak = x.weak && y.weak;
      x = cast(x, dt);
      y = cast(y, dt);
      std::vector<int64_t> shape = broadcastShapes(broadcastShapes(c.shape, x.shape), y.shape);
      return tensor(SelectOp::create(b, loc, tensorType(dt, shape), c.v, x.v, y.v), dt, shape, weak);
    }
    if (n == "exp" || n == "log" || n == "sin" || n == "cos" || n == "tanh" || n == "sqrt" ||
        n == "rsqrt" || n == "sigmoid" || n == "abs" || n == "floor")
      return unary(n, arg(0));
    if (n == "maximum" || n == "minimum" || n == "pow") {
      Val x = arg(0), y = arg(1);
      return binary(n, x, y, call.range);
    }
    if (n == "sum" || n == "mean" || n == "max" || n == "min" || n == "index_of_max") {
      Val x = arg(0);
      int axis = axisArg(f, call, x.rank());
      loc = here;
      return reduce(n, x, {axis}, keepdimsArg(call));
    }
    if (n == "matmul") {
      // A permuted weight stays a permute: canonicalization reads it row by row.
      Val a = arg(0), w = arg(1);
      return matmul(a, w);
    }
    if (n == "gather") {
      Val table = arg(0), ids = arg(1);
      std::vector<int64_t> shape = ids.shape;
      shape.insert(shape.end(), table.shape.begin() + 1, table.shape.end());
      // Row ids over the leading axes, an iota for each trailing axis of the table.
      int r = static_cast<int>(shape.size());
      std::vector<int64_t> idShape = ids.shape;
      idShape.insert(idShape.end(), table.shape.size() - 1, 1);
      std::vector<mlir::Value> indices = {reshape(ids, idShape).v};
      for (size_t k = 1; k < table.shape.size(); ++k) {
        std::vector<int64_t> s(r, 1);
        int axis = static_cast<int>(ids.shape.size() + k - 1);
        s[axis] = table.shape[k];
        indices.push_back(iota(Scalar::I64, s, axis).v);
      }
      return tensor(GatherOp::create(b, loc, tensorType(table.dtype, shape), table.v, indices),
                    table.dtype, shape);
    }
    if (n == "some") {
      Val v{Val::Some};
      v.elems.push_back(eval(f, *pos[0]));
      return v;
    }
    if (n == "unwrap_or") {
      Val o = eval(f, *pos[0]);
      return o.kind == Val::Some ? o.elems[0] : eval(f, *pos[1]);
    }
    if (n == "shard_sum" || n == "shard_max" || n == "shard_shared") return eval(f, *pos[0]);
    if (n == "shard_concat") {
      if (dim(f, *call.generics[0]) != 1) fail(call.range, "compiled CPU code runs on one device: Shards must be 1");
      return eval(f, *pos[0]);
    }
    if (n == "shard_index") return constantInt(Scalar::I64, 0);
    fail(call.range, fmt::format("unknown fn `{}`", n));
  }

  // ------------------------------------------------------------ entries
  const FnDecl& entryFn(const std::string& name) {
    const FnDecl* fn = methodOf(*root, name);
    if (!fn || !fn->isEntry)
      throw GenError(fmt::format("`{}` is not an entry of `{}`", name, root->block->name.name));
    return *fn;
  }

  EntryInstance addEntry(const std::string& name, const std::vector<TensorSpec>& argSpecs,
                         const std::map<std::string, int64_t>& given) {
    const FnDecl& fn = entryFn(name);
    if (argSpecs.size() != fn.params.size())
      throw GenError(fmt::format("entry `{}` takes {} arguments, {} were given", name, fn.params.size(),
                                 argSpecs.size()));
    EntryInstance out;
    out.entry = name;
    out.symbol = uniqueSymbol("linnet_" + name);
    std::vector<Val> probeArgs;
    for (const TensorSpec& s : argSpecs) probeArgs.push_back(tensor(nullptr, s.dtype, s.shape, s.weak));
    Frame none;
    Env env = bindCallEnv(none, fn, root->env, nullptr, probeArgs, given);
    for (const GenericParam& g : fn.generics)
      if (auto it = env.dims.find(g.name.name); it != env.dims.end()) out.generics[g.name.name] = it->second;
    // Each argument must have its declared type with the generics bound.
    Frame probe;
    probe.env = env;
    for (size_t k = 0; k < fn.params.size(); ++k) {
      TensorSpec want = declared(probe, fn.params[k]);
      bool literalFits = argSpecs[k].weak && (sema::isFloat(want.dtype) || !sema::isFloat(argSpecs[k].dtype));
      if (want.shape != argSpecs[k].shape || (want.dtype != argSpecs[k].dtype && !literalFits))
        throw GenError(fmt::format("entry `{}`: argument `{}` must be {}[{}], not {}[{}]", name, want.name,
                                   sema::name(want.dtype), fmt::join(want.shape, ", "),
                                   sema::name(argSpecs[k].dtype), fmt::join(argSpecs[k].shape, ", ")));
      out.inputs.push_back(want);
    }
    auto failed = guarded([&] { return sema::failedWhereClauses(fn, env, program.sources()); });
    if (!failed.empty()) throw GenError(fmt::format("entry `{}`: {}", name, fmt::join(failed, "; ")));

    // @linnet_E(inputs..., params..., states..., outputs...) on memrefs, the
    // C-callable face of the entry: reads become tensors (states writable,
    // so the caches are updated in their own buffers), and the results and
    // the states the entry wrote are materialized into their memrefs.
    loc = locOf(fn.name.range);
    b.setInsertionPointToEnd(module->getBody());
    auto memref = [&](const TensorSpec& s) { return mlir::MemRefType::get(s.shape, elem(s.dtype)); };
    std::vector<mlir::Type> types;
    for (const TensorSpec& s : out.inputs) types.push_back(memref(s));
    for (const TensorSpec& s : params) types.push_back(memref(s));
    for (const TensorSpec& s : states) types.push_back(memref(s));
    auto func = mlir::func::FuncOp::create(b, loc, out.symbol, b.getFunctionType(types, {}));
    func->setAttr("llvm.emit_c_interface", b.getUnitAttr());
    mlir::Block* block = func.addEntryBlock();
    b.setInsertionPointToStart(block);
    size_t firstStateArg = out.inputs.size() + params.size();
    std::vector<mlir::Value> tensors;
    for (size_t k = 0; k < types.size(); ++k) {
      mlir::Value m = block->getArgument(k);
      auto t = mlir::cast<mlir::MemRefType>(m.getType());
      auto tt = mlir::RankedTensorType::get(t.getShape(), t.getElementType());
      tensors.push_back(mlir::bufferization::ToTensorOp::create(b, loc, tt, m, /*restrict=*/true,
                                                                /*writable=*/k >= firstStateArg));
    }
    FnCtx fctx;
    size_t k = out.inputs.size();
    for (const ArgRef& r : paramRefs) {
      if (r.inst) fctx.params[r.inst][r.member] = tensors[k++];
      else fctx.stackedParams[r.stacked] = tensors[k++];
    }
    for (const ArgRef& r : stateRefs) {
      if (r.inst) fctx.states[r.inst][r.member] = tensors[k++];
      else fctx.stackedStates[r.stacked] = tensors[k++];
    }
    Frame f;
    f.self = root.get();
    f.module = root->module;
    f.env = env;
    f.fn = &fctx;
    f.scopes.emplace_back();
    for (size_t i = 0; i < fn.params.size(); ++i)
      bindName(f, fn.params[i].name.name, tensor(tensors[i], out.inputs[i].dtype, out.inputs[i].shape));
    execBody(f, fn.body);
    std::vector<Val> results;
    if (f.result) flatten(*f.result, results);
    b.setInsertionPointToEnd(block);
    loc = locOf(fn.name.range);
    int idx = 0;
    for (const Val& r : results) {
      if (r.kind != Val::TensorV) throw GenError(fmt::format("entry `{}` returns something other than tensors", name));
      TensorSpec spec{fmt::format("result{}", idx++), r.dtype, r.shape};
      out.outputs.push_back(spec);
      types.push_back(memref(spec));
      mlir::Value dest = block->addArgument(types.back(), loc);
      auto op = mlir::bufferization::MaterializeInDestinationOp::create(b, loc, mlir::TypeRange{}, r.v, dest);
      op.setWritable(true);
      op.setRestrict(true);
    }
    for (size_t i = 0; i < stateRefs.size(); ++i) {
      const ArgRef& r = stateRefs[i];
      mlir::Value v = r.inst ? fctx.states[r.inst][r.member] : fctx.stackedStates[r.stacked];
      if (v == tensors[firstStateArg + i]) continue;  // not written
      auto op = mlir::bufferization::MaterializeInDestinationOp::create(b, loc, mlir::TypeRange{}, v,
                                                                        block->getArgument(firstStateArg + i));
      op.setWritable(true);
    }
    mlir::func::ReturnOp::create(b, loc);
    func.setFunctionType(b.getFunctionType(types, {}));
    return out;
  }

  // The entries' param and state arguments, in tree order; the root's
  // sub-block arrays stacked.
  void collectArguments() {
    std::function<void(Instance&)> walk = [&](Instance& inst) {
      for (const TensorSpec& p : inst.params) {
        params.push_back({fullPath(inst, p.name), p.dtype, p.shape});
        paramRefs.push_back({&inst, p.name, ""});
      }
      for (const TensorSpec& st : inst.states) {
        states.push_back({fullPath(inst, st.name), st.dtype, st.shape});
        stateRefs.push_back({&inst, st.name, ""});
      }
      for (const MemberDecl& m : inst.block->members) {
        if (m.kind != MemberKind::Sub) continue;
        if (auto it = inst.subs.find(m.name.name); it != inst.subs.end()) walk(*it->second);
        auto arr = inst.arrays.find(m.name.name);
        if (arr == inst.arrays.end()) continue;
        if (&inst != root.get() || arr->second.empty()) {
          for (auto& el : arr->second) walk(*el);
          continue;
        }
        StackedArray sa;
        sa.name = m.name.name;
        sa.elements = &arr->second;
        int64_t count = static_cast<int64_t>(arr->second.size());
        std::string prefix = sa.name + ".0";
        eachInstance(*arr->second[0], [&](Instance& el) {
          std::string rel = el.path.substr(prefix.size());  // "" or ".attention"
          for (const TensorSpec& p : el.params) {
            std::string path = sa.name + ".*" + rel + "." + p.name;
            sa.params.push_back({&el, p.name, path, p});
            std::vector<int64_t> shape = {count};
            shape.insert(shape.end(), p.shape.begin(), p.shape.end());
            params.push_back({path, p.dtype, shape});
            paramRefs.push_back({nullptr, "", path});
          }
          for (const TensorSpec& st : el.states) {
            std::string path = sa.name + ".*" + rel + "." + st.name;
            sa.states.push_back({&el, st.name, path, st});
            std::vector<int64_t> shape = {count};
            shape.insert(shape.end(), st.shape.begin(), st.shape.end());
            states.push_back({path, st.dtype, shape});
            stateRefs.push_back({nullptr, "", path});
          }
        });
        stacked.push_back(std::move(sa));
      }
    };
    walk(*root);
  }

  TensorSpec declared(Frame& f, const ParamDecl& p) {
    const TypeExpr& t = *p.type;
    TensorSpec s;
    s.name = p.name.name;
    if (t.kind == TypeKind::Tensor) {
      s.dtype = dtypeOf(f, t.elem->name.name, t.range);
      s.shape = shapeList(f, t.dims);
    } else {
      s.dtype = dtypeOf(f, t.name.name, t.range);
    }
    return s;
  }
};

MLIRGen::MLIRGen(mlir::MLIRContext& context, const sema::Program& program)
    : impl_(std::make_unique<Impl>(context, program)) {
  const sema::Package& pkg = program.package();
  const sema::Item* item = program.lookup(*program.root(), pkg.rootBlock);
  if (!item || item->kind != sema::Item::Block)
    throw GenError(fmt::format("{}: no root block `{}`", pkg.dir, pkg.rootBlock));
  Env env;
  Frame f;
  for (const GenericParam& g : item->block->generics) {
    auto it = pkg.generics.find(g.name.name);
    if (g.kind.name == "Dim") {
      env.dims[g.name.name] = it != pkg.generics.end() && it->second.number ? *it->second.number
                                                                          : impl_->dim(f, *g.defaultValue);
    } else {
      env.dtypes[g.name.name] = it != pkg.generics.end() ? *sema::scalarNamed(it->second.dtype)
                                                         : impl_->dtypeOf(f, *g.defaultValue);
    }
  }
  impl_->root = impl_->instantiate(item->block, item->module, env, "");
  impl_->collectArguments();
}

MLIRGen::~MLIRGen() = default;

EntryInstance MLIRGen::addEntry(const std::string& name, const std::vector<TensorSpec>& args,
                                const std::map<std::string, int64_t>& generics) {
  return impl_->addEntry(name, args, generics);
}

std::vector<TensorSpec> MLIRGen::entryParams(const std::string& name,
                                             const std::map<std::string, int64_t>& generics) const {
  const FnDecl& fn = impl_->entryFn(name);
  Frame f;
  f.env = impl_->root->env;
  for (const auto& [n, v] : generics) f.env.dims[n] = v;
  for (const GenericParam& g : fn.generics)
    if (g.kind.name == "Dim" && !f.env.dims.count(g.name.name)) {
      if (!g.defaultValue)
        throw GenError(fmt::format("entry `{}` needs a value for its generic `{}` (--generic {}=N)", name,
                                   g.name.name, g.name.name));
      f.env.dims[g.name.name] = impl_->dim(impl_->empty_, *g.defaultValue);
    }
  std::vector<TensorSpec> out;
  for (const ParamDecl& p : fn.params) out.push_back(impl_->declared(f, p));
  return out;
}

const std::vector<TensorSpec>& MLIRGen::params() const { return impl_->params; }
const std::vector<TensorSpec>& MLIRGen::states() const { return impl_->states; }
mlir::ModuleOp MLIRGen::module() { return *impl_->module; }

}  // namespace linnet::ir
