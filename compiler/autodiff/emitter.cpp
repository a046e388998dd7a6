#include "autodiff/emitter.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

namespace linnet::autodiff {

using elab::Type;
using sema::BinaryKind;

Expr* Emitter::raw(ExprKind kind, Type type, std::vector<const Expr*> operands) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->type = std::move(type);
  e->range = at;
  e->operands = std::move(operands);
  fn_.exprs.push_back(std::move(e));
  return fn_.exprs.back().get();
}

elab::SlotId Emitter::newSlot(const std::string& name, Type type) {
  fn_.slots.push_back(elab::Slot{name, std::move(type), false});
  return static_cast<elab::SlotId>(fn_.slots.size() - 1);
}

elab::Stmt* Emitter::newStmt(elab::StmtKind kind) {
  auto s = std::make_unique<elab::Stmt>();
  s->kind = kind;
  s->range = at;
  fn_.stmts.push_back(std::move(s));
  body().push_back(fn_.stmts.back().get());
  return fn_.stmts.back().get();
}

const Expr* Emitter::bind(const Expr* value, const std::string& name) {
  if (value->kind == ExprKind::Local || value->kind == ExprKind::Constant) return value;
  return local(let(value, name));
}

elab::SlotId Emitter::let(const Expr* value, const std::string& name) {
  elab::SlotId slot = newSlot(name.empty() ? fmt::format("%{}", fn_.slots.size()) : name, value->type);
  elab::Stmt* s = newStmt(elab::StmtKind::Let);
  s->value = value;
  s->slot = slot;
  lets_[slot] = value;
  return slot;
}

std::vector<const Expr*> Emitter::letTuple(const Expr* value, const std::vector<std::string>& names) {
  elab::Stmt* s = newStmt(elab::StmtKind::LetTuple);
  s->value = value;
  std::vector<const Expr*> elements;
  for (size_t k = 0; k < names.size(); ++k) {
    s->slots.push_back(newSlot(names[k], value->type.elems.at(k)));
    s->bindsEach.push_back(nullptr);
    elements.push_back(local(s->slots.back()));
  }
  return elements;
}

const Expr* Emitter::definition(const Expr* x) const {
  if (x->kind != ExprKind::Local) return x;
  auto it = lets_.find(x->slot);
  return it == lets_.end() ? x : it->second;
}

void Emitter::assign(elab::SlotId slot, const Expr* value) {
  elab::Stmt* s = newStmt(elab::StmtKind::Assign);
  s->value = value;
  s->slot = slot;
  lets_.erase(slot);
}

void Emitter::countedLoop(int64_t count, std::vector<elab::SlotId> vars,
                          const std::function<void(const Expr*)>& body) {
  elab::SlotId index = let(constant(Scalar::I32, 0), "iteration");
  elab::Stmt* loop = newStmt(elab::StmtKind::While);
  // Unbound, so that the loop evaluates it before every iteration.
  Expr* more = raw(ExprKind::Binary, Type::of({Scalar::Bool, {}}),
                   {local(index), constant(Scalar::I32, static_cast<double>(count))});
  more->binary = sema::BinaryKind::Lt;
  loop->value = more;
  loop->tripCount = count;
  loop->slot = index;
  vars.push_back(index);
  loop->varsInScope = std::move(vars);
  beginBody(loop->body);
  body(local(index));
  assign(index, binary(sema::BinaryKind::Add, local(index), constant(Scalar::I32, 1)));
  endBody();
}

const Expr* Emitter::local(elab::SlotId slot) {
  Expr* e = raw(ExprKind::Local, fn_.slots[static_cast<size_t>(slot)].type);
  e->slot = slot;
  return e;
}

void Emitter::ret(const Expr* value) { newStmt(elab::StmtKind::Return)->value = value; }

Shape Emitter::broadcastShapes(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()));
  for (size_t k = 0; k < out.size(); ++k) {
    int64_t x = k < out.size() - a.size() ? 1 : a[k - (out.size() - a.size())];
    int64_t y = k < out.size() - b.size() ? 1 : b[k - (out.size() - b.size())];
    if (x != y && x != 1 && y != 1)
      throw elab::Error(fmt::format("internal: autodiff broadcast [{}] with [{}]", fmt::join(a, ", "), fmt::join(b, ", ")));
    out[k] = x == 1 ? y : x;
  }
  return out;
}

const Expr* Emitter::constant(Scalar dtype, double v) {
  Expr* e = raw(ExprKind::Constant, Type::of({dtype, {}}));
  e->number = v;
  if (!sema::isFloat(dtype)) e->integer = static_cast<int64_t>(v);
  return e;
}

const Expr* Emitter::zeros(Scalar dtype, const Shape& shape) { return broadcast(constant(dtype, 0), shape); }

const Expr* Emitter::unary(sema::UnaryKind k, const Expr* x) {
  Expr* e = raw(ExprKind::Unary, Type::of({typeOf(x).dtype, typeOf(x).shape}), {x});
  e->unary = k;
  return bind(e);
}

const Expr* Emitter::binary(BinaryKind k, const Expr* a, const Expr* b) {
  bool boolean = sema::isComparison(k) || sema::isLogical(k);
  Shape shape = broadcastShapes(typeOf(a).shape, typeOf(b).shape);
  Expr* e = raw(ExprKind::Binary, Type::of({boolean ? Scalar::Bool : typeOf(a).dtype, shape}), {a, b});
  e->binary = k;
  return bind(e);
}

const Expr* Emitter::select(const Expr* cond, const Expr* a, const Expr* b) {
  Shape shape = broadcastShapes(typeOf(cond).shape, broadcastShapes(typeOf(a).shape, typeOf(b).shape));
  return bind(raw(ExprKind::Select, Type::of({typeOf(a).dtype, shape}), {cond, a, b}));
}

const Expr* Emitter::cast(const Expr* x, Scalar to) {
  if (typeOf(x).dtype == to) return x;
  return bind(raw(ExprKind::Cast, Type::of({to, typeOf(x).shape}), {x}));
}

const Expr* Emitter::broadcast(const Expr* x, const Shape& shape) {
  if (typeOf(x).shape == shape) return x;
  return bind(raw(ExprKind::Broadcast, Type::of({typeOf(x).dtype, shape}), {x}));
}

const Expr* Emitter::reshape(const Expr* x, const Shape& shape) {
  if (typeOf(x).shape == shape) return x;
  return bind(raw(ExprKind::Reshape, Type::of({typeOf(x).dtype, shape}), {x}));
}

const Expr* Emitter::permute(const Expr* x, const Shape& perm) {
  Shape shape;
  for (int64_t p : perm) shape.push_back(typeOf(x).shape.at(static_cast<size_t>(p)));
  Expr* e = raw(ExprKind::Permute, Type::of({typeOf(x).dtype, shape}), {x});
  e->ints = perm;
  return bind(e);
}

const Expr* Emitter::swapLastTwo(const Expr* x) {
  Shape perm(typeOf(x).shape.size());
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[perm.size() - 2], perm[perm.size() - 1]);
  return permute(x, perm);
}

// The elaborator's matmul rule (elaborate/primitive_calls.cpp): a matrix
// second operand applies to a's last axis; otherwise batched, broadcasting
// the batch axes.
const Expr* Emitter::matmul(const Expr* a, const Expr* b) {
  const Shape &p = typeOf(a).shape, &q = typeOf(b).shape;
  Shape shape;
  if (q.size() == 2) {
    shape.assign(p.begin(), p.end() - 1);
  } else {
    Shape batchA(p.begin(), p.end() - std::min<size_t>(2, p.size())), batchB(q.begin(), q.end() - 2);
    shape = broadcastShapes(batchA, batchB);
    shape.push_back(p.size() >= 2 ? p[p.size() - 2] : 1);
  }
  shape.push_back(q.back());
  return bind(raw(ExprKind::Matmul, Type::of({typeOf(a).dtype, shape}), {a, b}));
}

const Expr* Emitter::reduce(sema::ReduceKind k, const Expr* x, int axis, bool keepdims) {
  Shape shape = typeOf(x).shape;
  if (keepdims) shape[static_cast<size_t>(axis)] = 1;
  else shape.erase(shape.begin() + axis);
  Expr* e = raw(ExprKind::Reduce, Type::of({typeOf(x).dtype, shape}), {x});
  e->reduce = k;
  e->ints = {axis};
  e->flag = keepdims;
  return bind(e);
}

const Expr* Emitter::slice(const Expr* x, int axis, int64_t lo, int64_t hi) {
  Shape shape = typeOf(x).shape;
  Expr* e = raw(ExprKind::Slice, Type::of({typeOf(x).dtype, {}}), {x});
  for (size_t k = 0; k < shape.size(); ++k) {
    elab::SliceItem item;
    item.lo = static_cast<int>(k) == axis ? lo : 0;
    item.hi = static_cast<int>(k) == axis ? hi : shape[k];
    e->items.push_back(item);
  }
  shape[static_cast<size_t>(axis)] = hi - lo;
  e->type.tensor.shape = shape;
  return bind(e);
}

const Expr* Emitter::sliceAt(const Expr* x, const Expr* index) {
  Shape shape = typeOf(x).shape;
  Expr* e = raw(ExprKind::Slice, Type::of({typeOf(x).dtype, Shape(shape.begin() + 1, shape.end())}), {x, index});
  elab::SliceItem first;
  first.slice = false;
  first.index = 1;
  e->items.push_back(first);
  for (size_t k = 1; k < shape.size(); ++k) {
    elab::SliceItem item;
    item.hi = shape[k];
    e->items.push_back(item);
  }
  return bind(e);
}

const Expr* Emitter::writeAt(const Expr* dest, const Expr* x, const Expr* index) {
  Expr* e = raw(ExprKind::WriteSlice, dest->type, {dest, x, index});
  e->ints = {0};
  return bind(e);
}

const Expr* Emitter::addTo(const Expr* total, const Expr* term) {
  return total ? binary(sema::BinaryKind::Add, total, term) : term;
}

const Expr* Emitter::concat(const std::vector<const Expr*>& xs, int axis) {
  if (xs.size() == 1) return xs[0];
  Shape shape = typeOf(xs[0]).shape;
  shape[static_cast<size_t>(axis)] = 0;
  for (const Expr* x : xs) shape[static_cast<size_t>(axis)] += typeOf(x).shape[static_cast<size_t>(axis)];
  Expr* e = raw(ExprKind::Concat, Type::of({typeOf(xs[0]).dtype, shape}), xs);
  e->ints = {axis};
  return bind(e);
}

const Expr* Emitter::iota(Scalar dtype, const Shape& shape, int axis) {
  Expr* e = raw(ExprKind::Iota, Type::of({dtype, shape}));
  e->ints = {axis};
  return bind(e);
}

const Expr* Emitter::sumTo(const Expr* g, const Shape& shape) {
  const Shape& from = typeOf(g).shape;
  if (from == shape) return g;
  size_t extra = from.size() - shape.size();
  // Axes broadcasting added (leading) or stretched from 1; from the last so
  // that the earlier axes keep their numbers.
  for (size_t k = from.size(); k-- > 0;) {
    bool added = k < extra;
    if (added || (shape[k - extra] == 1 && from[k] != 1)) g = reduce(sema::ReduceKind::Sum, g, static_cast<int>(k), !added);
  }
  return reshape(g, shape);
}

}  // namespace linnet::autodiff
