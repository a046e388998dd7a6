// The walk: the reference evaluator's (targets/reference/model.cpp), with a
// value's graph name in place of its numbers.
#include "export/onnx/onnx_lower.h"

#include <fmt/format.h>

#include <map>
#include <optional>
#include <set>

#include "elaborate/runtime_value.h"
#include "export/onnx/onnx_emitters.h"

namespace linnet::exporter::onnx_export {

namespace {

using elab::Expr;
using elab::ExprKind;
using elab::StmtKind;
using Value = elab::RuntimeValue<std::string>;

struct Frame {
  const elab::Instance* self = nullptr;
  std::vector<Value> slots;
  std::optional<Value> result;
};

class Lowering {
 public:
  Lowering(const elab::Program& program, GraphBuilder& g) : program_(program), g_(g) {}

  LoweredEntry run(const elab::EntryInstance& entry) {
    LoweredEntry out;
    std::vector<Value> args;
    for (size_t k = 0; k < entry.inputs.size(); ++k) {
      std::string name = entry.fn->decl->params[k].name.name;
      g_.input(name, entry.inputs[k].dtype, entry.inputs[k].shape);
      out.inputs.push_back({name, entry.inputs[k]});
      args.push_back(Value::of(name));
    }
    Value r = call(*entry.fn, &program_.root(), std::move(args));
    std::vector<std::pair<const Value*, const elab::Type*>> results;
    if (entry.fn->result.kind == elab::Type::Tuple)
      for (size_t k = 0; k < r.elems.size(); ++k) results.push_back({&r.elems[k], &entry.fn->result.elems[k]});
    else
      results.push_back({&r, &entry.fn->result});
    for (size_t k = 0; k < results.size(); ++k) {
      const auto& [v, type] = results[k];
      if (type->kind != elab::Type::Tensor)
        throw Refusal(fmt::format("{}: entry `{}` returns {}, not tensors: ONNX outputs are tensors",
                                  program_.where(entry.fn->decl->name.range), entry.fn->decl->name.name, type->key()));
      std::string name = results.size() == 1 ? "result" : fmt::format("result.{}", k);
      g_.node("Identity", {v->t}, {name});
      g_.output(name, type->tensor.dtype, type->tensor.shape);
      out.outputs.push_back({name, type->tensor});
    }
    // States in the tree's order, each a past/present pair.
    for (const elab::Instance* inst : program_.instances())
      for (const elab::Member& m : inst->states) {
        auto it = states_.find({inst->id, m.name});
        if (it == states_.end()) continue;
        std::string path = inst->pathOf(m.name);
        g_.node("Identity", {it->second}, {"present." + path});
        g_.output("present." + path, m.type.dtype, m.type.shape);
        out.states.push_back({path, m.type});
      }
    for (const elab::Instance* inst : program_.instances())
      for (const elab::Member& m : inst->params)
        if (params_.count(inst->pathOf(m.name))) out.params.push_back({inst->pathOf(m.name), m.type});
    return out;
  }

 private:
  [[noreturn]] void refuse(SourceRange at, const std::string& why) {
    throw Refusal(fmt::format("{}: {}", program_.where(at), why));
  }

  Value call(const elab::FnInstance& fn, const elab::Instance* self, std::vector<Value> args) {
    Frame f;
    f.self = self;
    f.slots.resize(fn.slots.size());
    for (size_t k = 0; k < fn.params.size(); ++k) f.slots[fn.params[k]] = std::move(args[k]);
    runBody(f, fn.body);
    if (!f.result) return Value::ofKind(Value::Tuple);
    return std::move(*f.result);
  }

  void runBody(Frame& f, const elab::Body& body) {
    for (const elab::Stmt* s : body) {
      exec(f, *s);
      if (f.result) return;
    }
  }

  void exec(Frame& f, const elab::Stmt& s) {
    switch (s.kind) {
      case StmtKind::Let: case StmtKind::Assign: f.slots[s.slot] = eval(f, *s.value); return;
      case StmtKind::LetTuple: {
        Value v = eval(f, *s.value);
        for (size_t i = 0; i < s.slots.size(); ++i) f.slots[s.slots[i]] = v.elems.at(i);
        return;
      }
      case StmtKind::AssignState: {
        std::string v = eval(f, *s.value).t;
        stateName(f.self, s.name);  // declares the pair
        states_[{f.self->id, s.name}] = v;
        return;
      }
      case StmtKind::Return: f.result = s.value ? eval(f, *s.value) : Value::ofKind(Value::Tuple); return;
      case StmtKind::Eval: eval(f, *s.value); return;
      case StmtKind::ForArray:
        elab::forEachElement(s, eval(f, *s.value), f, [&](const elab::Body& body) { runBody(f, body); });
        return;
      case StmtKind::While:
        refuse(s.range, "a `while` loop runs a number of times known only from the data; the ONNX export "
                        "unrolls only `static for` (use an entry without it)");
    }
  }

  // The current value of a state: its `past.<path>` input until assigned.
  std::string stateName(const elab::Instance* self, const std::string& name) {
    auto key = std::make_pair(self->id, name);
    if (auto it = states_.find(key); it != states_.end()) return it->second;
    const elab::Member* m = self->state(name);
    std::string input = "past." + self->pathOf(name);
    g_.input(input, m->type.dtype, m->type.shape);
    states_[key] = input;
    return input;
  }

  Value eval(Frame& f, const Expr& e) {
    Value structural;
    if (elab::evalStructural(e, f.self, [&](const Expr& x) { return eval(f, x); }, structural)) return structural;
    switch (e.kind) {
      case ExprKind::Local: return f.slots.at(e.slot);
      case ExprKind::Param: {
        const elab::Instance* inst = eval(f, *e.operand(0)).inst;
        std::string path = inst->pathOf(e.name);
        params_.insert(path);
        return Value::of(path);
      }
      case ExprKind::State: return Value::of(stateName(f.self, e.name));
      case ExprKind::Call: {
        const elab::Instance* self = e.operand(0) ? eval(f, *e.operand(0)).inst : nullptr;
        std::vector<Value> args;
        for (size_t k = 1; k < e.operands.size(); ++k) args.push_back(eval(f, *e.operand(k)));
        return call(*e.callee, self, std::move(args));
      }
      default: break;
    }
    if (auto why = refusal(e)) refuse(e.range, *why);
    std::vector<std::string> operands;
    for (const Expr* x : e.operands) operands.push_back(x ? eval(f, *x).t : std::string());
    return Value::of(emit(g_, e, operands));
  }

  const elab::Program& program_;
  GraphBuilder& g_;
  std::map<std::pair<int, std::string>, std::string> states_;  // (instance, state) -> current value
  std::set<std::string> params_;
};

}  // namespace

LoweredEntry lowerEntry(const elab::Program& program, const elab::EntryInstance& entry, GraphBuilder& graph) {
  return Lowering(program, graph).run(entry);
}

}  // namespace linnet::exporter::onnx_export
