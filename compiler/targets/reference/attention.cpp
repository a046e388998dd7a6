// The `attention` primitive on the reference backend: its definition
// (docs/language.md, §11), op by op with the backend's own kernels, so each
// step rounds exactly as the same steps written out in Linnet do.
#include "targets/reference/attention.h"

#include <utility>

namespace linnet::reference {

using sema::BinaryKind;
using sema::ReduceKind;
using sema::UnaryKind;

Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& scale, const Tensor& mask) {
  const int r = k.rank();  // [..L, K, D]
  std::vector<int64_t> lead(k.shape.begin(), k.shape.end() - 2);
  const int64_t G = q.shape[r - 2], Q = q.shape[r - 1], D = q.shape[r], K = k.shape[r - 2], E = v.shape[r - 1];
  auto with = [&](std::vector<int64_t> tail) {
    std::vector<int64_t> s = lead;
    s.insert(s.end(), tail.begin(), tail.end());
    return s;
  };
  std::vector<int64_t> swap(r);
  for (int i = 0; i < r; ++i) swap[i] = i;
  std::swap(swap[r - 2], swap[r - 1]);
  // Scores in T, scaled in f32 and rounded to T, then widened.
  Tensor scores = matmul(reshape(q, with({G * Q, D})), permute(k, swap));
  scores = cast(cast(binary(BinaryKind::Mul, cast(scores, Scalar::F32), scale), q.dtype), Scalar::F32);
  scores = select(mask, reshape(scores, with({G, Q, K})), Tensor::scalarF(Scalar::F32, roundTo(Scalar::F32, sema::kAttentionMasked)));
  // Softmax over the keys, the maximum subtracted first.
  int last = r;  // the keys axis of [..L, G, Q, K]
  Tensor e = unary(UnaryKind::Exp, binary(BinaryKind::Sub, scores, reduceAxis(ReduceKind::Max, scores, last, true)));
  Tensor probs = binary(BinaryKind::Div, e, reduceAxis(ReduceKind::Sum, e, last, true));
  Tensor mixed = matmul(reshape(cast(probs, q.dtype), with({G * Q, K})), v);
  return reshape(mixed, with({G, Q, E}));
}

}  // namespace linnet::reference
