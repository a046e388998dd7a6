// MLIRGen: the elaborated program translated into the `linnet` dialect.
// This file: entries and their arguments (the root's sub-block arrays
// stacked), statements, loops and calls. Expressions: mlirgen_exprs.cpp.
#include "ir/mlirgen.h"

#include "autodiff/gradient.h"
#include "ir/mlirgen_impl.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <set>

namespace linnet::ir {

using elab::StmtKind;

mlir::Type elementType(mlir::MLIRContext& c, Scalar s) {
  mlir::Builder b(&c);
  switch (s) {
    case Scalar::F32: return b.getF32Type();
    case Scalar::BF16: return b.getBF16Type();
    case Scalar::F16: return b.getF16Type();
    case Scalar::I32: return b.getI32Type();
    case Scalar::I64: return b.getI64Type();
    case Scalar::Bool: return b.getI1Type();
    // Storage types of checkpoints: the language never computes in them.
    case Scalar::F64: return b.getF64Type();
    case Scalar::I8: case Scalar::U8: return b.getI8Type();
    case Scalar::I16: return b.getI16Type();
  }
  return {};
}

namespace {
template <typename Fn>
void eachInstance(const Instance& inst, Fn fn) {
  fn(inst);
  for (const auto& [n, sub] : inst.subs) eachInstance(*sub, fn);
  for (const auto& [n, list] : inst.arrays)
    for (const auto& x : list) eachInstance(*x, fn);
}
}  // namespace

MLIRGen::Impl::Impl(mlir::MLIRContext& c, const sema::Program& p)
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

mlir::Location MLIRGen::Impl::locOf(SourceRange r) {
  if (!r.valid()) return mlir::UnknownLoc::get(&ctx);
  const SourceFile& f = program.source().sources().file(r.file);
  LineCol lc = f.lineCol(r.begin);
  return mlir::FileLineColLoc::get(&ctx, f.path(), lc.line, lc.col);
}

std::string MLIRGen::Impl::uniqueSymbol(std::string base) {
  for (char& c : base)
    if (!isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  int n = symbolUses[base]++;
  return n == 0 ? base : fmt::format("{}_{}", base, n);
}

void MLIRGen::Impl::flatten(const Val& v, std::vector<Val>& out) {
  if (v.kind == Val::Tuple) {
    for (const Val& e : v.elems) flatten(e, out);
    return;
  }
  out.push_back(v);
}

// ------------------------------------------------------------ statements

void MLIRGen::Impl::run(Frame& f, const elab::Body& body) {
  for (const elab::Stmt* s : body) {
    exec(f, *s);
    if (f.result) return;
  }
}

void MLIRGen::Impl::exec(Frame& f, const elab::Stmt& s) {
  loc = locOf(s.range);
  switch (s.kind) {
    case StmtKind::Let:
    case StmtKind::Assign: f.slots[s.slot] = eval(f, *s.value); return;
    case StmtKind::LetTuple: {
      Val v = eval(f, *s.value);
      for (size_t i = 0; i < s.slots.size(); ++i) f.slots[s.slots[i]] = v.elems.at(i);
      return;
    }
    case StmtKind::AssignState: f.fn->states[f.self][s.name] = eval(f, *s.value).t; return;
    case StmtKind::Return: f.result = s.value ? eval(f, *s.value) : Val::ofKind(Val::Tuple); return;
    case StmtKind::Eval: eval(f, *s.value); return;
    case StmtKind::ForArray: {
      Val array = eval(f, *s.value);
      for (StackedArray& sa : stacked)
        if (sa.elements == array.array) return stackedLoop(f, s, sa);
      elab::forEachElement(s, array, f, [&](const elab::Body& body) { run(f, body); });
      return;
    }
    case StmtKind::While: whileLoop(f, s); return;
  }
}

// ------------------------------------------------------------ loops

std::vector<Carried> MLIRGen::Impl::carriedValues(Frame& f, const std::vector<elab::SlotId>& vars) {
  std::vector<Carried> carried;
  for (elab::SlotId s : vars)
    if (f.slots[s].kind == Val::TensorV && f.slots[s].t) carried.push_back(Carried{s, nullptr, {}, false});
  for (auto& [inst, m] : f.fn->states)
    for (auto& [n, v] : m) carried.push_back(Carried{-1, inst, n, false});
  for (auto& [path, v] : f.fn->stackedStates) carried.push_back({-1, nullptr, path, true});
  return carried;
}
mlir::Value MLIRGen::Impl::getCarried(Frame& f, const Carried& c) {
  if (c.stackedState) return f.fn->stackedStates[c.name];
  return c.inst ? f.fn->states[c.inst][c.name] : f.slots[c.slot].t;
}
void MLIRGen::Impl::setCarried(Frame& f, const Carried& c, mlir::Value v) {
  if (c.stackedState) f.fn->stackedStates[c.name] = v;
  else if (c.inst) f.fn->states[c.inst][c.name] = v;
  else f.slots[c.slot].t = v;
}

// `static for layer in layers` over a stacked array: one scf.for over the
// layer index, carrying every `var` in scope and every state. Each
// iteration slices its layer's params out of the stacked tensors, runs the
// body once with element 0's instances standing for that layer; methods of
// the layer take the stacked tensors and insert the states they wrote.
void MLIRGen::Impl::stackedLoop(Frame& f, const elab::Stmt& s, StackedArray& sa) {
  mlir::Location at = locOf(s.range);
  std::vector<Carried> carried = carriedValues(f, s.varsInScope);
  mlir::scf::ForOp loop = beginFor(f, carried, static_cast<int64_t>(sa.elements->size()), at);
  mlir::Value iv = loop.getInductionVar();
  if (s.reverse) {  // layers last to first: L - 1 - iv
    mlir::Value last = mlir::arith::ConstantIndexOp::create(b, loc, static_cast<int64_t>(sa.elements->size()) - 1);
    iv = mlir::arith::SubIOp::create(b, loc, last, iv);
  }
  // The layer's params, for code in the loop that reads them directly
  // (unused slices fold away).
  for (auto& p : sa.params) f.fn->params[p.inst][p.member] = sliceAt(f.fn->stackedParams.at(p.path), iv, p.spec);
  mlir::Value outerIndex = f.fn->layerIndex;
  f.fn->layerIndex = iv;
  f.slots[s.slot] = Val::block((*sa.elements)[0].get());
  run(f, s.body);
  f.fn->layerIndex = outerIndex;
  if (f.result) fail(s.range, "compiled code cannot `return` from inside a loop over layers yet");
  loc = at;
  // Element 0's instances stand for no layer outside the loop.
  eachInstance(*(*sa.elements)[0], [&](const Instance& inst) { f.fn->params.erase(&inst); });
  endLoop(f, carried, loop, at);
  outlineLargeBody(loop, sa.name + "_layer");
}

// An scf.for of `count` trips carrying `carried` (their values now), the
// builder inside its body with the carried values read from its arguments.
mlir::scf::ForOp MLIRGen::Impl::beginFor(Frame& f, const std::vector<Carried>& carried, int64_t count,
                                         mlir::Location at) {
  std::vector<mlir::Value> init;
  for (const Carried& c : carried) init.push_back(getCarried(f, c));
  loc = at;
  mlir::Value lo = mlir::arith::ConstantIndexOp::create(b, loc, 0);
  mlir::Value hi = mlir::arith::ConstantIndexOp::create(b, loc, count);
  mlir::Value one = mlir::arith::ConstantIndexOp::create(b, loc, 1);
  auto loop = mlir::scf::ForOp::create(b, loc, lo, hi, one, init);
  b.setInsertionPointToStart(loop.getBody());
  for (size_t k = 0; k < carried.size(); ++k) setCarried(f, carried[k], loop.getRegionIterArgs()[k]);
  return loop;
}

// A loop body's end: it yields the carried values, and after the loop
// they are its results.
void MLIRGen::Impl::endLoop(Frame& f, const std::vector<Carried>& carried, mlir::Operation* loop,
                            mlir::Location at) {
  std::vector<mlir::Value> next;
  for (const Carried& c : carried) next.push_back(getCarried(f, c));
  loc = at;
  mlir::scf::YieldOp::create(b, loc, next);
  b.setInsertionPointAfter(loop);
  for (size_t k = 0; k < carried.size(); ++k) setCarried(f, carried[k], loop->getResult(k));
}

// A loop body of a layer's size written in place (a derived gradient's,
// whose layer code is inlined) becomes a function of its own, called once
// per iteration and never inlined, as a layer's method is: LLVM's loop
// passes cost more than linearly in a function's size, and one layer at a
// time keeps a gradient's build time that of a layer.
void MLIRGen::Impl::outlineLargeBody(mlir::scf::ForOp loop, const std::string& name) {
  constexpr size_t kLargeBody = 64;  // ops; a loop that calls a layer's method has a handful
  if (loop.getBody()->getOperations().size() <= kLargeBody) return;
  mlir::IRRewriter rewriter(&ctx);
  mlir::func::CallOp call;
  auto fn = mlir::outlineSingleBlockRegion(rewriter, loop.getLoc(), loop.getRegion(), uniqueSymbol(name), &call);
  if (mlir::failed(fn)) return;  // kept in place: correct, only slower to build
  fn->setPrivate();
  (*fn)->setAttr("llvm.no_inline", b.getUnitAttr());
}

// A runtime loop: an scf.while carrying every `var` in scope and every
// state of the function, since the body may assign any of them. One whose
// trip count is known is an scf.for instead: the host then never reads a
// tensor to branch (which the cuda target cannot let it do).
void MLIRGen::Impl::whileLoop(Frame& f, const elab::Stmt& s) {
  if (s.tripCount >= 0) return countedLoop(f, s);
  std::vector<Carried> carried = carriedValues(f, s.varsInScope);
  std::vector<mlir::Value> init;
  std::vector<mlir::Type> types;
  std::vector<mlir::Location> locs;
  for (const Carried& c : carried) {
    init.push_back(getCarried(f, c));
    types.push_back(init.back().getType());
    locs.push_back(loc);
  }
  mlir::Location at = locOf(s.range);
  auto loop = mlir::scf::WhileOp::create(b, at, types, init);
  mlir::Block* before = b.createBlock(&loop.getBefore(), {}, types, locs);
  for (size_t k = 0; k < carried.size(); ++k) setCarried(f, carried[k], before->getArgument(k));
  mlir::Value c = eval(f, *s.value).t;
  loc = at;
  mlir::Value flag = mlir::tensor::ExtractOp::create(b, loc, c, mlir::ValueRange{});
  std::vector<mlir::Value> forward;
  for (const Carried& x : carried) forward.push_back(getCarried(f, x));
  mlir::scf::ConditionOp::create(b, loc, flag, forward);
  mlir::Block* after = b.createBlock(&loop.getAfter(), {}, types, locs);
  for (size_t k = 0; k < carried.size(); ++k) setCarried(f, carried[k], after->getArgument(k));
  run(f, s.body);
  if (f.result) fail(s.range, "compiled code cannot `return` from inside a `while` loop yet");
  endLoop(f, carried, loop, at);
}

void MLIRGen::Impl::countedLoop(Frame& f, const elab::Stmt& s) {
  mlir::Location at = locOf(s.range);
  std::vector<Carried> carried = carriedValues(f, s.varsInScope);
  mlir::scf::ForOp loop = beginFor(f, carried, s.tripCount, at);
  // The counter from the induction variable: an index the host computes.
  mlir::Value count = mlir::arith::IndexCastOp::create(b, loc, b.getI32Type(), loop.getInductionVar());
  f.slots[s.slot].t = mlir::tensor::FromElementsOp::create(b, loc, mlir::RankedTensorType::get({}, b.getI32Type()),
                                                           mlir::ValueRange{count});
  run(f, s.body);
  if (f.result) fail(s.range, "compiled code cannot `return` from inside a `while` loop yet");
  endLoop(f, carried, loop, at);
}

// Layer `index` of a stacked tensor, and a layer put back: offsets
// [index, 0, ...], sizes [1, shape...], unit strides.
mlir::Value MLIRGen::Impl::sliceAt(mlir::Value all, mlir::Value index, const TensorSpec& one) {
  llvm::SmallVector<mlir::OpFoldResult> offsets(one.shape.size() + 1, b.getIndexAttr(0)), sizes, strides;
  offsets[0] = index;
  sizes.push_back(b.getIndexAttr(1));
  for (int64_t d : one.shape) sizes.push_back(b.getIndexAttr(d));
  strides.assign(one.shape.size() + 1, b.getIndexAttr(1));
  return mlir::tensor::ExtractSliceOp::create(b, loc, tensorType(one.dtype, one.shape), all, offsets, sizes, strides);
}
mlir::Value MLIRGen::Impl::insertAt(mlir::Value one, mlir::Value all, mlir::Value index, const TensorSpec& spec) {
  llvm::SmallVector<mlir::OpFoldResult> offsets(spec.shape.size() + 1, b.getIndexAttr(0)), sizes, strides;
  offsets[0] = index;
  sizes.push_back(b.getIndexAttr(1));
  for (int64_t d : spec.shape) sizes.push_back(b.getIndexAttr(d));
  strides.assign(spec.shape.size() + 1, b.getIndexAttr(1));
  return mlir::tensor::InsertSliceOp::create(b, loc, one, all, offsets, sizes, strides);
}

// ------------------------------------------------------------ calls

StackedArray* MLIRGen::Impl::stackedOf(const Instance* inst) {
  for (StackedArray& sa : stacked)
    if ((*sa.elements)[0].get() == inst) return &sa;
  return nullptr;
}

// A layer of a stacked array gets a function of its own per function
// instance, called with the stacked params and states and the layer's
// index; any other block's method, and every free fn, is generated inline.
Val MLIRGen::Impl::call(Frame& f, const elab::Expr& e) {
  const elab::Expr* receiver = e.operand(0);
  const Instance* self = receiver ? eval(f, *receiver).inst : nullptr;
  std::vector<Val> args;
  for (size_t k = 1; k < e.operands.size(); ++k) args.push_back(eval(f, *e.operand(k)));
  loc = locOf(e.range);
  if (self && self != f.self)
    if (StackedArray* sa = stackedOf(self)) return callLayerMethod(f, *e.callee, *sa, args, e.range);
  return inlineFn(f, *e.callee, self, std::move(args));
}

Val MLIRGen::Impl::inlineFn(Frame& caller, const elab::FnInstance& fn, const Instance* self, std::vector<Val> args) {
  Frame f;
  f.self = self;
  f.fn = caller.fn;
  f.slots.resize(fn.slots.size());
  for (size_t k = 0; k < fn.params.size(); ++k) f.slots[fn.params[k]] = std::move(args[k]);
  run(f, fn.body);
  if (!f.result) return Val::ofKind(Val::Tuple);
  return std::move(*f.result);
}

Val MLIRGen::Impl::callLayerMethod(Frame& caller, const elab::FnInstance& fn, StackedArray& sa,
                                   const std::vector<Val>& args, SourceRange at) {
  if (!caller.fn->layerIndex) fail(at, "compiled code calls a layer's methods only inside `static for` over its array");
  for (const Val& a : args)
    if (a.kind != Val::TensorV) fail(at, "compiled code passes only tensors to a layer's method for now");
  auto it = methods.find(&fn);
  if (it == methods.end()) it = methods.emplace(&fn, emitLayerMethod(fn, sa, args)).first;
  MethodFn& m = it->second;
  std::vector<mlir::Value> operands;
  for (auto& p : sa.params) operands.push_back(caller.fn->stackedParams.at(p.path));
  for (auto& st : sa.states) operands.push_back(caller.fn->stackedStates.at(st.path));
  operands.push_back(caller.fn->layerIndex);
  for (const Val& a : args) operands.push_back(a.t);
  auto callOp = mlir::func::CallOp::create(b, loc, m.op, operands);
  std::vector<Val> results;
  for (int k = 0; k < m.resultCount; ++k) results.push_back(Val::of(callOp.getResult(k)));
  for (size_t k = 0; k < m.modifiedStates.size(); ++k)
    caller.fn->stackedStates[sa.states[m.modifiedStates[k]].path] = callOp.getResult(m.resultCount + k);
  if (!m.tuple) return m.resultCount ? results[0] : Val::ofKind(Val::Tuple);
  Val t = Val::ofKind(Val::Tuple);
  t.elems = std::move(results);
  return t;
}

// (stacked params..., stacked states..., layer index, args...) ->
// (results..., the stacked states it wrote...). The layer's own params and
// states are slices at the index: views with static strides, so the code
// that reads them is the same as for a single layer.
MethodFn MLIRGen::Impl::emitLayerMethod(const elab::FnInstance& fn, StackedArray& sa, const std::vector<Val>& args) {
  mlir::OpBuilder::InsertionGuard guard(b);
  mlir::Location saved = loc;
  loc = locOf(fn.decl->name.range);
  const Instance* inst = (*sa.elements)[0].get();
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
  for (const Val& a : args) inputs.push_back(a.t.getType());
  b.setInsertionPointToEnd(module->getBody());
  auto func = mlir::func::FuncOp::create(b, loc, uniqueSymbol(inst->block->name.name + "." + fn.decl->name.name),
                                         b.getFunctionType(inputs, {}));
  func.setPrivate();
  // A layer's code exists once: LLVM must not copy it into each call site.
  func->setAttr("llvm.no_inline", b.getUnitAttr());
  mlir::Block* entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  mlir::Value index = entry->getArgument(sa.params.size() + sa.states.size());
  FnCtx fctx;
  size_t k = 0;
  for (auto& p : sa.params) fctx.params[p.inst][p.member] = sliceAt(entry->getArgument(k++), index, p.spec);
  std::vector<mlir::Value> initialStates;
  for (auto& st : sa.states) {
    initialStates.push_back(sliceAt(entry->getArgument(k++), index, st.spec));
    fctx.states[st.inst][st.member] = initialStates.back();
  }
  ++k;  // the index
  Frame f;
  f.self = inst;
  f.fn = &fctx;
  f.slots.resize(fn.slots.size());
  for (size_t i = 0; i < fn.params.size(); ++i) f.slots[fn.params[i]] = Val::of(entry->getArgument(k++));
  run(f, fn.body);
  MethodFn m;
  m.op = func;
  std::vector<Val> results;
  if (f.result) {
    m.tuple = f.result->kind == Val::Tuple;
    flatten(*f.result, results);
  }
  std::vector<mlir::Value> returned;
  for (const Val& r : results) {
    if (r.kind != Val::TensorV) fail(fn.decl->name.range, "compiled methods return tensors or tuples of tensors");
    returned.push_back(r.t);
  }
  m.resultCount = static_cast<int>(results.size());
  // Only the states the method writes come back, inserted at the index.
  for (size_t i = 0; i < sa.states.size(); ++i) {
    mlir::Value v = fctx.states[sa.states[i].inst][sa.states[i].member];
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

// ------------------------------------------------------------ entries

// The entries' param and state arguments, in tree order; the root's
// sub-block arrays stacked.
void MLIRGen::Impl::collectArguments() {
  const Instance& root = program.root();
  std::function<void(const Instance&)> walk = [&](const Instance& inst) {
    for (const elab::Member& p : inst.params) {
      params.push_back(specOf(inst.pathOf(p.name), p.type));
      paramRefs.push_back({&inst, p.name, ""});
    }
    for (const elab::Member& st : inst.states) {
      states.push_back(specOf(inst.pathOf(st.name), st.type));
      stateRefs.push_back({&inst, st.name, ""});
    }
    for (const syntax::MemberDecl& m : inst.block->members) {
      if (m.kind != syntax::MemberKind::Sub) continue;
      if (auto it = inst.subs.find(m.name.name); it != inst.subs.end()) walk(*it->second);
      auto arr = inst.arrays.find(m.name.name);
      if (arr == inst.arrays.end()) continue;
      if (&inst != &root || arr->second.empty()) {
        for (auto& el : arr->second) walk(*el);
        continue;
      }
      StackedArray sa;
      sa.name = m.name.name;
      sa.elements = &arr->second;
      int64_t count = static_cast<int64_t>(arr->second.size());
      std::string prefix = sa.name + ".0";
      auto stackedSpec = [&](const std::string& path, const elab::TensorType& one) {
        TensorSpec s = specOf(path, one);
        s.shape.insert(s.shape.begin(), count);
        return s;
      };
      for (size_t k = 0; k < arr->second.size(); ++k) {
        std::string at = sa.name + "." + std::to_string(k);
        eachInstance(*arr->second[k], [&](const Instance& el) {
          elementOf[&el] = {stacked.size(), static_cast<int64_t>(k), el.path.substr(at.size())};
        });
      }
      eachInstance(*arr->second[0], [&](const Instance& el) {
        std::string rel = el.path.substr(prefix.size());  // "" or ".attention"
        for (const elab::Member& p : el.params) {
          std::string path = sa.name + ".*" + rel + "." + p.name;
          sa.params.push_back({&el, p.name, path, specOf(p.name, p.type)});
          params.push_back(stackedSpec(path, p.type));
          paramRefs.push_back({nullptr, "", path});
        }
        for (const elab::Member& st : el.states) {
          std::string path = sa.name + ".*" + rel + "." + st.name;
          sa.states.push_back({&el, st.name, path, specOf(st.name, st.type)});
          states.push_back(stackedSpec(path, st.type));
          stateRefs.push_back({nullptr, "", path});
        }
      });
      stacked.push_back(std::move(sa));
    }
  };
  walk(root);
}

elab::EntryInstance MLIRGen::Impl::instantiate(const std::string& name, const std::vector<TensorSpec>& argSpecs,
                                               const std::map<std::string, int64_t>& given) {
  std::vector<elab::TensorType> types;
  for (const TensorSpec& s : argSpecs) types.push_back({s.dtype, s.shape, s.weak});
  try {
    return program.entry(name, types, given);
  } catch (const elab::Error& e) {
    throw GenError(e.what());
  }
}

EntryInstance MLIRGen::Impl::addEntry(const std::string& name, const std::vector<TensorSpec>& argSpecs,
                                      const std::map<std::string, int64_t>& given) {
  elab::EntryInstance inst = instantiate(name, argSpecs, given);
  const syntax::FnDecl& decl = *inst.fn->decl;
  EntryInstance out;
  out.entry = name;
  out.generics = inst.generics;
  for (size_t k = 0; k < decl.params.size(); ++k) out.inputs.push_back(specOf(decl.params[k].name.name, inst.inputs[k]));
  emitEntryFunction(*inst.fn, "linnet_" + name, out);
  return out;
}

// The entry's gradient (autodiff/gradient.h) as an entry of its own:
// inputs the entry's and, for a value of more than one element, a
// `cotangent`; outputs `value` and one per param of `wrt`, named by its path.
EntryInstance MLIRGen::Impl::addGradient(const std::string& name, const std::vector<TensorSpec>& argSpecs,
                                         const std::map<std::string, int64_t>& given,
                                         const std::vector<std::string>& wrt, autodiff::Policy tape,
                                         int64_t lowRank, bool attentionKernel) {
  elab::EntryInstance inst = instantiate(name, argSpecs, given);
  std::set<std::string> chosen(wrt.begin(), wrt.end());
  autodiff::Gradient g;
  const auto wanted = [&](const std::string& path) { return wrt.empty() || chosen.count(path) > 0; };
  try {
    g = autodiff::deriveGradient(program, inst, wanted, false, tape, lowRank, attentionKernel);
  } catch (const elab::Error& e) {
    throw GenError(e.what());
  }
  for (const elab::Instance* i : program.instances())
    for (const elab::Member& m : i->params)
      if (sema::isFloat(m.type.dtype)) chosen.erase(i->pathOf(m.name));
  if (!chosen.empty())
    throw GenError(fmt::format("--wrt `{}`: the model has no float param of that path", *chosen.begin()));
  const syntax::FnDecl& decl = *inst.fn->decl;
  EntryInstance out;
  out.entry = name + ".gradient";  // its own artifact entry, not mistaken for the entry
  out.generics = inst.generics;
  out.gradient = true;
  for (size_t k = 0; k < g.fn->params.size(); ++k) {
    const elab::Slot& slot = g.fn->slots[static_cast<size_t>(g.fn->params[k])];
    // After the entry's: the cotangent and a low-rank gradient's factors, by their slots' names.
    out.inputs.push_back(specOf(k < decl.params.size() ? decl.params[k].name.name : slot.name, slot.type.tensor));
  }
  emitEntryFunction(*g.fn, "linnet_gradient_" + name, out);
  out.outputs.at(0).name = "value";
  for (size_t k = 0; k < g.params.size(); ++k) out.outputs.at(1 + k).name = g.params[k];
  return out;
}

// @linnet_E(inputs..., params..., states..., outputs...) on memrefs, the
// C-callable face of the entry: reads become tensors (states writable, so
// the caches are updated in their own buffers), and the results and the
// states the entry wrote are materialized into their memrefs.
void MLIRGen::Impl::emitEntryFunction(const elab::FnInstance& fn, const std::string& symbolBase, EntryInstance& out) {
  out.symbol = uniqueSymbol(symbolBase);
  loc = locOf(fn.decl->name.range);
  b.setInsertionPointToEnd(module->getBody());
  auto memref = [&](const TensorSpec& s) { return mlir::MemRefType::get(s.shape, elem(s.dtype)); };
  std::vector<mlir::Type> argTypes;
  for (const TensorSpec& s : out.inputs) argTypes.push_back(memref(s));
  for (const TensorSpec& s : params) argTypes.push_back(memref(s));
  for (const TensorSpec& s : states) argTypes.push_back(memref(s));
  auto func = mlir::func::FuncOp::create(b, loc, out.symbol, b.getFunctionType(argTypes, {}));
  func->setAttr("llvm.emit_c_interface", b.getUnitAttr());
  mlir::Block* block = func.addEntryBlock();
  b.setInsertionPointToStart(block);
  size_t firstStateArg = out.inputs.size() + params.size();
  std::vector<mlir::Value> tensors;
  for (size_t k = 0; k < argTypes.size(); ++k) {
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
  f.self = &program.root();
  f.fn = &fctx;
  f.slots.resize(fn.slots.size());
  for (size_t i = 0; i < fn.params.size(); ++i) f.slots[fn.params[i]] = Val::of(tensors[i]);
  run(f, fn.body);
  std::vector<Val> results;
  if (f.result) flatten(*f.result, results);
  std::vector<elab::TensorType> resultTypes;
  std::function<void(const elab::Type&)> flattenType = [&](const elab::Type& t) {
    if (t.kind == elab::Type::Tuple)
      for (const elab::Type& e : t.elems) flattenType(e);
    else
      resultTypes.push_back(t.tensor);
  };
  flattenType(fn.result);
  b.setInsertionPointToEnd(block);
  loc = locOf(fn.decl->name.range);
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i].kind != Val::TensorV)
      throw GenError(fmt::format("entry `{}` returns something other than tensors", out.entry));
    TensorSpec spec = specOf(fmt::format("result{}", i), resultTypes.at(i));
    out.outputs.push_back(spec);
    argTypes.push_back(memref(spec));
    mlir::Value dest = block->addArgument(argTypes.back(), loc);
    auto op = mlir::bufferization::MaterializeInDestinationOp::create(b, loc, mlir::TypeRange{}, results[i].t, dest);
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
  func.setFunctionType(b.getFunctionType(argTypes, {}));
}

// ------------------------------------------------------------ the public face

MLIRGen::MLIRGen(mlir::MLIRContext& context, const sema::Program& program) {
  try {
    impl_ = std::make_unique<Impl>(context, program);
  } catch (const elab::Error& e) {
    throw GenError(e.what());
  }
  impl_->collectArguments();
}

MLIRGen::~MLIRGen() = default;

// An entry that cannot be generated leaves nothing behind: neither its
// half-built function nor the layer functions made for it, so the module
// stays valid for the entries generated before and after.
template <typename Add>
EntryInstance MLIRGen::atomically(Add add) {
  mlir::Block* body = impl_->module->getBody();
  mlir::Operation* last = body->empty() ? nullptr : &body->back();
  std::map<const elab::FnInstance*, MethodFn> methods = impl_->methods;
  try {
    return add();
  } catch (...) {
    while (!body->empty() && &body->back() != last) body->back().erase();
    impl_->methods = std::move(methods);
    throw;
  }
}

EntryInstance MLIRGen::addEntry(const std::string& name, const std::vector<TensorSpec>& args,
                                const std::map<std::string, int64_t>& generics) {
  return atomically([&] { return impl_->addEntry(name, args, generics); });
}

EntryInstance MLIRGen::addGradient(const std::string& name, const std::vector<TensorSpec>& args,
                                   const std::map<std::string, int64_t>& generics,
                                   const std::vector<std::string>& wrt, autodiff::Policy tape, int64_t lowRank,
                                   bool attentionKernel) {
  return atomically([&] { return impl_->addGradient(name, args, generics, wrt, tape, lowRank, attentionKernel); });
}

std::vector<TensorSpec> MLIRGen::entryParams(const std::string& name,
                                             const std::map<std::string, int64_t>& generics) const {
  try {
    const syntax::FnDecl& fn = impl_->program.entryDecl(name);
    std::vector<elab::TensorType> types = impl_->program.entryParams(name, generics);
    std::vector<TensorSpec> out;
    for (size_t k = 0; k < types.size(); ++k) out.push_back(specOf(fn.params[k].name.name, types[k]));
    return out;
  } catch (const elab::Error& e) {
    throw GenError(e.what());
  }
}

const std::vector<TensorSpec>& MLIRGen::params() const { return impl_->params; }
const std::vector<TensorSpec>& MLIRGen::states() const { return impl_->states; }
mlir::ModuleOp MLIRGen::module() { return *impl_->module; }

}  // namespace linnet::ir
