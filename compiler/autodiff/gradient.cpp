#include "autodiff/gradient.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>

#include "autodiff/forward.h"
#include "autodiff/low_rank.h"
#include "autodiff/vjp.h"

namespace linnet::autodiff {

namespace {

using elab::SlotId;
using elab::Stmt;

// A low-rank gradient's inputs for one param (by its element's path): the
// slots of A [r, in] and B [out, r]. kFactorNames suffix the param's path
// to name both A and dA, B and dB.
struct Factor {
  SlotId a = -1, b = -1;
};
const char* const kFactorNames[2] = {".lora_A", ".lora_B"};
using Factors = std::map<std::string, Factor>;

// Which slots depend on a differentiated param: a param read accepted by
// `wrt` (a layer's: for some element), or a float value computed from such
// a slot and not detached. A layer loop's body is walked until the values
// it carries stop changing.
class Activity {
 public:
  Activity(const elab::FnInstance& fn, const Tape& tape, const std::function<bool(const std::string&)>& wrt,
           const std::vector<SlotId>& inputs)
      : tape_(tape), wrt_(wrt), active(fn.slots.size(), false) {
    for (SlotId s : inputs) active[static_cast<size_t>(s)] = true;
    body(fn.body);
  }

 private:
  const Tape& tape_;
  const std::function<bool(const std::string&)>& wrt_;

 public:
  std::vector<bool> active;

 private:
  bool isActive(const Expr* e) const { return e && e->kind == ExprKind::Local && active[static_cast<size_t>(e->slot)]; }

  bool chosen(SlotId slot, const std::string& path) const {
    auto layers = tape_.layers.find(slot);
    if (layers == tape_.layers.end()) return wrt_(path);
    for (int64_t k = 0; k < layers->second; ++k)
      if (wrt_(elementPath(path, k))) return true;
    return false;
  }

  bool valueActive(const Stmt& s) const {
    const Expr& v = *s.value;
    if (auto head = tape_.tokenLogProbs.find(s.slot); head != tape_.tokenLogProbs.end())
      return isActive(head->second.x) || isActive(head->second.weight);  // computed in a loop of its own
    if (auto read = tape_.paramReads.find(s.slot); read != tape_.paramReads.end())
      return sema::isFloat(v.type.tensor.dtype) && chosen(s.slot, read->second);
    if (!sema::isFloat(v.type.tensor.dtype) || tape_.detached.count(s.slot)) return false;
    if (v.kind == ExprKind::Local) return isActive(&v);
    for (const Expr* x : v.operands)
      if (isActive(x)) return true;
    return false;
  }

  void body(const elab::Body& b) {
    for (const Stmt* s : b) {
      if (auto scan = tape_.scans.find(s); scan != tape_.scans.end()) {
        loop(scan->second);
        continue;
      }
      if (s->kind != elab::StmtKind::Let) continue;
      active[static_cast<size_t>(s->slot)] = valueActive(*s);
    }
  }

  void loop(const Scan& scan) {
    for (bool changed = true; changed;) {
      body(scan.layer_body);
      changed = false;
      for (size_t k = 0; k < scan.carried.size(); ++k)
        if (!active[static_cast<size_t>(scan.carried[k])] && isActive(scan.next[k])) {
          active[static_cast<size_t>(scan.carried[k])] = true;
          changed = true;
        }
    }
  }
};

class Reverse {
 public:
  Reverse(const elab::Program& program, Emitter& em, const Tape& tape, std::vector<bool> active,
          const std::function<bool(const std::string&)>& wrt, Policy policy, const Factors& factors)
      : program_(program),
        em_(em),
        tape_(tape),
        active_(std::move(active)),
        wrt_(wrt),
        policy_(policy),
        factors_(factors) {}

  // Cotangents of every param read, by path, from the value's cotangent
  // `seed` (d value / d value = 1 for a scalar).
  std::map<std::string, const Expr*> run(const Expr* seed) {
    std::map<std::string, const Expr*> grads;
    const Expr* result = tape_.result;
    if (!isActive(result)) return grads;
    std::vector<const Stmt*> forward(em_.fn().body.begin(), em_.fn().body.end());
    add(result, seed);
    for (auto it = forward.rbegin(); it != forward.rend(); ++it) {
      if (auto scan = tape_.scans.find(*it); scan != tape_.scans.end()) reverseLoop(**it, scan->second, grads);
      else step(**it, grads);
    }
    return grads;
  }
  // After run(): the cotangent a slot (an input) received, or null.
  const Expr* cotangentOf(SlotId slot) const {
    auto it = outer_.find(slot);
    return it == outer_.end() ? nullptr : it->second;
  }

 private:
  const elab::Program& program_;
  Emitter& em_;
  const Tape& tape_;
  std::vector<bool> active_;
  const std::function<bool(const std::string&)>& wrt_;
  Policy policy_;
  const Factors& factors_;  // empty unless the gradient is low-rank
  std::map<SlotId, const Expr*> outer_;
  std::map<SlotId, const Expr*>* cot_ = &outer_;  // the loop's own inside a reverse loop
  const std::set<SlotId>* inLoop_ = nullptr;       // there: the slots a cotangent may reach

  bool isActive(const Expr* e) const {
    return e && e->kind == ExprKind::Local && static_cast<size_t>(e->slot) < active_.size() &&
           active_[static_cast<size_t>(e->slot)];
  }
  void add(const Expr* to, const Expr* g) {
    if (inLoop_ && !inLoop_->count(to->slot))
      throw ScanUnsupported(fmt::format("{}: a value from before a layer loop has a cotangent inside it",
                                        program_.where(em_.at)));
    (*cot_)[to->slot] = em_.addTo((*cot_)[to->slot], em_.cast(g, Emitter::typeOf(to).dtype));
  }

  // Cotangents for a composite's operands, given to the active ones.
  Cotangents cotangentsOf(std::vector<const Expr*> operands) {
    return {[this, operands](size_t k) { return isActive(operands[k]); },
            [this, operands](size_t k, const Expr* gk) {
              if (isActive(operands[k])) add(operands[k], gk);
            }};
  }

  // The cotangents of one `let`'s operands from its own (a param read's
  // goes to `grads` by path).
  void step(const Stmt& s, std::map<std::string, const Expr*>& grads) {
    auto g = cot_->find(s.slot);
    if (s.kind != elab::StmtKind::Let || g == cot_->end()) return;
    em_.at = s.range;
    if (auto read = tape_.paramReads.find(s.slot); read != tape_.paramReads.end()) {
      grads[read->second] = em_.addTo(grads[read->second], g->second);
      return;
    }
    // Composites with a rule of their own (their statements get no cotangents).
    if (auto head = tape_.tokenLogProbs.find(s.slot); head != tape_.tokenLogProbs.end()) {
      const TokenLogProbsTape& a = head->second;
      tokenLogProbsVjp(em_, a, g->second, cotangentsOf({a.x, a.weight}));
      return;
    }
    if (auto att = tape_.attentions.find(s.slot); att != tape_.attentions.end()) {
      const AttentionTape& a = att->second;
      attentionVjp(em_, a, policy_ == Policy::Saved, g->second, cotangentsOf({a.q, a.k, a.v, a.scale}));
      return;
    }
    const Expr& def = *s.value;
    if (def.kind == ExprKind::Local) {  // a copy (a loop's carried value)
      if (isActive(&def)) add(&def, g->second);
      return;
    }
    Cotangents out{[&](size_t k) { return isActive(def.operand(k)); },
                   [&](size_t k, const Expr* gk) {
                     if (isActive(def.operand(k))) add(def.operand(k), gk);
                   }};
    vjp(em_, def, em_.local(s.slot), g->second, out, program_.where(s.range));
  }

  // The variables a Scan's reverse loop carries: the cotangent of each
  // carried value, the stacked sums [Layers, ...] of each layer param with
  // a chosen element (of a low-rank gradient: dA's and dB's, with stacks
  // of the A and B they read), and the layer's index.
  struct ReverseCarry {
    std::vector<SlotId> dCarried;
    std::vector<std::string> members;  // stacked paths (`layers.*.mlp.up.weight`)
    std::vector<std::vector<Shape>> shapes;  // one layer's: the param's, or A's and B's
    std::vector<std::vector<SlotId>> sums;   // in the order of `shapes`
    std::vector<Factor> factorStacks;        // A's and B's [Layers, ...], when low-rank
    SlotId index = -1;
  };

  // A stack [Layers, ...] of one factor of member `path` (zeros for an
  // element not differentiated, whose sums are dropped).
  SlotId factorStack(const std::string& path, int64_t count, bool b, const Shape& shape) {
    Shape one = shape;
    one.insert(one.begin(), 1);
    std::vector<const Expr*> layers;
    for (int64_t k = 0; k < count; ++k) {
      auto f = factors_.find(elementPath(path, k));
      layers.push_back(f == factors_.end() ? em_.zeros(Scalar::F32, one)
                                           : em_.reshape(em_.local(b ? f->second.b : f->second.a), one));
    }
    return em_.let(em_.concat(layers, 0), b ? "stacked_B" : "stacked_A");
  }

  ReverseCarry carryFor(const Scan& scan) {
    ReverseCarry c;
    for (SlotId v : scan.carried) {
      const TensorType& t = em_.fn().slots[static_cast<size_t>(v)].type.tensor;
      auto g = outer_.find(v);
      c.dCarried.push_back(em_.let(g != outer_.end() ? g->second : em_.zeros(t.dtype, t.shape), "d_carried"));
    }
    for (const Stmt* s : scan.layer_body) {
      auto read = tape_.paramReads.find(s->slot);
      if (read == tape_.paramReads.end() || !active_[static_cast<size_t>(s->slot)]) continue;
      if (std::find(c.members.begin(), c.members.end(), read->second) != c.members.end()) continue;
      c.members.push_back(read->second);
      const Shape& w = s->value->type.tensor.shape;
      Factor stacks;
      if (factors_.empty()) {
        c.shapes.push_back({w});
      } else {
        c.shapes.push_back({Shape{lowRank(), w[1]}, Shape{w[0], lowRank()}});
        stacks = {factorStack(read->second, scan.count, false, c.shapes.back()[0]),
                  factorStack(read->second, scan.count, true, c.shapes.back()[1])};
      }
      c.factorStacks.push_back(stacks);
      c.sums.emplace_back();
      for (Shape stacked : c.shapes.back()) {
        stacked.insert(stacked.begin(), scan.count);
        c.sums.back().push_back(em_.let(em_.zeros(Scalar::F32, stacked), "d_" + read->second));
      }
    }
    c.index = em_.let(em_.constant(Scalar::I32, static_cast<double>(scan.count - 1)), "layer_index");
    return c;
  }

  // A Scan's reverse: from the last layer to the first, the layer
  // recomputed from its saved input, then its statements' cotangents; the
  // carried values' cotangents carried to the layer before, the layer's
  // param gradients written at its index into stacked [Layers, ...] sums.
  void reverseLoop(const Stmt& forwardLoop, const Scan& scan, std::map<std::string, const Expr*>& grads) {
    bool flows = false;
    for (SlotId c : scan.carried) flows |= outer_.count(c) > 0;
    if (!flows) return;
    em_.at = forwardLoop.range;
    ReverseCarry c = carryFor(scan);
    elab::Stmt* loop = em_.newStmt(elab::StmtKind::ForArray);
    loop->value = scan.array;
    loop->slot = scan.layer;
    loop->reverse = true;
    loop->varsInScope = c.dCarried;
    for (const auto& sums : c.sums) loop->varsInScope.insert(loop->varsInScope.end(), sums.begin(), sums.end());
    loop->varsInScope.push_back(c.index);
    em_.beginBody(loop->body);
    for (size_t k = 0; k < scan.carried.size(); ++k)
      em_.assign(scan.carried[k], em_.sliceAt(em_.local(scan.saved[k]), em_.local(c.index)));
    const size_t layerAt = loop->body.size();
    if (policy_ != Policy::Saved)
      loop->body.insert(loop->body.end(), scan.layer_body.begin(), scan.layer_body.end());  // recomputed
    reverseLayer(forwardLoop, scan, c);
    em_.endBody();
    if (policy_ == Policy::Saved) loadSavedLayer(scan, *loop, layerAt, c.index);
    for (size_t k = 0; k < scan.carried.size(); ++k) outer_[scan.carried[k]] = em_.local(c.dCarried[k]);
    for (size_t m = 0; m < c.members.size(); ++m)
      for (int64_t k = 0; k < scan.count; ++k) {
        std::string path = elementPath(c.members[m], k);
        if (!wrt_(path)) continue;
        for (size_t j = 0; j < c.sums[m].size(); ++j) {
          const Expr* layer = em_.reshape(em_.slice(em_.local(c.sums[m][j]), 0, k, k + 1), c.shapes[m][j]);
          const Expr*& sum = grads[factors_.empty() ? path : path + kFactorNames[j]];
          sum = em_.addTo(sum, layer);
        }
      }
  }

  int64_t lowRank() const {
    return em_.fn().slots[static_cast<size_t>(factors_.begin()->second.a)].type.tensor.shape[0];
  }

  // Policy::Saved: the reverse loop `loop` reads the layer's values its
  // statements from `at` on need from stacks [Layers, ...] the forward loop
  // fills, instead of recomputing the layer. What does not depend on the
  // values the loop carries (param reads, masks from the positions) is
  // recomputed: it costs no more than a read, and stacking a param would
  // copy it.
  void loadSavedLayer(const Scan& scan, elab::Stmt& loop, size_t at, SlotId index) {
    std::set<SlotId> fromCarried(scan.carried.begin(), scan.carried.end());
    for (const Stmt* s : scan.layer_body) {
      std::set<SlotId> read;
      readsOf(s->value, fromCarried, read);
      if (!read.empty()) fromCarried.insert(s->slot);
    }
    std::set<SlotId> layerSlots;
    for (const Stmt* s : scan.layer_body) layerSlots.insert(s->slot);
    std::set<SlotId> needed;
    for (size_t k = at; k < loop.body.size(); ++k) readsOf(*loop.body[k], layerSlots, needed);
    elab::Body loads;
    em_.beginBody(loads);
    for (const Stmt* s : scan.layer_body) {
      if (!fromCarried.count(s->slot)) {
        loads.push_back(s);  // recomputed
      } else if (needed.count(s->slot)) {
        const Expr* value = em_.sliceAt(em_.local(stackFor(scan, *s)), em_.local(index));
        elab::Stmt* let = em_.newStmt(elab::StmtKind::Let);
        let->value = value;
        let->slot = s->slot;
      }
    }
    em_.endBody();
    loop.body.insert(loop.body.begin() + static_cast<std::ptrdiff_t>(at), loads.begin(), loads.end());
  }

  // A stack [Layers, ...] for the value of layer statement `s`: made
  // before the forward loop, written at the layer's index inside it.
  SlotId stackFor(const Scan& scan, const Stmt& s) {
    elab::Body& top = em_.fn().body;
    auto loopAt = std::find(top.begin(), top.end(), scan.loop);
    auto lastAt = std::find(scan.loop->body.begin(), scan.loop->body.end(), scan.layer_body.back());
    if (loopAt == top.end() || lastAt == scan.loop->body.end())
      throw elab::Error(fmt::format("{}: internal: a layer loop's statements moved", program_.where(em_.at)));
    const TensorType t = Emitter::typeOf(s.value);  // a copy: emitting adds slots
    Shape stacked = t.shape;
    stacked.insert(stacked.begin(), scan.count);
    elab::Body made, store;
    em_.beginBody(made);
    SlotId stack = em_.let(em_.zeros(t.dtype, stacked), "stacked");
    em_.endBody();
    em_.beginBody(store);
    Shape one = t.shape;
    one.insert(one.begin(), 1);
    em_.assign(stack, em_.writeAt(em_.local(stack), em_.reshape(em_.local(s.slot), one), em_.local(scan.index)));
    em_.endBody();
    scan.loop->body.insert(lastAt + 1, store.begin(), store.end());
    scan.loop->varsInScope.push_back(stack);
    top.insert(loopAt, made.begin(), made.end());
    return stack;
  }

  // The slots of `of` that `e` (or `s` and the statements inside it) reads, into `out`.
  static void readsOf(const Expr* e, const std::set<SlotId>& of, std::set<SlotId>& out) {
    if (!e) return;
    if (e->kind == ExprKind::Local && of.count(e->slot)) out.insert(e->slot);
    for (const Expr* x : e->operands) readsOf(x, of, out);
  }
  static void readsOf(const Stmt& s, const std::set<SlotId>& of, std::set<SlotId>& out) {
    readsOf(s.value, of, out);
    for (const Stmt* inner : s.body) readsOf(*inner, of, out);
  }

  // Inside the reverse loop: one layer's cotangents, from those of its
  // outputs to its input's and its params', then the carried variables.
  void reverseLayer(const Stmt& forwardLoop, const Scan& scan, const ReverseCarry& c) {
    std::set<SlotId> local(scan.carried.begin(), scan.carried.end());
    for (const Stmt* s : scan.layer_body) local.insert(s->slot);
    std::map<SlotId, const Expr*> inner;
    std::map<std::string, const Expr*> paramSums;
    cot_ = &inner;
    inLoop_ = &local;
    for (size_t k = 0; k < scan.carried.size(); ++k)
      if (isActive(scan.next[k])) add(scan.next[k], em_.local(c.dCarried[k]));
    for (auto it = scan.layer_body.rbegin(); it != scan.layer_body.rend(); ++it) step(**it, paramSums);
    cot_ = &outer_;
    inLoop_ = nullptr;
    em_.at = forwardLoop.range;
    for (size_t k = 0; k < scan.carried.size(); ++k) {
      const TensorType& t = em_.fn().slots[static_cast<size_t>(scan.carried[k])].type.tensor;
      auto g = inner.find(scan.carried[k]);
      em_.assign(c.dCarried[k], g != inner.end() ? g->second : em_.zeros(t.dtype, t.shape));
    }
    for (size_t m = 0; m < c.members.size(); ++m) {
      auto g = paramSums.find(c.members[m]);
      if (g == paramSums.end()) continue;
      std::vector<const Expr*> layer = {em_.cast(g->second, Scalar::F32)};
      if (!factors_.empty()) {
        const Expr* a = em_.sliceAt(em_.local(c.factorStacks[m].a), em_.local(c.index));
        const Expr* b = em_.sliceAt(em_.local(c.factorStacks[m].b), em_.local(c.index));
        LowRankGrads d = projectLowRank(em_, layer[0], a, b);
        layer = {d.dA, d.dB};
      }
      for (size_t j = 0; j < layer.size(); ++j) {
        Shape one = c.shapes[m][j];
        one.insert(one.begin(), 1);
        em_.assign(c.sums[m][j], em_.writeAt(em_.local(c.sums[m][j]), em_.reshape(layer[j], one),
                                             em_.local(c.index)));
      }
    }
    em_.assign(c.index, em_.binary(sema::BinaryKind::Sub, em_.local(c.index), em_.constant(Scalar::I32, 1)));
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

// The float params `wrt` accepts, in the model's order, with their types.
std::vector<std::pair<std::string, elab::TensorType>> chosenParams(
    const elab::Program& program, const std::function<bool(const std::string&)>& wrt) {
  std::vector<std::pair<std::string, elab::TensorType>> out;
  for (const elab::Instance* inst : program.instances())
    for (const elab::Member& m : inst->params) {
      std::string path = inst->pathOf(m.name);
      if (wrt(path) && sema::isFloat(m.type.dtype)) out.emplace_back(path, m.type);
    }
  return out;
}

// A low-rank gradient's A [r, in] and B [out, r] for each param, as
// parameters of the derived function.
Factors addFactors(const elab::Program& program, const elab::EntryInstance& entry, elab::FnInstance& fn,
                   Emitter& em, const std::function<bool(const std::string&)>& wrt, int64_t rank,
                   std::vector<std::string>& names) {
  Factors out;
  for (const auto& [path, type] : chosenParams(program, wrt)) {
    if (type.shape.size() != 2)
      throw elab::Error(fmt::format("{}: param `{}` is {}: a low-rank gradient (LoRA) factors matrices only",
                                    program.where(entry.fn->decl->range), path, type.str()));
    const Shape shapes[2] = {{rank, type.shape[1]}, {type.shape[0], rank}};
    SlotId slots[2];
    for (int j = 0; j < 2; ++j) {
      names.push_back(path + kFactorNames[j]);
      slots[j] = em.newSlot(names.back(), elab::Type::of({Scalar::F32, shapes[j]}));
      fn.params.push_back(slots[j]);
    }
    out[path] = {slots[0], slots[1]};
  }
  return out;
}

// A param's results: its gradient, or dA and dB from the sums the layer
// loops made and from what reads outside them received.
std::vector<const Expr*> paramResults(Emitter& em, std::map<std::string, const Expr*>& grads,
                                      const std::string& path, const elab::TensorType& type,
                                      const Factors& factors) {
  auto g = grads.find(path);
  if (factors.empty()) return {g != grads.end() ? em.cast(g->second, Scalar::F32) : em.zeros(Scalar::F32, type.shape)};
  const Factor& f = factors.at(path);
  const Expr* ab[2] = {em.local(f.a), em.local(f.b)};
  const Expr* outside[2] = {nullptr, nullptr};
  if (g != grads.end()) {
    LowRankGrads d = projectLowRank(em, em.cast(g->second, Scalar::F32), ab[0], ab[1]);
    outside[0] = d.dA;
    outside[1] = d.dB;
  }
  std::vector<const Expr*> out;
  for (int j = 0; j < 2; ++j) {
    const Expr* sum = outside[j];
    if (auto inLoop = grads.find(path + kFactorNames[j]); inLoop != grads.end())
      sum = em.addTo(sum, inLoop->second);
    out.push_back(sum ? sum : em.zeros(Scalar::F32, Emitter::typeOf(ab[j]).shape));
  }
  return out;
}

Gradient derive(elab::Program& program, const elab::EntryInstance& entry,
                const std::function<bool(const std::string&)>& wrt, bool inputs, Policy policy,
                int64_t lowRank, bool attentionKernel) {
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
  std::vector<SlotId> activeInputs;
  for (size_t k = 0; inputs && k < source.params.size(); ++k)
    if (sema::isFloat(fn->slots[static_cast<size_t>(fn->params[k])].type.tensor.dtype))
      activeInputs.push_back(fn->params[k]);
  const ActiveSoFar activeSoFar = [&](const Tape& t, const Expr* e) {
    return e->kind == ExprKind::Local && Activity(*fn, t, wrt, activeInputs).active[static_cast<size_t>(e->slot)];
  };
  Tape tape = copyForward(program, source, em, fn->params, policy, activeSoFar, attentionKernel);
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
  Gradient out;
  out.cotangent = elements(valueType) != 1;
  out.lowRank = lowRank;
  Factors factors;
  if (lowRank > 0) factors = addFactors(program, entry, *fn, em, wrt, lowRank, out.factors);
  Reverse reverse(program, em, tape, Activity(*fn, tape, wrt, activeInputs).active, wrt, policy, factors);
  std::map<std::string, const Expr*> grads = reverse.run(seed);

  em.at = source.decl->range;
  std::vector<const Expr*> results = {tape.result};
  std::vector<elab::Type> types = {tape.result->type};
  for (const auto& [path, type] : chosenParams(program, wrt)) {
    std::vector<const Expr*> rs = paramResults(em, grads, path, type, factors);
    for (size_t j = 0; j < rs.size(); ++j) {
      results.push_back(rs[j]);
      types.push_back(elab::Type::of({Scalar::F32, Emitter::typeOf(rs[j]).shape}));
      out.params.push_back(lowRank > 0 ? path + kFactorNames[j] : path);
    }
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
  fn->key = fmt::format("{}#gradient{}+{}+rank{}{}|{}", source.key, inputs ? "+inputs" : "", policyName(policy),
                        lowRank, attentionKernel ? "+attention-kernel" : "", fmt::join(out.params, "|"));
  out.fn = &program.adopt(std::move(fn));
  out.policy = policy;
  return out;
}

}  // namespace

Gradient deriveGradient(elab::Program& program, const elab::EntryInstance& entry,
                        const std::function<bool(const std::string&)>& wrt, bool inputs, Policy policy,
                        int64_t lowRank, bool attentionKernel) {
  if (policy != Policy::Unrolled) {
    try {
      return derive(program, entry, wrt, inputs, policy, lowRank, attentionKernel);
    } catch (const ScanUnsupported&) {
      // A loop the scan does not take: every layer copied instead.
    }
  }
  return derive(program, entry, wrt, inputs, Policy::Unrolled, lowRank, attentionKernel);
}

}  // namespace linnet::autodiff
