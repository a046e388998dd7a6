#include "autodiff/low_rank.h"

#include <vector>

namespace linnet::autodiff {

namespace {

// One term of dW: the product p q ([out, n] by [n, in]), or a value.
struct Term {
  const Expr* p = nullptr;
  const Expr* q = nullptr;
  const Expr* value = nullptr;
};

bool isMatrixTranspose(const Expr* e) {
  return e->kind == ExprKind::Permute && e->ints == Shape{1, 0};
}

// x^T, reading through a transpose x was made by (no copy of a copy).
const Expr* transposed(Emitter& em, const Expr* x) {
  const Expr* def = em.definition(x);
  if (isMatrixTranspose(def)) return def->operand(0);
  return em.permute(x, {1, 0});
}

// dW (or its transpose, `flip`) as a sum of terms: through sums of the
// same shape and transposes, down to products of matrices.
void termsOf(Emitter& em, const Expr* x, bool flip, std::vector<Term>& out) {
  const Expr* def = em.definition(x);
  const Shape& shape = Emitter::typeOf(x).shape;
  if (def->kind == ExprKind::Binary && def->binary == sema::BinaryKind::Add &&
      Emitter::typeOf(def->operand(0)).shape == shape && Emitter::typeOf(def->operand(1)).shape == shape) {
    termsOf(em, def->operand(0), flip, out);
    termsOf(em, def->operand(1), flip, out);
  } else if (isMatrixTranspose(def)) {
    termsOf(em, def->operand(0), !flip, out);
  } else if (def->kind == ExprKind::Matmul && Emitter::typeOf(def->operand(0)).shape.size() == 2 &&
             Emitter::typeOf(def->operand(1)).shape.size() == 2) {
    const Expr *p = def->operand(0), *q = def->operand(1);
    out.push_back(flip ? Term{transposed(em, q), transposed(em, p), nullptr} : Term{p, q, nullptr});
  } else {
    out.push_back({nullptr, nullptr, flip ? transposed(em, x) : x});
  }
}

}  // namespace

LowRankGrads projectLowRank(Emitter& em, const Expr* dW, const Expr* a, const Expr* b) {
  std::vector<Term> terms;
  termsOf(em, dW, false, terms);
  LowRankGrads out;
  for (const Term& t : terms) {
    if (t.value) {
      out.dA = em.addTo(out.dA, em.matmul(transposed(em, b), t.value));
      out.dB = em.addTo(out.dB, em.matmul(t.value, transposed(em, a)));
      continue;
    }
    // B^T p q = (p^T B)^T q and p q A^T = ((q A^T)^T p^T)^T: the
    // transposes are of r-wide matrices.
    const Expr* pB = em.matmul(transposed(em, t.p), b);  // [n, r]
    out.dA = em.addTo(out.dA, em.matmul(transposed(em, pB), t.q));
    const Expr* qA = em.matmul(t.q, transposed(em, a));  // [n, r]
    out.dB = em.addTo(out.dB, transposed(em, em.matmul(transposed(em, qA), transposed(em, t.p))));
  }
  return out;
}

}  // namespace linnet::autodiff
