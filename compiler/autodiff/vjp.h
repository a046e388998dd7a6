// One vector-Jacobian product per expression kind of the elaborated
// program: given the cotangent `g` of a value y = kind(operands), the
// cotangent each operand receives. The switch in vjp.cpp covers every
// ExprKind (-Werror=switch): a kind added to elaborate/program.h without a
// rule, or without a reason it has none, does not build.
#pragma once

#include <functional>

#include "autodiff/emitter.h"

namespace linnet::autodiff {

// Whether operand k of the value needs its cotangent (it depends on a
// param being differentiated); `give(k, gk)` receives it.
struct Cotangents {
  std::function<bool(size_t)> needs;
  std::function<void(size_t, const Expr*)> give;
};

// Emits the cotangents of `def`'s operands from `g`, the cotangent of its
// value `y` (a Local of the same type). Throws elab::Error, naming `where`,
// for a kind on a differentiated path that has no rule yet.
void vjp(Emitter& em, const Expr& def, const Expr* y, const Expr* g, const Cotangents& out, const std::string& where);

}  // namespace linnet::autodiff
