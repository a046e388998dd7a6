// The `linnet` dialect: the language's tensor primitives on ranked tensors
// with static shapes (MLIRGen instantiates every generic first). Shared by
// every target; only the lowering after `linnet-to-linalg` differs.
#ifndef LINNET_DIALECT_TD
#define LINNET_DIALECT_TD

include "mlir/IR/OpBase.td"

def Linnet_Dialect : Dialect {
  let name = "linnet";
  let cppNamespace = "::linnet::ir";
  let summary = "Tensor primitives of the Linnet language";
  let description = [{
    Ops on ranked tensors of f32, bf16, f16, i32, i64 and i1. Elementwise
    ops broadcast like NumPy (shapes aligned at the right, size-1 axes
    stretch); the result type is always explicit. Floating-point ops on bf16
    and f16 compute in f32 and round once per op, as docs/language.md
    defines them.
  }];
}

class Linnet_Op<string mnemonic, list<Trait> traits = []> :
    Op<Linnet_Dialect, mnemonic, traits>;

#endif  // LINNET_DIALECT_TD
