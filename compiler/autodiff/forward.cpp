#include "autodiff/forward.h"

#include <fmt/format.h>

#include <functional>
#include <optional>

namespace linnet::autodiff {

namespace {

using elab::Instance;
using elab::Stmt;
using elab::StmtKind;
using elab::Type;

// A value while copying: a tensor (an expression of the derived function)
// or the structure around tensors, resolved.
struct Val {
  enum Kind { TensorV, Tuple, None, Some, BlockV, ArrayV } kind = TensorV;
  const Expr* t = nullptr;
  std::vector<Val> elems;
  const Instance* inst = nullptr;
  const std::vector<std::unique_ptr<Instance>>* array = nullptr;
  static Val tensor(const Expr* e) { return Val{TensorV, e, {}, nullptr, nullptr}; }
  static Val block(const Instance* i) { return Val{BlockV, nullptr, {}, i, nullptr}; }
  static Val of(Kind k) { return Val{k, nullptr, {}, nullptr, nullptr}; }
};

struct Frame {
  const Instance* self = nullptr;
  std::vector<Val> slots;
  std::optional<Val> result;
};

class Copier {
 public:
  Copier(const elab::Program& program, Emitter& em, Policy policy, const ActiveSoFar& active, bool attentionKernel)
      : program_(program), em_(em), policy_(policy), active_(active), attentionKernel_(attentionKernel) {
    refer(program.root(), nullptr);
  }

  Tape tape;

  Val call(const elab::FnInstance& fn, const Instance* self, std::vector<Val> args) {
    Frame f;
    f.self = self;
    f.slots.resize(fn.slots.size());
    for (size_t k = 0; k < fn.params.size(); ++k) f.slots[fn.params[k]] = std::move(args[k]);
    run(f, fn.body);
    return f.result ? *f.result : Val::of(Val::Tuple);
  }

 private:
  const elab::Program& program_;
  Emitter& em_;
  Policy policy_;
  const ActiveSoFar& active_;
  bool attentionKernel_;
  std::map<const Instance*, const Expr*> refs_;  // each instance as an expression from the root
  std::map<const void*, const Expr*> arrayRefs_;  // each array, by its elements' vector
  // While copying a Scan's layer: element 0's instances as expressions
  // from the loop's element, and the paths they stand for.
  struct InLayer {
    std::map<const Instance*, const Expr*> refs;
    std::string prefix;  // `layers.0`
    std::string array;   // `layers`
    int64_t count = 0;
  };
  std::optional<InLayer> inLayer_;

  [[noreturn]] void fail(SourceRange at, const std::string& message, bool scanOnly = false) const {
    std::string text = fmt::format("{}: {}", program_.where(at), message);
    if (scanOnly) throw ScanUnsupported(text);
    throw elab::Error(text);
  }

  bool isRootArray(const Val& array) const {
    for (const auto& [name, elems] : program_.root().arrays)
      if (&elems == array.array) return true;
    return false;
  }

  // `for layer in layers` kept a loop (forward.h, Scan): the carried
  // values saved at each iteration's start, the layer's code copied once.
  void scanLoop(Frame& f, const Stmt& s, const Val& array) {
    const auto& elems = *array.array;
    const Instance* first = elems[0].get();
    Scan scan;
    scan.array = arrayRefs_.at(array.array);
    scan.count = static_cast<int64_t>(elems.size());
    std::vector<elab::SlotId> vars;
    for (elab::SlotId v : s.varsInScope) {
      const Val& x = f.slots[static_cast<size_t>(v)];
      if (x.kind != Val::TensorV) fail(s.range, "a layer loop in scope of a variable that holds no tensor", true);
      if (x.t) vars.push_back(v);
    }
    em_.at = s.range;
    for (elab::SlotId v : vars) {
      const Expr* x = f.slots[static_cast<size_t>(v)].t;
      Shape stacked = Emitter::typeOf(x).shape;
      stacked.insert(stacked.begin(), scan.count);
      scan.carried.push_back(em_.let(x, "carried"));
      scan.saved.push_back(em_.let(em_.zeros(Emitter::typeOf(x).dtype, stacked), "saved"));
    }
    elab::SlotId index = em_.let(em_.constant(Scalar::I32, 0), "layer_index");
    scan.layer = em_.newSlot("layer", Type{Type::Block, {}, {}, first, {}, nullptr});
    elab::Stmt* loop = em_.newStmt(StmtKind::ForArray);
    scan.loop = loop;
    scan.index = index;
    loop->value = scan.array;
    loop->slot = scan.layer;
    loop->varsInScope = scan.carried;
    loop->varsInScope.insert(loop->varsInScope.end(), scan.saved.begin(), scan.saved.end());
    loop->varsInScope.push_back(index);
    em_.beginBody(loop->body);
    for (size_t k = 0; k < vars.size(); ++k) {
      const Expr* c = em_.local(scan.carried[k]);
      Shape one = Emitter::typeOf(c).shape;
      one.insert(one.begin(), 1);
      em_.assign(scan.saved[k], em_.writeAt(em_.local(scan.saved[k]), em_.reshape(c, one), em_.local(index)));
    }
    size_t layerStart = loop->body.size();
    for (size_t k = 0; k < vars.size(); ++k) f.slots[static_cast<size_t>(vars[k])] = Val::tensor(em_.local(scan.carried[k]));
    f.slots[static_cast<size_t>(s.slot)] = Val::block(first);
    enterLayer(*first, em_.local(scan.layer), scan.count);
    run(f, s.body);
    inLayer_.reset();
    if (f.result) fail(s.range, "a `return` inside a layer loop", true);
    scan.layer_body.assign(loop->body.begin() + static_cast<std::ptrdiff_t>(layerStart), loop->body.end());
    em_.at = s.range;
    for (size_t k = 0; k < vars.size(); ++k) {
      const Val& out = f.slots[static_cast<size_t>(vars[k])];
      if (out.kind != Val::TensorV || !out.t) fail(s.range, "a layer loop that leaves a variable without a tensor", true);
      scan.next.push_back(out.t);
    }
    for (size_t k = 0; k < vars.size(); ++k) em_.assign(scan.carried[k], scan.next[k]);
    em_.assign(index, em_.binary(sema::BinaryKind::Add, em_.local(index), em_.constant(Scalar::I32, 1)));
    em_.endBody();
    for (size_t k = 0; k < vars.size(); ++k) f.slots[static_cast<size_t>(vars[k])] = Val::tensor(em_.local(scan.carried[k]));
    tape.scans[loop] = std::move(scan);
  }

  void enterLayer(const Instance& first, const Expr* ref, int64_t count) {
    InLayer in;
    in.prefix = first.path;
    in.array = first.path.substr(0, first.path.rfind('.'));
    in.count = count;
    std::function<void(const Instance&, const Expr*)> walk = [&](const Instance& inst, const Expr* r) {
      in.refs[&inst] = r;
      for (const auto& [name, sub] : inst.subs) {
        Expr* e = em_.raw(ExprKind::Sub, Type{Type::Block, {}, {}, sub.get(), {}, nullptr}, {r});
        e->name = name;
        walk(*sub, e);
      }
    };
    walk(first, ref);
    inLayer_ = std::move(in);
  }

  // A param read: through the root's chain, or in a Scan's layer through
  // the loop's element (its path with `*` for the element).
  Val readParam(const Expr& e, const Instance* inst) {
    em_.at = e.range;
    const Expr* ref = nullptr;
    std::string path = inst->pathOf(e.name);
    if (inLayer_) {
      auto it = inLayer_->refs.find(inst);
      if (it == inLayer_->refs.end())
        fail(e.range, fmt::format("reads param `{}` of a block outside the layer inside a layer loop", path), true);
      ref = it->second;
      path = inLayer_->array + ".*" + path.substr(inLayer_->prefix.size());
    } else {
      ref = refs_.at(inst);
    }
    Expr* read = em_.raw(ExprKind::Param, e.type, {ref});
    read->name = e.name;
    const Expr* local = em_.bind(read, path);
    tape.paramReads[local->slot] = path;
    if (inLayer_) tape.layers[local->slot] = inLayer_->count;
    return Val::tensor(local);
  }

  // Self, Sub and Element chains from the root to every instance.
  void refer(const Instance& inst, const Expr* ref) {
    if (!ref) ref = em_.raw(ExprKind::Self, Type{Type::Block, {}, {}, &inst, {}, nullptr});
    refs_[&inst] = ref;
    for (const auto& [name, sub] : inst.subs) {
      Expr* e = em_.raw(ExprKind::Sub, Type{Type::Block, {}, {}, sub.get(), {}, nullptr}, {ref});
      e->name = name;
      refer(*sub, e);
    }
    for (const auto& [name, elems] : inst.arrays) {
      Expr* array = em_.raw(ExprKind::Sub, Type{Type::Array, {}, {}, elems.at(0).get(), name, &inst}, {ref});
      array->name = name;
      arrayRefs_[&elems] = array;
      for (size_t k = 0; k < elems.size(); ++k) {
        Expr* e = em_.raw(ExprKind::Element, Type{Type::Block, {}, {}, elems[k].get(), {}, nullptr}, {array});
        e->ints = {static_cast<int64_t>(k)};
        refer(*elems[k], e);
      }
    }
  }

  void run(Frame& f, const elab::Body& body) {
    for (const Stmt* s : body) {
      exec(f, *s);
      if (f.result) return;
    }
  }

  void exec(Frame& f, const Stmt& s) {
    em_.at = s.range;
    switch (s.kind) {
      case StmtKind::Let: case StmtKind::Assign: f.slots[s.slot] = eval(f, *s.value); return;
      case StmtKind::LetTuple: {
        Val v = eval(f, *s.value);
        for (size_t i = 0; i < s.slots.size(); ++i) f.slots[s.slots[i]] = v.elems.at(i);
        return;
      }
      case StmtKind::AssignState:
        fail(s.range, fmt::format("writes state `{}`: an entry that writes state (a cache) has no gradient; "
                                  "differentiate an entry that keeps no state, like `loss_packed`",
                                  s.name));
      case StmtKind::Return: f.result = s.value ? eval(f, *s.value) : Val::of(Val::Tuple); return;
      case StmtKind::Eval: eval(f, *s.value); return;
      case StmtKind::ForArray: {
        Val array = eval(f, *s.value);
        if (inLayer_) fail(s.range, "a loop inside a layer loop", true);
        if (policy_ != Policy::Unrolled && isRootArray(array) && !array.array->empty()) return scanLoop(f, s, array);
        for (const auto& inst : *array.array) {
          f.slots[s.slot] = Val::block(inst.get());
          run(f, s.body);
          if (f.result) return;
        }
        return;
      }
      case StmtKind::While:
        fail(s.range, "a `while` loop has no gradient yet: its trip count is known only at run time");
    }
  }

  const Expr* tensor(Frame& f, const Expr& e, size_t k) { return eval(f, *e.operand(k)).t; }

  // The output head's log-probabilities by chunks of rows, outside a
  // layer loop (a loop of its own).
  Val tokenLogProbs(const Expr& call, const std::vector<Val>& args) {
    if (inLayer_) fail(call.range, "the output head's log-probabilities inside a layer loop", true);
    em_.at = call.range;
    TokenLogProbsTape record;
    const bool weightActive = active_(tape, args.at(1).t);
    const Expr* out = writeTokenLogProbs(em_, args.at(0).t, args.at(1).t, args.at(2).t, weightActive, record);
    tape.tokenLogProbs[out->slot] = record;
    return Val::tensor(out);
  }

  Val eval(Frame& f, const Expr& e) {
    switch (e.kind) {
      case ExprKind::Local: return f.slots.at(static_cast<size_t>(e.slot));
      case ExprKind::Self: return Val::block(f.self);
      case ExprKind::Sub: {
        const Instance* base = eval(f, *e.operand(0)).inst;
        if (auto it = base->subs.find(e.name); it != base->subs.end()) return Val::block(it->second.get());
        Val v = Val::of(Val::ArrayV);
        v.array = &base->arrays.at(e.name);
        return v;
      }
      case ExprKind::Element:
        return Val::block(eval(f, *e.operand(0)).array->at(static_cast<size_t>(e.ints.at(0))).get());
      case ExprKind::Tuple: case ExprKind::Some: {
        Val v = Val::of(e.kind == ExprKind::Tuple ? Val::Tuple : Val::Some);
        for (const Expr* x : e.operands) v.elems.push_back(eval(f, *x));
        return v;
      }
      case ExprKind::None: return Val::of(Val::None);
      case ExprKind::Unwrap: return eval(f, *e.operand(0)).elems.at(0);
      case ExprKind::Call: {
        const Instance* self = e.operand(0) ? eval(f, *e.operand(0)).inst : nullptr;
        std::vector<Val> args;
        for (size_t k = 1; k < e.operands.size(); ++k) args.push_back(eval(f, *e.operand(k)));
        if (isTokenLogProbs(*e.callee)) return tokenLogProbs(e, args);
        return call(*e.callee, self, std::move(args));
      }
      case ExprKind::Param: return readParam(e, eval(f, *e.operand(0)).inst);
      case ExprKind::State:
        fail(e.range, fmt::format("reads state `{}`: gradients of entries that read state are not derived yet",
                                  e.name));
      case ExprKind::Attention: {
        em_.at = e.range;
        AttentionTape record;
        const Expr* q = tensor(f, e, 0), *k = tensor(f, e, 1), *v = tensor(f, e, 2), *scale = tensor(f, e, 3);
        // The kernels take f32 with at most two leading axes, and give the scale no cotangent.
        const bool kernel = attentionKernel_ && attentionKernelTakes(q, k, v) && !active_(tape, scale);
        const Expr* out = writeAttention(em_, q, k, v, scale, tensor(f, e, 4), kernel, record, tape.detached);
        tape.attentions[out->slot] = record;
        return Val::tensor(out);
      }
      case ExprKind::Constant: case ExprKind::Unary: case ExprKind::Binary: case ExprKind::Select:
      case ExprKind::Cast: case ExprKind::Broadcast: case ExprKind::Reshape: case ExprKind::Permute:
      case ExprKind::Concat: case ExprKind::Iota: case ExprKind::Matmul: case ExprKind::Reduce:
      case ExprKind::GatherRows: case ExprKind::ScatterRows: case ExprKind::Slice: case ExprKind::Gather:
      case ExprKind::WritePoints: case ExprKind::WriteSlice: case ExprKind::AttentionRows:
      case ExprKind::AttentionGrad:
        break;
    }
    std::vector<const Expr*> operands;
    for (size_t k = 0; k < e.operands.size(); ++k) operands.push_back(tensor(f, e, k));
    em_.at = e.range;
    Expr* copy = em_.raw(e.kind, e.type, std::move(operands));
    copy->ints = e.ints;
    copy->unary = e.unary;
    copy->binary = e.binary;
    copy->reduce = e.reduce;
    copy->flag = e.flag;
    copy->number = e.number;
    copy->integer = e.integer;
    copy->items = e.items;
    copy->type.tensor.weak = false;
    return Val::tensor(em_.bind(copy));
  }
};

}  // namespace

std::string elementPath(const std::string& stacked, int64_t k) {
  size_t star = stacked.find(".*.");
  return stacked.substr(0, star) + "." + std::to_string(k) + stacked.substr(star + 2);
}

Tape copyForward(const elab::Program& program, const elab::FnInstance& entry, Emitter& em,
                 const std::vector<elab::SlotId>& inputs, Policy policy, const ActiveSoFar& active,
                 bool attentionKernel) {
  Copier copier(program, em, policy, active, attentionKernel);
  std::vector<Val> args;
  for (elab::SlotId s : inputs) {
    Expr* local = em.raw(ExprKind::Local, em.fn().slots[static_cast<size_t>(s)].type);
    local->slot = s;
    args.push_back(Val::tensor(local));
  }
  Val result = copier.call(entry, &program.root(), std::move(args));
  if (result.kind != Val::TensorV)
    throw elab::Error(fmt::format("{}: the entry returns a tuple or an option; a gradient needs one scalar value",
                                  program.where(entry.decl->range)));
  copier.tape.result = result.t;
  return std::move(copier.tape);
}

}  // namespace linnet::autodiff
