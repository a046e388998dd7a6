// Builds the body of a derived function instance (elaborate/program.h) one
// typed expression at a time. Every computed value is bound to a slot of its
// own by a `let` and used through a Local: the backends evaluate trees, so a
// value that several expressions read is computed once, as the elaborator
// does for a `let`.
#pragma once

#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "elaborate/program.h"

namespace linnet::autodiff {

using elab::Expr;
using elab::ExprKind;
using elab::TensorType;
using sema::Scalar;
using Shape = std::vector<int64_t>;

class Emitter {
 public:
  explicit Emitter(elab::FnInstance& fn) : fn_(fn) {}

  // The place new expressions are attributed to (an error names it).
  SourceRange at;

  elab::FnInstance& fn() { return fn_; }
  // A new expression with no operands' types checked: the callers below
  // compute `type` as the elaborator would.
  Expr* raw(ExprKind kind, elab::Type type, std::vector<const Expr*> operands = {});
  // `let` of `value` (a tensor) into a new slot; returns a Local reading it.
  const Expr* bind(const Expr* value, const std::string& name = "");
  elab::SlotId newSlot(const std::string& name, elab::Type type);
  void ret(const Expr* value);
  // Statements for loops (the stacked tape, forward.h): a `let` into a new
  // slot even of a Local or a Constant (a variable a loop carries), an
  // assignment to a slot, and a local reading a slot.
  elab::SlotId let(const Expr* value, const std::string& name);
  // The elements of a tuple `value` bound by one statement; Locals reading them.
  std::vector<const Expr*> letTuple(const Expr* value, const std::vector<std::string>& names);
  void assign(elab::SlotId slot, const Expr* value);
  // The value a local was bound to by its one `let` (a slot never assigned
  // again), or `x` itself: what a rule reads to recognize an operand's form.
  const Expr* definition(const Expr* x) const;
  const Expr* local(elab::SlotId slot);
  // Statements go into `body` (a loop's) until the matching endBody().
  void beginBody(elab::Body& body) { bodies_.push_back(&body); }
  void endBody() { bodies_.pop_back(); }
  elab::Stmt* newStmt(elab::StmtKind kind);
  // A loop run `count` times: `body` emits one iteration's statements from
  // its index (an i32 scalar); it may assign `vars` (slots let before).
  void countedLoop(int64_t count, std::vector<elab::SlotId> vars, const std::function<void(const Expr*)>& body);

  // Tensor operations, typed and bound; operands broadcast as in the language.
  const Expr* constant(Scalar dtype, double v);
  const Expr* zeros(Scalar dtype, const Shape& shape);
  const Expr* unary(sema::UnaryKind k, const Expr* x);
  const Expr* binary(sema::BinaryKind k, const Expr* a, const Expr* b);
  const Expr* select(const Expr* cond, const Expr* a, const Expr* b);
  const Expr* cast(const Expr* x, Scalar to);  // x itself when it is `to` already
  const Expr* broadcast(const Expr* x, const Shape& shape);
  const Expr* reshape(const Expr* x, const Shape& shape);
  const Expr* permute(const Expr* x, const Shape& perm);
  const Expr* swapLastTwo(const Expr* x);
  const Expr* matmul(const Expr* a, const Expr* b);
  const Expr* reduce(sema::ReduceKind k, const Expr* x, int axis, bool keepdims);
  const Expr* slice(const Expr* x, int axis, int64_t lo, int64_t hi);
  // x[index] along axis 0 (a scalar integer tensor; the axis is dropped),
  // and dest with x written at `index` along axis 0 (x of extent 1 there).
  const Expr* sliceAt(const Expr* x, const Expr* index);
  const Expr* writeAt(const Expr* dest, const Expr* x, const Expr* index);
  const Expr* concat(const std::vector<const Expr*>& xs, int axis);
  // total + term, or term where there is no total yet (a sum of cotangents).
  const Expr* addTo(const Expr* total, const Expr* term);
  const Expr* iota(Scalar dtype, const Shape& shape, int axis);
  // The sum of `g` over the axes that broadcasting stretched to reach g's
  // shape from `shape`: a cotangent brought back to its operand.
  const Expr* sumTo(const Expr* g, const Shape& shape);

  static const TensorType& typeOf(const Expr* e) { return e->type.tensor; }
  static Shape broadcastShapes(const Shape& a, const Shape& b);

 private:
  elab::Body& body() { return bodies_.empty() ? fn_.body : *bodies_.back(); }
  elab::FnInstance& fn_;
  std::vector<elab::Body*> bodies_;
  std::unordered_map<elab::SlotId, const Expr*> lets_;  // erased on assignment
};

}  // namespace linnet::autodiff
