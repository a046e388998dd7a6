#include "autodiff/gradient.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

#include "autodiff/forward.h"
#include "autodiff/vjp.h"

namespace linnet::autodiff {

namespace {

using elab::SlotId;
using elab::Stmt;

// Which slots depend on a differentiated param: a param read accepted by
// `wrt`, or a float value computed from such a slot and not detached.
std::vector<bool> activity(const elab::FnInstance& fn, const Tape& tape,
                           const std::function<bool(const std::string&)>& wrt, const std::vector<SlotId>& inputs) {
  std::vector<bool> active(fn.slots.size(), false);
  for (SlotId s : inputs) active[static_cast<size_t>(s)] = true;
  for (const Stmt* s : fn.body) {
    if (s->kind != elab::StmtKind::Let) continue;
    auto read = tape.paramReads.find(s->slot);
    bool on = false;
    if (read != tape.paramReads.end()) {
      on = wrt(read->second) && sema::isFloat(s->value->type.tensor.dtype);
    } else if (sema::isFloat(s->value->type.tensor.dtype) && !tape.detached.count(s->slot)) {
      for (const Expr* x : s->value->operands)
        on |= x && x->kind == ExprKind::Local && active[static_cast<size_t>(x->slot)];
    }
    active[static_cast<size_t>(s->slot)] = on;
  }
  return active;
}

class Reverse {
 public:
  Reverse(const elab::Program& program, Emitter& em, const Tape& tape, std::vector<bool> active)
      : program_(program), em_(em), tape_(tape), active_(std::move(active)) {}

  // Cotangents of every param read, by path, from the value's cotangent
  // `seed` (d value / d value = 1 for a scalar).
  std::map<std::string, const Expr*> run(const Expr* seed) {
    std::map<std::string, const Expr*> grads;
    const Expr* result = tape_.result;
    if (!isActive(result)) return grads;
    std::vector<const Stmt*> forward(em_.fn().body.begin(), em_.fn().body.end());
    add(result, seed);
    for (auto it = forward.rbegin(); it != forward.rend(); ++it) {
      const Stmt& s = **it;
      auto g = cot_.find(s.slot);
      if (s.kind != elab::StmtKind::Let || g == cot_.end()) continue;
      em_.at = s.range;
      if (auto read = tape_.paramReads.find(s.slot); read != tape_.paramReads.end()) {
        const Expr*& sum = grads[read->second];
        sum = sum ? em_.binary(sema::BinaryKind::Add, sum, g->second) : g->second;
        continue;
      }
      const Expr& def = *s.value;
      Cotangents out{[&](size_t k) { return isActive(def.operand(k)); },
                     [&](size_t k, const Expr* gk) {
                       if (isActive(def.operand(k))) add(def.operand(k), gk);
                     }};
      const Expr* y = localOf(s);
      vjp(em_, def, y, g->second, out, program_.where(s.range));
    }
    return grads;
  }
  // After run(): the cotangent a slot (an input) received, or null.
  const Expr* cotangentOf(SlotId slot) const {
    auto it = cot_.find(slot);
    return it == cot_.end() ? nullptr : it->second;
  }

 private:
  const elab::Program& program_;
  Emitter& em_;
  const Tape& tape_;
  std::vector<bool> active_;
  std::map<SlotId, const Expr*> cot_;

  bool isActive(const Expr* e) const {
    return e && e->kind == ExprKind::Local && static_cast<size_t>(e->slot) < active_.size() &&
           active_[static_cast<size_t>(e->slot)];
  }
  void add(const Expr* to, const Expr* g) {
    g = em_.cast(g, Emitter::typeOf(to).dtype);
    const Expr*& sum = cot_[to->slot];
    sum = sum ? em_.binary(sema::BinaryKind::Add, sum, g) : g;
  }
  const Expr* localOf(const Stmt& s) {
    Expr* local = em_.raw(ExprKind::Local, em_.fn().slots[static_cast<size_t>(s.slot)].type);
    local->slot = s.slot;
    return local;
  }
};

int64_t elements(const elab::TensorType& t) {
  int64_t n = 1;
  for (int64_t d : t.shape) n *= d;
  return n;
}

void requireFloat(const elab::Program& program, const elab::FnInstance& entry, const Expr* result) {
  const elab::TensorType& t = Emitter::typeOf(result);
  if (!sema::isFloat(t.dtype))
    throw elab::Error(fmt::format("{}: entry `{}` returns {}; a gradient is of a float value (a loss, or "
                                  "log-probabilities with a cotangent)",
                                  program.where(entry.decl->range), entry.decl->name.name, t.str()));
}

}  // namespace

Gradient deriveGradient(elab::Program& program, const elab::EntryInstance& entry,
                        const std::function<bool(const std::string&)>& wrt, bool inputs) {
  const elab::FnInstance& source = *entry.fn;
  auto fn = std::make_unique<elab::FnInstance>();
  fn->decl = source.decl;
  fn->module = source.module;
  fn->self = &program.root();
  fn->env = source.env;
  Emitter em(*fn);
  em.at = source.decl->range;
  for (SlotId p : source.params) fn->params.push_back(em.newSlot(source.slots[static_cast<size_t>(p)].name,
                                                                 source.slots[static_cast<size_t>(p)].type));
  Tape tape = copyForward(program, source, em, fn->params);
  requireFloat(program, source, tape.result);
  const elab::TensorType& valueType = Emitter::typeOf(tape.result);
  const Expr* seed = em.broadcast(em.constant(valueType.dtype, 1), valueType.shape);
  if (elements(valueType) != 1) {  // the cotangent comes as a last parameter
    SlotId slot = em.newSlot("cotangent", elab::Type::of({valueType.dtype, valueType.shape}));
    fn->params.push_back(slot);
    Expr* local = em.raw(ExprKind::Local, fn->slots[static_cast<size_t>(slot)].type);
    local->slot = slot;
    seed = local;
  }
  std::vector<SlotId> activeInputs;
  for (size_t k = 0; inputs && k < source.params.size(); ++k)
    if (sema::isFloat(fn->slots[static_cast<size_t>(fn->params[k])].type.tensor.dtype))
      activeInputs.push_back(fn->params[k]);
  Reverse reverse(program, em, tape, activity(*fn, tape, wrt, activeInputs));
  std::map<std::string, const Expr*> grads = reverse.run(seed);

  Gradient out;
  em.at = source.decl->range;
  std::vector<const Expr*> results = {tape.result};
  std::vector<elab::Type> types = {tape.result->type};
  for (const elab::Instance* inst : program.instances())
    for (const elab::Member& m : inst->params) {
      std::string path = inst->pathOf(m.name);
      if (!wrt(path) || !sema::isFloat(m.type.dtype)) continue;
      auto g = grads.find(path);
      const Expr* d = g != grads.end() ? em.cast(g->second, Scalar::F32) : em.zeros(Scalar::F32, m.type.shape);
      results.push_back(d);
      types.push_back(elab::Type::of({Scalar::F32, m.type.shape}));
      out.params.push_back(path);
    }
  for (size_t k = 0; k < source.params.size(); ++k) {
    SlotId slot = fn->params[k];
    if (std::find(activeInputs.begin(), activeInputs.end(), slot) == activeInputs.end()) continue;
    const elab::TensorType t = fn->slots[static_cast<size_t>(slot)].type.tensor;  // a copy: emitting adds slots
    const Expr* g = reverse.cotangentOf(slot);
    results.push_back(g ? em.cast(g, Scalar::F32) : em.zeros(Scalar::F32, t.shape));
    types.push_back(elab::Type::of({Scalar::F32, t.shape}));
    out.inputs.push_back(k);
  }
  elab::Type tuple = elab::Type::unit();
  tuple.elems = types;
  em.ret(em.raw(ExprKind::Tuple, tuple, results));
  fn->result = tuple;
  // Exact, not a hash: adopt() keeps the first function of a key.
  fn->key = fmt::format("{}#gradient{}|{}", source.key, inputs ? "+inputs" : "", fmt::join(out.params, "|"));
  out.fn = &program.adopt(std::move(fn));
  return out;
}

}  // namespace linnet::autodiff
