// The reference backend as an evaluator of the elaborated program: one
// handler per expression and statement kind, each a kernel of tensor.h.
// Types, casts and calls were all decided by the elaborator.
#include "targets/reference/model.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "autodiff/gradient.h"
#include "elaborate/runtime_value.h"
#include "targets/reference/attention.h"

namespace linnet::reference {

namespace {

using elab::ExprKind;
using elab::StmtKind;

using RValue = elab::RuntimeValue<Tensor>;

struct Frame {
  const elab::Instance* self = nullptr;
  std::vector<RValue> slots;
  std::optional<RValue> result;
};

// The params and states of one instance.
struct Storage {
  std::map<std::string, Tensor> params, states;
};

}  // namespace

struct Model::Impl {
  elab::Program program;
  std::vector<Storage> storage;  // by instance id
  std::map<std::string, Model::Observer> watches;  // Model::watch; usually empty
  // Gradients derived so far, by entry instance, params and inputs: a
  // training loop asks for the same one every step.
  std::map<std::string, autodiff::Gradient> gradients;

  const autodiff::Gradient& gradientOf(const elab::EntryInstance& entry,
                                       const std::function<bool(const std::string&)>& wrt, bool inputs,
                                       autodiff::Policy policy, int64_t lowRank) {
    std::string key = entry.fn->key + (inputs ? "|inputs" : "|") + autodiff::policyName(policy) + "|rank" +
                      std::to_string(lowRank);
    for (const elab::Instance* inst : program.instances())
      for (const elab::Member& m : inst->params)
        if (wrt(inst->pathOf(m.name))) key += "|" + inst->pathOf(m.name);
    auto it = gradients.find(key);
    if (it == gradients.end()) it = gradients.emplace(key, autodiff::deriveGradient(program, entry, wrt, inputs, policy, lowRank)).first;
    return it->second;
  }

  explicit Impl(const sema::Program& p) : program(p), storage(program.instances().size()) {
    for (const elab::Instance* inst : program.instances()) {
      for (const elab::Member& m : inst->params) storage[inst->id].params[m.name] = shell(m.type);
      for (const elab::Member& m : inst->states) storage[inst->id].states[m.name] = shell(m.type);
    }
  }
  // Shape and dtype only: the data comes with bind() and resetState().
  static Tensor shell(const elab::TensorType& t) {
    Tensor x;
    x.dtype = t.dtype;
    x.shape = t.shape;
    return x;
  }

  // The param (or state) of that path, or EvalError naming it.
  Tensor& member(const std::string& path, bool state) {
    for (const elab::Instance* inst : program.instances())
      for (const elab::Member& m : state ? inst->states : inst->params)
        if (inst->pathOf(m.name) == path) return (state ? storage[inst->id].states : storage[inst->id].params).at(m.name);
    throw EvalError(fmt::format("the model has no {} `{}`", state ? "state" : "param", path));
  }

  [[noreturn]] void fail(SourceRange at, const std::string& message) {
    throw EvalError(fmt::format("{}: {}", program.where(at), message));
  }

  void observe(const syntax::Ident* name, const RValue& v) {
    if (watches.empty() || !name || v.kind != RValue::TensorV) return;
    if (auto it = watches.find(name->name); it != watches.end()) it->second(v.t, program.where(name->range));
  }

  // ------------------------------------------------------------ calls and statements
  RValue callFn(const elab::FnInstance& fn, const elab::Instance* self, std::vector<RValue> args) {
    Frame f;
    f.self = self;
    f.slots.resize(fn.slots.size());
    for (size_t k = 0; k < fn.params.size(); ++k) f.slots[fn.params[k]] = std::move(args[k]);
    run(f, fn.body);
    if (!f.result) return RValue::ofKind(RValue::Tuple);
    return std::move(*f.result);
  }

  void run(Frame& f, const elab::Body& body) {
    for (const elab::Stmt* s : body) {
      exec(f, *s);
      if (f.result) return;
    }
  }

  void exec(Frame& f, const elab::Stmt& s) {
    switch (s.kind) {
      case StmtKind::Let:
      case StmtKind::Assign:
        f.slots[s.slot] = eval(f, *s.value);
        if (s.kind == StmtKind::Let) observe(s.binds, f.slots[s.slot]);
        return;
      case StmtKind::LetTuple: {
        RValue v = eval(f, *s.value);
        for (size_t i = 0; i < s.slots.size(); ++i) {
          observe(s.bindsEach[i], v.elems.at(i));
          f.slots[s.slots[i]] = v.elems.at(i);
        }
        return;
      }
      case StmtKind::AssignState:
        storage[f.self->id].states.at(s.name) = eval(f, *s.value).t;
        return;
      case StmtKind::Return:
        f.result = s.value ? eval(f, *s.value) : RValue::ofKind(RValue::Tuple);
        return;
      case StmtKind::Eval: eval(f, *s.value); return;
      case StmtKind::ForArray:
        elab::forEachElement(s, eval(f, *s.value), f, [&](const elab::Body& body) { run(f, body); });
        return;
      case StmtKind::While:
        while (eval(f, *s.value).t.i.at(0)) {
          run(f, s.body);
          if (f.result) return;
        }
        return;
    }
  }

  // ------------------------------------------------------------ expressions
  Tensor tensor(Frame& f, const elab::Expr& e, size_t k) { return eval(f, *e.operand(k)).t; }

  RValue eval(Frame& f, const elab::Expr& e) {
    RValue structural;
    if (elab::evalStructural(e, f.self, [&](const elab::Expr& x) { return eval(f, x); }, structural))
      return structural;
    const elab::TensorType& type = e.type.tensor;
    switch (e.kind) {
      case ExprKind::Constant:
        return RValue::of(sema::isFloat(type.dtype) ? Tensor::scalarF(type.dtype, e.number)
                                                    : Tensor::scalarI(type.dtype, wrapTo(type.dtype, e.integer)));
      case ExprKind::Local: return f.slots.at(e.slot);
      case ExprKind::Param: return RValue::of(storage[eval(f, *e.operand(0)).inst->id].params.at(e.name));
      case ExprKind::State: return RValue::of(storage[f.self->id].states.at(e.name));
      case ExprKind::Unary: return RValue::of(unary(e.unary, tensor(f, e, 0)));
      case ExprKind::Binary: return RValue::of(binary(e.binary, tensor(f, e, 0), tensor(f, e, 1)));
      case ExprKind::Select: return RValue::of(select(tensor(f, e, 0), tensor(f, e, 1), tensor(f, e, 2)));
      case ExprKind::Cast: return RValue::of(cast(tensor(f, e, 0), type.dtype));
      case ExprKind::Broadcast: return RValue::of(broadcastTo(tensor(f, e, 0), type.shape));
      case ExprKind::Reshape: return RValue::of(reshape(tensor(f, e, 0), type.shape));
      case ExprKind::Permute: return RValue::of(permute(tensor(f, e, 0), e.ints));
      case ExprKind::Concat: {
        std::vector<Tensor> xs;
        for (size_t k = 0; k < e.operands.size(); ++k) xs.push_back(tensor(f, e, k));
        return RValue::of(concat(xs, static_cast<int>(e.ints[0])));
      }
      case ExprKind::Iota: {
        int axis = static_cast<int>(e.ints[0]);
        std::vector<int64_t> line(type.shape.size(), 1);
        line[axis] = type.shape[axis];
        return RValue::of(broadcastTo(reshape(iota(type.dtype, type.shape[axis]), line), type.shape));
      }
      case ExprKind::Matmul: {
        // A product with a permute that swaps a matrix's axes (`Linear`'s
        // `permute(w, [1, 0])`) reads the matrix's rows instead of forming
        // the transpose on every call.
        const elab::Expr& b = *e.operand(1);
        if (elab::swapsLastTwoAxes(b) && b.ints.size() == 2)
          return RValue::of(matmulTransposed(tensor(f, e, 0), tensor(f, b, 0)));
        return RValue::of(matmul(tensor(f, e, 0), tensor(f, e, 1)));
      }
      case ExprKind::Reduce: return RValue::of(reduce(e, tensor(f, e, 0)));
      case ExprKind::GatherRows: return RValue::of(gather(tensor(f, e, 0), tensor(f, e, 1)));
      case ExprKind::ScatterRows:
        return RValue::of(scatterRows(tensor(f, e, 0), tensor(f, e, 1), e.type.tensor.shape));
      case ExprKind::Attention:
        return RValue::of(attention(tensor(f, e, 0), tensor(f, e, 1), tensor(f, e, 2), tensor(f, e, 3), tensor(f, e, 4)));
      case ExprKind::AttentionRows:
      case ExprKind::AttentionGrad:  // derived only for a target with its own kernel (autodiff/attention.h)
        fail(e.range, "internal: a gradient derived for the cpu target's attention kernel reached the reference "
                      "backend");
      case ExprKind::WritePoints:
        return RValue::of(writePoints(tensor(f, e, 0), tensor(f, e, 1), tensor(f, e, 2), tensor(f, e, 3),
                                      static_cast<int>(e.ints[0])));
      case ExprKind::WriteSlice:
        return RValue::of(
            writeSlice(tensor(f, e, 0), tensor(f, e, 1), tensor(f, e, 2), static_cast<int>(e.ints[0])));
      case ExprKind::Slice: {
        Tensor x = tensor(f, e, 0);
        std::vector<BasicItem> items;
        for (size_t k = 0; k < e.items.size(); ++k) {
          const elab::SliceItem& it = e.items[k];
          if (it.slice) {
            items.push_back(BasicItem{true, it.lo, it.hi, 0});
          } else {
            int64_t v = tensor(f, e, it.index).asInt(0);
            items.push_back(BasicItem{false, 0, 0, std::clamp<int64_t>(v, 0, std::max<int64_t>(x.shape[k] - 1, 0))});
          }
        }
        return RValue::of(basicIndex(x, items));
      }
      case ExprKind::Gather: {
        std::vector<Tensor> idx;
        for (size_t k = 1; k < e.operands.size(); ++k) idx.push_back(tensor(f, e, k));
        return RValue::of(advancedIndex(tensor(f, e, 0), idx));
      }
      case ExprKind::Call: {
        const elab::Instance* self = e.operand(0) ? eval(f, *e.operand(0)).inst : nullptr;
        std::vector<RValue> args;
        for (size_t k = 1; k < e.operands.size(); ++k) args.push_back(eval(f, *e.operand(k)));
        return callFn(*e.callee, self, std::move(args));
      }
      case ExprKind::Self: case ExprKind::Sub: case ExprKind::Element: case ExprKind::Tuple: case ExprKind::Some:
      case ExprKind::None: case ExprKind::Unwrap: break;  // evalStructural
    }
    fail(e.range, "internal: an expression kind without a handler");
  }

  // An axis reduction reduces one axis; a binder reduction its leading
  // axes (an empty range gives the reduction's identity).
  static Tensor reduce(const elab::Expr& e, const Tensor& x) {
    switch (e.reduce) {
      case sema::ReduceKind::Sum: case sema::ReduceKind::Mean: case sema::ReduceKind::Max:
      case sema::ReduceKind::Min: case sema::ReduceKind::IndexOfMax:
        if (e.ints.size() == 1) return reduceAxis(e.reduce, x, static_cast<int>(e.ints[0]), e.flag);
        break;
      case sema::ReduceKind::Prod: case sema::ReduceKind::All: case sema::ReduceKind::Any: break;
    }
    return reduceLeading(e.reduce, x, static_cast<int>(e.ints.size()));
  }
};

Model::Model(const sema::Program& program) {
  try {
    impl_ = std::make_unique<Impl>(program);
  } catch (const elab::Error& e) {
    throw EvalError(e.what());
  }
}

Model::~Model() = default;

std::vector<ParamSpec> Model::params() const {
  std::vector<ParamSpec> out;
  for (const elab::Instance* inst : impl_->program.instances())
    for (const elab::Member& m : inst->params) out.push_back({inst->pathOf(m.name), m.type.shape, m.type.dtype});
  return out;
}

std::vector<ParamSpec> Model::states() const {
  std::vector<ParamSpec> out;
  for (const elab::Instance* inst : impl_->program.instances())
    for (const elab::Member& m : inst->states) out.push_back({inst->pathOf(m.name), m.type.shape, m.type.dtype});
  return out;
}

void Model::bind(const ParamSource& source) {
  for (const elab::Instance* inst : impl_->program.instances())
    for (const elab::Member& m : inst->params) {
      Tensor& slot = impl_->storage[inst->id].params.at(m.name);
      ParamSpec spec{inst->pathOf(m.name), slot.shape, slot.dtype};
      Tensor t = source(spec);
      if (t.shape != slot.shape || t.dtype != slot.dtype)
        throw EvalError(fmt::format("param `{}` is {}, but {} was supplied", spec.path, slot.describe(), t.describe()));
      slot = std::move(t);
    }
  resetState();
}

void Model::resetState() {
  for (Storage& s : impl_->storage)
    for (auto& [n, t] : s.states) t = Tensor::zeros(t.dtype, t.shape);
}

Tensor Model::param(const std::string& path) const { return impl_->member(path, false); }

void Model::setParam(const std::string& path, Tensor value) {
  Tensor& slot = impl_->member(path, false);
  if (value.shape != slot.shape || value.dtype != slot.dtype)
    throw EvalError(fmt::format("param `{}` is {}, not {}", path, slot.describe(), value.describe()));
  slot = std::move(value);
}

Tensor Model::state(const std::string& path) const { return impl_->member(path, true); }

void Model::watch(std::string name, Observer observer) {
  if (observer) impl_->watches[std::move(name)] = std::move(observer);
  else impl_->watches.erase(name);
}

namespace {

// The entry elaborated for `args`, and the arguments as its parameters
// take them (a literal given its parameter's dtype, when it fits).
std::pair<elab::EntryInstance, std::vector<RValue>> prepareCall(elab::Program& program, const std::string& entry,
                                                                const std::vector<Tensor>& args,
                                                                const std::map<std::string, int64_t>& generics) {
  for (const auto& [n, v] : generics) {
    bool known = false;
    for (const syntax::GenericParam& g : program.entryDecl(entry).generics)
      known |= g.name.name == n && g.kind.name == "Dim";
    if (!known) throw EvalError(fmt::format("entry `{}` has no dimension generic `{}`", entry, n));
  }
  std::vector<elab::TensorType> types;
  for (const Tensor& t : args) types.push_back({t.dtype, t.shape, t.weak});
  elab::EntryInstance inst = program.entry(entry, types, generics);
  for (size_t k = 0; k < args.size(); ++k) {
    const Tensor& a = args[k];
    if (a.dtype == inst.inputs[k].dtype || !a.weak || a.size() != 1) continue;
    std::string misfit = a.isFloat() ? literalMisfit(inst.inputs[k].dtype, a.f[0])
                                     : literalMisfit(inst.inputs[k].dtype, a.i[0]);
    if (!misfit.empty())
      throw EvalError(fmt::format("entry `{}`: argument `{}` is {}, but the literal {}", entry,
                                  inst.fn->decl->params[k].name.name, linnet::name(inst.inputs[k].dtype), misfit));
  }
  std::vector<RValue> values;
  for (size_t k = 0; k < args.size(); ++k)
    values.push_back(RValue::of(args[k].dtype == inst.inputs[k].dtype ? args[k] : cast(args[k], inst.inputs[k].dtype)));
  for (RValue& v : values) v.t.weak = false;
  return {inst, std::move(values)};
}

}  // namespace

std::vector<Tensor> Model::call(const std::string& entry, const std::vector<Tensor>& args,
                                const std::map<std::string, int64_t>& generics) try {
  auto [inst, values] = prepareCall(impl_->program, entry, args, generics);
  RValue r = impl_->callFn(*inst.fn, &impl_->program.root(), std::move(values));
  std::vector<Tensor> out;
  if (r.kind == RValue::Tuple)
    for (auto& e : r.elems) out.push_back(e.t);
  else
    out.push_back(r.t);
  return out;
} catch (const elab::Error& e) {
  throw EvalError(e.what());
}

Model::Gradient Model::gradient(const std::string& entry, const std::vector<Tensor>& args,
                                const std::map<std::string, int64_t>& generics,
                                const std::function<bool(const std::string&)>& wrt,
                                const std::optional<Tensor>& cotangent, bool inputs, autodiff::Policy policy,
                                const LowRank& lowRank) try {
  auto [inst, values] = prepareCall(impl_->program, entry, args, generics);
  const autodiff::Gradient& derived = impl_->gradientOf(inst, wrt, inputs, policy, lowRank.rank);
  if (derived.cotangent) {
    const elab::TensorType& want = derived.fn->slots[static_cast<size_t>(derived.fn->params[values.size()])].type.tensor;
    if (!cotangent)
      throw EvalError(fmt::format("entry `{}` returns {}: its gradient needs a cotangent of that type", entry,
                                  want.str()));
    if (cotangent->shape != want.shape || cotangent->dtype != want.dtype)
      throw EvalError(fmt::format("entry `{}` returns {}, but the cotangent is {}", entry, want.str(),
                                  cotangent->describe()));
    values.push_back(RValue::of(*cotangent));
  } else if (cotangent) {
    throw EvalError(fmt::format("entry `{}` returns one value: its gradient takes no cotangent", entry));
  }
  for (const std::string& name : derived.factors) {
    const elab::TensorType& want = derived.fn->slots[static_cast<size_t>(derived.fn->params[values.size()])].type.tensor;
    auto given = lowRank.factors.find(name);
    if (given == lowRank.factors.end())
      throw EvalError(fmt::format("the low-rank gradient of `{}` needs its factor `{}` ({})", entry, name, want.str()));
    if (given->second.shape != want.shape || given->second.dtype != want.dtype)
      throw EvalError(fmt::format("LoRA factor `{}` is {}, but the gradient takes {}", name,
                                  given->second.describe(), want.str()));
    values.push_back(RValue::of(given->second));
  }
  RValue r = impl_->callFn(*derived.fn, &impl_->program.root(), std::move(values));
  Gradient out;
  out.value = r.elems.at(0).t;
  out.params = derived.params;
  out.inputs = derived.inputs;
  out.tape = derived.policy;
  for (size_t k = 0; k < derived.params.size(); ++k) out.grads.push_back(r.elems.at(1 + k).t);
  for (size_t k = 0; k < derived.inputs.size(); ++k)
    out.inputGrads.push_back(r.elems.at(1 + derived.params.size() + k).t);
  return out;
} catch (const elab::Error& e) {
  throw EvalError(e.what());
}

}  // namespace linnet::reference
