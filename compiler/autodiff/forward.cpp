#include "autodiff/forward.h"

#include <fmt/format.h>

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
  Copier(const elab::Program& program, Emitter& em) : program_(program), em_(em) { refer(program.root(), nullptr); }

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
  std::map<const Instance*, const Expr*> refs_;  // each instance as an expression from the root

  [[noreturn]] void fail(SourceRange at, const std::string& message) const {
    throw elab::Error(fmt::format("{}: {}", program_.where(at), message));
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
        return call(*e.callee, self, std::move(args));
      }
      case ExprKind::Param: {
        const Instance* inst = eval(f, *e.operand(0)).inst;
        em_.at = e.range;
        Expr* read = em_.raw(ExprKind::Param, e.type, {refs_.at(inst)});
        read->name = e.name;
        const Expr* local = em_.bind(read, inst->pathOf(e.name));
        tape.paramReads[local->slot] = inst->pathOf(e.name);
        return Val::tensor(local);
      }
      case ExprKind::State:
        fail(e.range, fmt::format("reads state `{}`: gradients of entries that read state are not derived yet",
                                  e.name));
      case ExprKind::Attention: {
        em_.at = e.range;
        return Val::tensor(attention(tensor(f, e, 0), tensor(f, e, 1), tensor(f, e, 2), tensor(f, e, 3),
                                     tensor(f, e, 4)));
      }
      case ExprKind::Constant: case ExprKind::Unary: case ExprKind::Binary: case ExprKind::Select:
      case ExprKind::Cast: case ExprKind::Broadcast: case ExprKind::Reshape: case ExprKind::Permute:
      case ExprKind::Concat: case ExprKind::Iota: case ExprKind::Matmul: case ExprKind::Reduce:
      case ExprKind::GatherRows: case ExprKind::Slice: case ExprKind::Gather: case ExprKind::WritePoints:
      case ExprKind::WriteSlice:
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

  // The `attention` primitive written out (docs/language.md §11, as the
  // reference backend computes it), so that each step has its rule. The
  // maximum subtracted before `exp` is detached: softmax does not depend on
  // it.
  const Expr* attention(const Expr* q, const Expr* k, const Expr* v, const Expr* scale, const Expr* mask) {
    using sema::BinaryKind;
    using sema::ReduceKind;
    const Shape& ks = Emitter::typeOf(k).shape;
    const Shape& qs = Emitter::typeOf(q).shape;
    const int r = static_cast<int>(ks.size());
    Shape lead(ks.begin(), ks.end() - 2);
    const int64_t G = qs[r - 2], Q = qs[r - 1], D = qs[r], K = ks[r - 2], E = Emitter::typeOf(v).shape[r - 1];
    auto with = [&](Shape tail) {
      Shape s = lead;
      s.insert(s.end(), tail.begin(), tail.end());
      return s;
    };
    Scalar dt = Emitter::typeOf(q).dtype;
    const Expr* scores = em_.matmul(em_.reshape(q, with({G * Q, D})), em_.swapLastTwo(k));
    scores = em_.cast(em_.binary(BinaryKind::Mul, em_.cast(scores, Scalar::F32), scale), dt);
    scores = em_.cast(scores, Scalar::F32);
    scores = em_.select(mask, em_.reshape(scores, with({G, Q, K})), em_.constant(Scalar::F32, sema::kAttentionMasked));
    const Expr* max = em_.reduce(ReduceKind::Max, scores, r, true);
    tape.detached.insert(max->slot);
    const Expr* e = em_.unary(sema::UnaryKind::Exp, em_.binary(BinaryKind::Sub, scores, max));
    const Expr* probs = em_.binary(BinaryKind::Div, e, em_.reduce(ReduceKind::Sum, e, r, true));
    const Expr* mixed = em_.matmul(em_.reshape(em_.cast(probs, dt), with({G * Q, K})), v);
    return em_.reshape(mixed, with({G, Q, E}));
  }
};

}  // namespace

Tape copyForward(const elab::Program& program, const elab::FnInstance& entry, Emitter& em,
                 const std::vector<elab::SlotId>& inputs) {
  Copier copier(program, em);
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
