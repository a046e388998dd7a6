// What every backend does alike with the elaborated program: values that
// are tensors of the backend's own kind (a reference tensor, an SSA value)
// or structure around them (tuples, options, sub-blocks), the expression
// kinds that only build or take apart that structure, and the walk of a
// `static for` over an array's elements. Backends handle the tensor kinds.
#pragma once

#include <memory>
#include <vector>

#include "elaborate/program.h"

namespace linnet::elab {

template <typename Tensor>
struct RuntimeValue {
  enum Kind { TensorV, Tuple, None, Some, BlockV, ArrayV } kind = TensorV;
  Tensor t;
  std::vector<RuntimeValue> elems;  // Tuple; Some holds elems[0]
  const Instance* inst = nullptr;   // BlockV
  const std::vector<std::unique_ptr<Instance>>* array = nullptr;  // ArrayV
  static RuntimeValue of(Tensor t) {
    RuntimeValue v;
    v.t = std::move(t);
    return v;
  }
  static RuntimeValue ofKind(Kind k) {
    RuntimeValue v;
    v.kind = k;
    return v;
  }
  static RuntimeValue block(const Instance* inst) {
    RuntimeValue v = ofKind(BlockV);
    v.inst = inst;
    return v;
  }
};

// Evaluates `e` into `out` when it is a structural kind (Self, Sub, Tuple,
// Some, None, Unwrap), with `eval` for its operands; false for the rest.
template <typename V, typename Eval>
bool evalStructural(const Expr& e, const Instance* self, Eval&& eval, V& out) {
  switch (e.kind) {
    case ExprKind::Self: out = V::block(self); return true;
    case ExprKind::Sub: {
      const Instance* base = eval(*e.operand(0)).inst;
      if (auto it = base->subs.find(e.name); it != base->subs.end()) {
        out = V::block(it->second.get());
      } else {
        out = V::ofKind(V::ArrayV);
        out.array = &base->arrays.at(e.name);
      }
      return true;
    }
    case ExprKind::Element:
      out = V::block(eval(*e.operand(0)).array->at(static_cast<size_t>(e.ints.at(0))).get());
      return true;
    case ExprKind::Tuple:
      out = V::ofKind(V::Tuple);
      for (const Expr* x : e.operands) out.elems.push_back(eval(*x));
      return true;
    case ExprKind::Some:
      out = V::ofKind(V::Some);
      out.elems.push_back(eval(*e.operand(0)));
      return true;
    case ExprKind::None: out = V::ofKind(V::None); return true;
    case ExprKind::Unwrap: out = eval(*e.operand(0)).elems.at(0); return true;
    default: return false;
  }
}

// `for slot in array { body }` over each element in turn (last to first
// for a `reverse` one), until the body returns (`frame.result`).
template <typename V, typename Frame, typename Run>
void forEachElement(const Stmt& s, const V& array, Frame& frame, Run&& run) {
  const size_t n = array.array->size();
  for (size_t k = 0; k < n; ++k) {
    frame.slots[s.slot] = V::block((*array.array)[s.reverse ? n - 1 - k : k].get());
    run(s.body);
    if (frame.result) return;
  }
}

}  // namespace linnet::elab
