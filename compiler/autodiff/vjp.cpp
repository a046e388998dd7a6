#include "autodiff/vjp.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <utility>

namespace linnet::autodiff {

namespace {

using sema::BinaryKind;
using sema::ReduceKind;
using sema::UnaryKind;

struct Rule {
  Emitter& em;
  const Expr& def;
  const Expr* y;
  const Expr* g;
  const Cotangents& out;
  const std::string& where;

  const Expr* x(size_t k) const { return def.operand(k); }
  const Shape& shapeOf(size_t k) const { return Emitter::typeOf(x(k)).shape; }
  Scalar dtype() const { return Emitter::typeOf(y).dtype; }
  const Expr* c(double v) { return em.constant(dtype(), v); }
  const Expr* mul(const Expr* a, const Expr* b) { return em.binary(BinaryKind::Mul, a, b); }
  const Expr* div(const Expr* a, const Expr* b) { return em.binary(BinaryKind::Div, a, b); }
  const Expr* neg(const Expr* a) { return em.unary(UnaryKind::Neg, a); }
  // Operand k receives `gk`, summed over the axes it was broadcast along.
  void give(size_t k, const Expr* gk) { out.give(k, em.sumTo(gk, shapeOf(k))); }

  [[noreturn]] void none(const std::string& what) {
    throw elab::Error(fmt::format("{}: {} has no gradient yet, and a differentiated value flows through it",
                                  where, what));
  }

  void unary() {
    const Expr* a = x(0);
    const Expr* d = nullptr;
    switch (def.unary) {
      case UnaryKind::Neg: d = neg(g); break;
      case UnaryKind::Exp: d = mul(g, y); break;
      case UnaryKind::Log: d = div(g, a); break;
      case UnaryKind::Sin: d = mul(g, em.unary(UnaryKind::Cos, a)); break;
      case UnaryKind::Cos: d = neg(mul(g, em.unary(UnaryKind::Sin, a))); break;
      case UnaryKind::Tanh: d = mul(g, em.binary(BinaryKind::Sub, c(1), mul(y, y))); break;
      case UnaryKind::Sqrt: d = div(mul(g, c(0.5)), y); break;
      case UnaryKind::Rsqrt: d = mul(mul(g, c(-0.5)), mul(y, mul(y, y))); break;
      case UnaryKind::Sigmoid: d = mul(g, mul(y, em.binary(BinaryKind::Sub, c(1), y))); break;
      case UnaryKind::Abs:  // sign(a), 0 at 0 (torch's choice)
        d = em.select(em.binary(BinaryKind::Gt, a, c(0)), g,
                      em.select(em.binary(BinaryKind::Lt, a, c(0)), neg(g), c(0)));
        break;
      case UnaryKind::Floor: return;  // zero almost everywhere: nothing flows back
      case UnaryKind::Erf:
        d = mul(g, mul(c(2 / std::sqrt(std::numbers::pi)), em.unary(UnaryKind::Exp, neg(mul(a, a)))));
        break;
      case UnaryKind::Not: return;  // bool
    }
    give(0, d);
  }

  void binary() {
    const Expr *a = x(0), *b = x(1);
    switch (def.binary) {
      case BinaryKind::Add:
        if (out.needs(0)) give(0, g);
        if (out.needs(1)) give(1, g);
        return;
      case BinaryKind::Sub:
        if (out.needs(0)) give(0, g);
        if (out.needs(1)) give(1, neg(g));
        return;
      case BinaryKind::Mul:
        if (out.needs(0)) give(0, mul(g, b));
        if (out.needs(1)) give(1, mul(g, a));
        return;
      case BinaryKind::Div:
        if (out.needs(0)) give(0, div(g, b));
        if (out.needs(1)) give(1, neg(div(mul(g, y), b)));
        return;
      case BinaryKind::Maximum: case BinaryKind::Minimum: {
        // The larger (smaller) operand takes the cotangent; a tie shares it
        // evenly, as torch.maximum does.
        BinaryKind wins = def.binary == BinaryKind::Maximum ? BinaryKind::Gt : BinaryKind::Lt;
        const Expr* half = mul(g, c(0.5));
        const Expr* tie = em.binary(BinaryKind::Eq, a, b);
        if (out.needs(0)) give(0, em.select(em.binary(wins, a, b), g, em.select(tie, half, c(0))));
        if (out.needs(1)) give(1, em.select(em.binary(wins, b, a), g, em.select(tie, half, c(0))));
        return;
      }
      case BinaryKind::Pow: {
        // As torch: no cotangent to the base where the exponent is 0, none to
        // the exponent where the base is 0 and the exponent not negative
        // (0 * log 0 would be NaN).
        if (out.needs(0)) {
          const Expr* d = mul(g, mul(b, em.binary(BinaryKind::Pow, a, em.binary(BinaryKind::Sub, b, c(1)))));
          give(0, em.select(em.binary(BinaryKind::Eq, b, c(0)), c(0), d));
        }
        if (out.needs(1)) {
          const Expr* atZero = em.binary(BinaryKind::And, em.binary(BinaryKind::Eq, a, c(0)),
                                         em.binary(BinaryKind::Ge, b, c(0)));
          give(1, em.select(atZero, c(0), mul(g, mul(y, em.unary(UnaryKind::Log, a)))));
        }
        return;
      }
      case BinaryKind::Rem: none("`%`");
      case BinaryKind::Or: case BinaryKind::And: case BinaryKind::BitOr: case BinaryKind::BitXor:
      case BinaryKind::BitAnd: case BinaryKind::Eq: case BinaryKind::Ne: case BinaryKind::Lt: case BinaryKind::Le:
      case BinaryKind::Gt: case BinaryKind::Ge: case BinaryKind::Shl: case BinaryKind::Shr:
        return;  // integer or bool results: never on a differentiated path
    }
  }

  // The shape of x with the reduced axes kept as 1, and how many elements
  // each output sums.
  Shape keptShape(int64_t& count) const {
    Shape keep = shapeOf(0);
    count = 1;
    bool oneAxis = def.ints.size() == 1 && def.reduce != ReduceKind::Prod && def.reduce != ReduceKind::All &&
                   def.reduce != ReduceKind::Any;
    if (oneAxis) {
      count = keep[static_cast<size_t>(def.ints[0])];
      keep[static_cast<size_t>(def.ints[0])] = 1;
    } else {
      for (size_t k = 0; k < def.ints.size(); ++k) count *= std::exchange(keep[k], 1);
    }
    return keep;
  }

  // `x` summed over the axes `keep` holds as 1, kept as 1.
  const Expr* sumKept(const Expr* x, const Shape& keep) {
    const Shape& from = Emitter::typeOf(x).shape;
    for (size_t k = from.size(); k-- > 0;)
      if (keep[k] == 1 && from[k] != 1) x = em.reduce(ReduceKind::Sum, x, static_cast<int>(k), true);
    return x;
  }

  void reduce() {
    int64_t count = 1;
    Shape keep = keptShape(count);
    const Expr* spread = em.broadcast(em.reshape(g, keep), shapeOf(0));
    switch (def.reduce) {
      case ReduceKind::Sum: give(0, spread); return;
      case ReduceKind::Mean: give(0, div(spread, c(static_cast<double>(count)))); return;
      case ReduceKind::Max: case ReduceKind::Min: {
        // The positions equal to the extreme share the cotangent evenly, as
        // torch's amax and amin do.
        const Expr* hit = em.binary(BinaryKind::Eq, x(0), em.broadcast(em.reshape(y, keep), shapeOf(0)));
        const Expr* ties = em.broadcast(sumKept(em.cast(hit, dtype()), keep), shapeOf(0));
        give(0, em.select(hit, div(spread, ties), c(0)));
        return;
      }
      case ReduceKind::Prod: none("`prod`");
      case ReduceKind::IndexOfMax: case ReduceKind::All: case ReduceKind::Any: return;
    }
  }

  void matmul() {
    const Expr *a = x(0), *b = x(1);
    if (shapeOf(1).size() == 2) {  // a [..., K] times w [K, N]
      if (out.needs(0)) give(0, em.matmul(g, em.swapLastTwo(b)));
      if (out.needs(1)) {
        int64_t K = shapeOf(0).back(), N = shapeOf(1).back();
        const Expr* rows = em.reshape(a, {count(shapeOf(0)) / K, K});
        const Expr* grows = em.reshape(g, {count(Emitter::typeOf(g).shape) / N, N});
        give(1, em.matmul(em.swapLastTwo(rows), grows));
      }
      return;
    }
    if (shapeOf(0).size() < 2) none("a product of a vector with a batch of matrices");
    if (out.needs(0)) give(0, em.matmul(g, em.swapLastTwo(b)));
    if (out.needs(1)) give(1, em.matmul(em.swapLastTwo(a), g));
  }
  static int64_t count(const Shape& s) {
    int64_t n = 1;
    for (int64_t d : s) n *= d;
    return n;
  }

  // table [V, ...] at ids [...]: the rows' cotangents added into their
  // table rows (ScatterRows: N x inner additions, where a product with the
  // ids' one-hot matrix took N x V x inner).
  void gatherRows() {
    const Shape& table = shapeOf(0);
    Expr* scatter = em.raw(ExprKind::ScatterRows, elab::Type::of({dtype(), table}), {x(1), g});
    out.give(0, em.bind(scatter));
  }

  // ScatterRows(ids, rows): each row read back from where it was added.
  void scatterRows() {
    if (!out.needs(1)) return;
    const Shape& rows = shapeOf(1);
    out.give(1, em.bind(em.raw(ExprKind::GatherRows, elab::Type::of({dtype(), rows}), {g, x(0)})));
  }

  // An index of `axisSize` values as a one-hot matrix [N, axisSize] of the
  // cotangent's dtype (`at` an I64 tensor of N elements).
  const Expr* oneHot(const Expr* at, int64_t N, int64_t axisSize) {
    const Expr* column = em.broadcast(em.reshape(at, {N, 1}), {N, axisSize});
    return em.cast(em.binary(BinaryKind::Eq, column, em.iota(Scalar::I64, {N, axisSize}, 1)), dtype());
  }

  // x[i0, i1, ..., il], a tensor of indices per axis: each element's
  // cotangent added where it read. The leading axes' flat position and the
  // last axis each become a one-hot matrix, and dx [lead, last] =
  // onehot(lead)^T (onehot(last) * g): N x (lead + last) values at a time,
  // not N x size of x (a log-probability's read of [P, Vocab] at its
  // targets takes two [P, .] matrices, not one [P, P * Vocab]).
  void gather() {
    const Shape& xs = shapeOf(0);
    const Shape& grid = Emitter::typeOf(y).shape;
    const int64_t N = count(grid), last = xs.back();
    // Leading indices that are the grid's own positions need no one-hot.
    const bool ownRows = def.operands.size() > 2 && readsOwnRows(grid);
    std::vector<const Expr*> at;
    for (size_t k = ownRows ? def.operands.size() - 1 : 1; k < def.operands.size(); ++k) {
      const Expr* i = x(k);
      Scalar it = Emitter::typeOf(i).dtype;
      i = em.binary(BinaryKind::Minimum, em.binary(BinaryKind::Maximum, i, em.constant(it, 0)),
                    em.constant(it, static_cast<double>(xs[k - 1] - 1)));
      at.push_back(em.broadcast(em.cast(i, Scalar::I64), grid));
    }
    const Expr* weighted = mul(oneHot(at.back(), N, last), em.reshape(g, {N, 1}));  // [N, last]
    if (ownRows) {
      out.give(0, em.reshape(weighted, xs));
      return;
    }
    if (at.size() == 1) {
      out.give(0, em.reshape(em.reduce(ReduceKind::Sum, weighted, 0, false), xs));
      return;
    }
    const Expr* lead = at[0];
    int64_t leading = xs[0];
    for (size_t k = 1; k + 1 < at.size(); ++k) {
      lead = em.binary(BinaryKind::Add, em.binary(BinaryKind::Mul, lead, em.constant(Scalar::I64, static_cast<double>(xs[k]))),
                       at[k]);
      leading *= xs[k];
    }
    out.give(0, em.reshape(em.matmul(em.swapLastTwo(oneHot(lead, N, leading)), weighted), xs));
  }

  // Whether the grid is x's leading axes and each leading index is the
  // grid's own position along its axis (the `p` of `x[p, t[p]]`, a
  // comprehension's iota): then grid point n reads row n, the leading
  // one-hot is the identity, and the product with it is skipped (for a
  // log-probability at its targets that product was P x P x Vocab).
  bool readsOwnRows(const Shape& grid) const {
    const Shape& xs = shapeOf(0);
    if (grid.size() + 1 != xs.size() || !std::equal(grid.begin(), grid.end(), xs.begin())) return false;
    for (size_t k = 0; k + 2 < def.operands.size(); ++k) {
      const Expr* i = em.definition(x(k + 1));
      const Shape& is = Emitter::typeOf(i).shape;
      if (i->kind != ExprKind::Iota || i->ints != std::vector<int64_t>{static_cast<int64_t>(k)} ||
          is.size() != grid.size() || is[k] != grid[k])
        return false;
    }
    return true;
  }

  // x[items]: the cotangent put back where the items read, zeros elsewhere.
  void slice() {
    const Shape& xs = shapeOf(0);
    const Expr* d = g;
    // Indexed axes were dropped: each comes back as a one-hot along it.
    for (size_t k = 0; k < def.items.size(); ++k) {
      const elab::SliceItem& item = def.items[k];
      if (item.slice) continue;
      Shape shape = Emitter::typeOf(d).shape;
      shape.insert(shape.begin() + static_cast<ptrdiff_t>(k), 1);
      d = em.reshape(d, shape);
      shape[k] = xs[k];
      const Expr* at = x(static_cast<size_t>(item.index));
      Scalar it = Emitter::typeOf(at).dtype;
      at = em.binary(BinaryKind::Minimum, em.binary(BinaryKind::Maximum, at, em.constant(it, 0)),
                     em.constant(it, static_cast<double>(xs[k] - 1)));
      const Expr* hit = em.binary(BinaryKind::Eq, em.iota(it, shape, static_cast<int>(k)), at);
      d = em.select(hit, em.broadcast(d, shape), c(0));
    }
    // Sliced axes: zeros before and after.
    for (size_t k = 0; k < def.items.size(); ++k) {
      const elab::SliceItem& item = def.items[k];
      if (!item.slice || (item.lo == 0 && item.hi == xs[k])) continue;
      Shape shape = Emitter::typeOf(d).shape;
      std::vector<const Expr*> parts;
      if (item.lo > 0) parts.push_back(em.zeros(dtype(), (shape[k] = item.lo, shape)));
      parts.push_back(d);
      if (item.hi < xs[k]) parts.push_back(em.zeros(dtype(), (shape[k] = xs[k] - item.hi, shape)));
      d = em.concat(parts, static_cast<int>(k));
    }
    out.give(0, d);
  }

  void concat() {
    int axis = static_cast<int>(def.ints[0]);
    int64_t lo = 0;
    for (size_t k = 0; k < def.operands.size(); ++k) {
      int64_t n = shapeOf(k)[static_cast<size_t>(axis)];
      if (out.needs(k)) out.give(k, em.slice(g, axis, lo, lo + n));
      lo += n;
    }
  }

  void run() {
    switch (def.kind) {
      case ExprKind::Unary: return unary();
      case ExprKind::Binary: return binary();
      case ExprKind::Select:  // the condition is bool
        if (out.needs(1)) give(1, em.select(x(0), g, c(0)));
        if (out.needs(2)) give(2, em.select(x(0), c(0), g));
        return;
      case ExprKind::Cast:
        if (sema::isFloat(Emitter::typeOf(x(0)).dtype)) out.give(0, em.cast(g, Emitter::typeOf(x(0)).dtype));
        return;
      case ExprKind::Broadcast: return give(0, g);
      case ExprKind::Reshape: return out.give(0, em.reshape(g, shapeOf(0)));
      case ExprKind::Permute: {
        Shape inverse(def.ints.size());
        for (size_t k = 0; k < def.ints.size(); ++k) inverse[static_cast<size_t>(def.ints[k])] = static_cast<int64_t>(k);
        return out.give(0, em.permute(g, inverse));
      }
      case ExprKind::Concat: return concat();
      case ExprKind::Matmul: return matmul();
      case ExprKind::Reduce: return reduce();
      case ExprKind::GatherRows: return gatherRows();
      case ExprKind::ScatterRows: return scatterRows();
      case ExprKind::Slice: return slice();
      case ExprKind::Gather: return gather();
      case ExprKind::WritePoints: none("`write_points`");
      case ExprKind::WriteSlice: none("`write_slice`");
      // Leaves and inputs of no operand (a param read ends the walk).
      case ExprKind::Constant: case ExprKind::Local: case ExprKind::Param: case ExprKind::Iota: return;
      // Copied away by the forward half: never on the tape.
      case ExprKind::Self: case ExprKind::Sub: case ExprKind::Element: case ExprKind::State:
      case ExprKind::Attention: case ExprKind::AttentionRows: case ExprKind::AttentionGrad: case ExprKind::Call:
      case ExprKind::Tuple:
      case ExprKind::Some:
      case ExprKind::None: case ExprKind::Unwrap:
        throw elab::Error(fmt::format("{}: internal: a structural expression on the gradient tape", where));
    }
  }
};

}  // namespace

void vjp(Emitter& em, const Expr& def, const Expr* y, const Expr* g, const Cotangents& out, const std::string& where) {
  Rule{em, def, y, g, out, where}.run();
}

}  // namespace linnet::autodiff
