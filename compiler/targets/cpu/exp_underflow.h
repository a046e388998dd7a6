// exp as the CPU code calls it: never with an argument whose result
// underflows to 0. glibc's vector expf (libmvec, which the loop vectorizer
// calls: pipeline.cpp compiles with -fveclib=libmvec) hands every lane
// outside its fast range to the scalar expf, which also sets errno; a
// masked attention score (-3e38 less the row's maximum) is such a lane, and
// half of a causal prefill's scores are masked. Those calls were 3% of a
// LoRA training step.
#pragma once

#include "mlir/IR/BuiltinOps.h"

namespace linnet::cpu {

// Rewrites every f32 math.exp(x) of `module` (scalar or vector) as
//   x < -104 ? 0 : exp(x < -104 ? 0 : x)
// which is exp(x) bit for bit: below -104, e^x is under half the least
// denormal (2^-150 = e^-103.97), so expf rounds it to +0. NaN compares
// false and stays NaN. Run before the math dialect is lowered to LLVM.
void guardExpUnderflow(mlir::ModuleOp module);

}  // namespace linnet::cpu
