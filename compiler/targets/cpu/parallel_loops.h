// Which of linalg's parallel loops run on threads. `convert-linalg-to-
// parallel-loops` makes an `scf.parallel` of every op's parallel dimensions;
// forking threads for each would cost more than small ops take, and nested
// parallel loops would fork inside a fork. So only the outermost parallel
// loop of a nest is kept, and only when its nest does at least
// `minIterations` innermost iterations (every trip count is static); the
// others become plain nested `scf.for` loops. Of a kept loop, only the
// leading dimensions that reach `kMinParallelRows` iterations stay
// parallel, the rest (at least the innermost) nested `scf.for` loops that
// vectorize. `convert-scf-to-openmp` then
// distributes the kept ones. Iterations of a parallel loop write disjoint
// elements and reductions stay sequential `scf.for` loops, so results are
// bitwise those of one thread.
#pragma once

#include <cstdint>

#include "mlir/IR/BuiltinOps.h"

namespace linnet::cpu {

inline constexpr int64_t kMinParallelIterations = 16384;
inline constexpr int64_t kMinParallelRows = 64;

// Returns how many parallel loops were kept.
int keepLargeOuterParallelLoops(mlir::ModuleOp module, int64_t minIterations = kMinParallelIterations);

}  // namespace linnet::cpu
