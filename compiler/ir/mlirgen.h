// MLIRGen: a checked program, instantiated, becomes `linnet` dialect IR.
//
// Instantiation happens here: the root block's generics (nest.toml, then
// --set), then each entry's own generics from the shapes it is compiled
// for. Dimensions, `static for` and sub-block arrays are resolved while
// generating, so every tensor type in the output is static. A method of a
// sub-block becomes one `func.func` per distinct (block, generics, method,
// argument types): the layers of a model share one function, called once
// per layer with that layer's parameters and state, so code size does not
// grow with `Layers`.
//
// Calling convention of the functions generated for an entry `E`:
//   @linnet_E(inputs..., params..., states..., outputs...)   all memrefs
// with params and states in the order of `params()` and `states()`. It
// reads the inputs and params, writes the outputs, and updates the states
// in place. Everything inside is tensors until bufferization.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "autodiff/policy.h"
#include "sema/program.h"
#include "sema/types.h"

namespace linnet::ir {

struct TensorSpec {
  std::string name;  // an input's parameter name, a param's or state's path
  sema::Scalar dtype = sema::Scalar::F32;
  std::vector<int64_t> shape;
  // A literal argument (`--input pos=3`): an integer (i64) or float (f32)
  // that takes the declared dtype of its parameter.
  bool weak = false;
};

struct EntryInstance {
  std::string entry;   // `decode`
  std::string symbol;  // `linnet_decode` (a C symbol in the compiled code)
  std::map<std::string, int64_t> generics;  // the entry's own, as bound
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;  // a tuple result gives several
  // A gradient (MLIRGen::addGradient): outputs `value`, then d value / d
  // param named by the param's path.
  bool gradient = false;
};

// Raised for a program MLIRGen cannot translate; the message names the place.
struct GenError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class MLIRGen {
 public:
  // `program` must have been checked without errors.
  MLIRGen(mlir::MLIRContext& context, const sema::Program& program);
  ~MLIRGen();

  // Generates entry `name` for arguments of the given dtypes and shapes
  // (names are ignored); `generics` gives entry generics the argument
  // shapes do not determine (`generate<Steps>`).
  EntryInstance addEntry(const std::string& name, const std::vector<TensorSpec>& args,
                         const std::map<std::string, int64_t>& generics = {});

  // The gradient of entry `name` (compiler/autodiff) with respect to the
  // params `wrt` names by path (`layers.0.mlp.up.weight`; empty: every
  // float param), as a function of the same calling convention: inputs
  // the entry's, then `cotangent` when its value has more than one
  // element; outputs `value`, then each param's gradient (f32) named by
  // its path.
  // `tape` (autodiff/policy.h): each layer recomputed from its saved
  // input, or every value of every layer kept. `lowRank` > 0: the
  // low-rank (LoRA) gradient of each param, which takes inputs and gives
  // outputs `PATH.lora_A` and `PATH.lora_B` (autodiff/low_rank.h).
  // `attentionKernel`: f32 attention's two halves as linnet.attention_rows
  // and linnet.attention_grad, for a target that keeps them
  // (SharedOptions::targetAttentionF32).
  EntryInstance addGradient(const std::string& name, const std::vector<TensorSpec>& args,
                            const std::map<std::string, int64_t>& generics, const std::vector<std::string>& wrt,
                            autodiff::Policy tape = autodiff::Policy::Scan, int64_t lowRank = 0,
                            bool attentionKernel = false);

  // The entry's parameter types with its generics bound from `generics`
  // and the root's: what `addEntry` needs when no sample arguments exist.
  std::vector<TensorSpec> entryParams(const std::string& name,
                                      const std::map<std::string, int64_t>& generics) const;

  const std::vector<TensorSpec>& params() const;
  const std::vector<TensorSpec>& states() const;
  mlir::ModuleOp module();

  struct Impl;

 private:
  // Runs `add`; on failure removes what it added, so the module stays
  // valid for the entries generated before and after.
  template <typename Add>
  EntryInstance atomically(Add add);
  std::unique_ptr<Impl> impl_;
};

mlir::Type elementType(mlir::MLIRContext& context, sema::Scalar s);

}  // namespace linnet::ir
