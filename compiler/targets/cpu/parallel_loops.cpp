#include "targets/cpu/parallel_loops.h"

#include <optional>
#include <utility>
#include <vector>

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace linnet::cpu {

namespace {

std::optional<int64_t> constantIndex(mlir::Value v) {
  if (auto c = v.getDefiningOp<mlir::arith::ConstantIndexOp>()) return c.value();
  return std::nullopt;
}

// Static trip count of one dimension, or nullopt when a bound is dynamic.
std::optional<int64_t> tripCount(mlir::Value lb, mlir::Value ub, mlir::Value step) {
  auto l = constantIndex(lb), u = constantIndex(ub), s = constantIndex(step);
  if (!l || !u || !s || *s <= 0) return std::nullopt;
  return *u > *l ? (*u - *l + *s - 1) / *s : 0;
}

// The product of a parallel loop's own trip counts (a dynamic one counts once).
int64_t ownIterations(mlir::scf::ParallelOp p) {
  int64_t n = 1;
  for (size_t d = 0; d < p.getNumLoops(); ++d)
    n *= tripCount(p.getLowerBound()[d], p.getUpperBound()[d], p.getStep()[d]).value_or(1);
  return n;
}

// Innermost iterations the nest under `op` runs, counting nested loops'
// static trip counts (a dynamic loop counts once: too little work is the
// safe side of the estimate).
int64_t iterationsBelow(mlir::Operation* op) {
  int64_t most = 1;
  for (mlir::Region& region : op->getRegions())
    for (mlir::Block& block : region)
      for (mlir::Operation& inner : block) {
        int64_t here = 1;
        if (auto f = mlir::dyn_cast<mlir::scf::ForOp>(inner))
          here = tripCount(f.getLowerBound(), f.getUpperBound(), f.getStep()).value_or(1) * iterationsBelow(f);
        else if (auto p = mlir::dyn_cast<mlir::scf::ParallelOp>(inner))
          here = ownIterations(p) * iterationsBelow(p);
        else if (inner.getNumRegions() > 0)
          here = iterationsBelow(&inner);
        most = std::max(most, here);
      }
  return most;
}

// `p`'s body at `b`, inside nested scf.for loops over its dimensions from
// `first` on (outermost first); `map` already maps the dimensions before
// `first`. Erases `p`. Only loops without reductions (what linalg's lowering
// makes) are rewritten.
void bodyInFors(mlir::scf::ParallelOp p, size_t first, mlir::OpBuilder& b, mlir::IRMapping& map) {
  mlir::Location loc = p.getLoc();
  for (size_t d = first; d < p.getNumLoops(); ++d) {
    auto loop = mlir::scf::ForOp::create(b, loc, p.getLowerBound()[d], p.getUpperBound()[d], p.getStep()[d]);
    map.map(p.getInductionVars()[d], loop.getInductionVar());
    b.setInsertionPoint(loop.getBody()->getTerminator());
  }
  for (mlir::Operation& op : p.getBody()->without_terminator()) b.clone(op, map);
  p.erase();
}

// The same loop as nested scf.for loops.
void toNestedFors(mlir::scf::ParallelOp p) {
  mlir::OpBuilder b(p);
  mlir::IRMapping map;
  bodyInFors(p, 0, b, map);
}

// How many leading dimensions of `p` to run on threads: the fewest whose
// iterations reach kMinParallelRows (a dynamic one counts once), never the
// innermost of several. convert-scf-to-openmp collapses the dimensions it
// is given into one iteration space and recovers each index by division in
// every iteration; an innermost dimension left as a loop of its own runs
// without that and vectorizes.
size_t threadedDims(mlir::scf::ParallelOp p) {
  const size_t n = p.getNumLoops();
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < n; ++d) {
    rows *= tripCount(p.getLowerBound()[d], p.getUpperBound()[d], p.getStep()[d]).value_or(1);
    if (rows >= kMinParallelRows) return d + 1;
  }
  return n > 1 ? n - 1 : n;
}

// `p` as a parallel loop over its first `k` dimensions around nested
// scf.for loops over the rest.
void keepOuterDims(mlir::scf::ParallelOp p, size_t k) {
  mlir::OpBuilder b(p);
  auto lead = [&](mlir::ValueRange r) { return r.take_front(k); };
  auto outer = mlir::scf::ParallelOp::create(b, p.getLoc(), lead(p.getLowerBound()), lead(p.getUpperBound()),
                                                lead(p.getStep()));
  mlir::IRMapping map;
  for (size_t d = 0; d < k; ++d) map.map(p.getInductionVars()[d], outer.getInductionVars()[d]);
  b.setInsertionPoint(outer.getBody()->getTerminator());
  bodyInFors(p, k, b, map);
}

}  // namespace

int keepLargeOuterParallelLoops(mlir::ModuleOp module, int64_t minIterations) {
  std::vector<mlir::scf::ParallelOp> serial;
  std::vector<std::pair<mlir::scf::ParallelOp, size_t>> split;  // a kept loop, its threaded dimensions
  int kept = 0;
  // Preorder: an outer loop is decided before the loops inside it.
  module.walk<mlir::WalkOrder::PreOrder>([&](mlir::scf::ParallelOp p) {
    if (p.getNumReductions() != 0) return;
    bool nested = p->getParentOfType<mlir::scf::ParallelOp>() != nullptr;
    if (!nested && ownIterations(p) * iterationsBelow(p) >= minIterations) {
      ++kept;
      if (size_t k = threadedDims(p); k < p.getNumLoops()) split.emplace_back(p, k);
      return;
    }
    serial.push_back(p);
  });
  // Innermost first, so an erased loop never holds one still to rewrite.
  for (auto it = serial.rbegin(); it != serial.rend(); ++it) toNestedFors(*it);
  for (auto [p, k] : split) keepOuterDims(p, k);
  return kept;
}

}  // namespace linnet::cpu
