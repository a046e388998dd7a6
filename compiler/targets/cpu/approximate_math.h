// Transcendentals the CPU code computes inline rather than through libm.
// `convert-math-to-llvm` makes math.tanh llvm.intr.tanh, which LLVM turns
// into scalar calls to libm's tanhf (there is no vector variant it knows):
// in Gemma's GELU-gated feed-forward those calls (tanhf, then expm1f) were
// 15% of a prefill. tanh rewritten over math.exp is arithmetic the loop
// vectorizer takes, with exp from glibc's vector math library (the model
// is compiled with -fveclib=libmvec, pipeline.cpp).
#pragma once

#include "mlir/IR/BuiltinOps.h"

namespace linnet::cpu {

// Rewrites every f32 math.tanh of `module` (scalar or vector):
//   |x| < 0.625: x + x^3 P(x^2), P of degree 5 (within 0.71 ulp there);
//   otherwise:   copysign(1 - 2 / (exp(2|x|) + 1), x) (within 2 ulps with
//                an exp within 1).
// Both are computed and one selected, so the loop stays branch-free. The
// language allows f32 transcendentals 4 ulps (tests/ops checks every case
// against the reference; bench/README.md records a sweep). Run before the
// math dialect is lowered to LLVM.
void approximateMath(mlir::ModuleOp module);

}  // namespace linnet::cpu
