// The reference backend: the elaborated program (elaborate/program.h)
// evaluated directly, op by op, with the numeric semantics of
// docs/language.md (every op computed in double and rounded to its dtype). It is the oracle the compiled targets are checked
// against, and the way to get numbers from a model before code generation.
// It is slow by design: clarity over speed.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "autodiff/policy.h"
#include "sema/program.h"
#include "targets/reference/tensor.h"

namespace linnet::reference {

struct ParamSpec {
  std::string path;  // `layers.0.attention.q_proj.weight`
  std::vector<int64_t> shape;
  Scalar dtype = Scalar::F32;
};

// Supplies a param's tensor (from a checkpoint, or random for benchmarks).
using ParamSource = std::function<Tensor(const ParamSpec&)>;

// A low-rank (LoRA) gradient's factors (autodiff/low_rank.h): every
// param differentiated is W + B A, its A [rank, in] and B [out, rank]
// given as `PATH.lora_A` and `PATH.lora_B`, which also name the results.
struct LowRank {
  int64_t rank = 0;  // 0: the params' own gradients
  std::map<std::string, Tensor> factors;
};

class Model {
 public:
  // Instantiates the package's root block with its generics (nest.toml's
  // [generics] and --set overrides, as `linnetc check` does). The program
  // must have been checked without errors.
  explicit Model(const sema::Program& program);
  ~Model();

  // Every param of the instance tree, in declaration order.
  std::vector<ParamSpec> params() const;
  // Every state member, likewise (before bind(), nothing is allocated).
  std::vector<ParamSpec> states() const;
  // Binds every param; state starts zeroed.
  void bind(const ParamSource& source);
  void resetState();
  // A param's current value, by its path; setParam replaces it (same shape
  // and dtype, else EvalError): what an optimizer step writes back.
  Tensor param(const std::string& path) const;
  void setParam(const std::string& path, Tensor value);
  // A state member's current value, by its path (`layers.0.attention.cache_k`):
  // what an exporter's test compares another runtime's caches with.
  Tensor state(const std::string& path) const;

  // Runs an entry of the root block. A tuple result comes back as several
  // tensors. Throws EvalError with a clear message for bad arguments.
  // Generics that the arguments do not determine (`generate<Steps>`) are
  // given in `generics`.
  std::vector<Tensor> call(const std::string& entry, const std::vector<Tensor>& args,
                           const std::map<std::string, int64_t>& generics = {});

  // The entry's value and its gradient with respect to every param whose
  // path `wrt` accepts, from the derived gradient entry
  // (autodiff/gradient.h): `grads[k]` is d value / d `params[k]`, f32. A
  // value of more than one element needs `cotangent` (its type): the
  // gradient is then of the value's dot product with it.
  // With `inputs`, also d value / d each float argument (`inputGrads[k]`
  // for argument `inputs[k]`).
  struct Gradient {
    Tensor value;
    std::vector<std::string> params;
    std::vector<Tensor> grads;
    std::vector<size_t> inputs;
    std::vector<Tensor> inputGrads;
    autodiff::Policy tape = autodiff::Policy::Scan;  // the tape derived (Scan falls back to Unrolled)
  };
  Gradient gradient(const std::string& entry, const std::vector<Tensor>& args,
                    const std::map<std::string, int64_t>& generics,
                    const std::function<bool(const std::string&)>& wrt,
                    const std::optional<Tensor>& cotangent = std::nullopt, bool inputs = false,
                    autodiff::Policy policy = autodiff::Policy::Scan, const LowRank& lowRank = LowRank{});

  // Observes an intermediate by name, so that a test can check a local value
  // (rope's `inv_freq`, say) directly against a reference implementation
  // without changing the model's source. During later calls, every `let`
  // (plain, tuple, or comprehension `let x[i] = ...`) in any fn that binds a
  // tensor named `name` reports the value and where the name is bound
  // (`file:line:col`); a fn called several times reports each time. A later
  // watch of the same name replaces the earlier one; an empty `observer`
  // removes it. With no watch set, a `let` costs one emptiness check more.
  using Observer = std::function<void(const Tensor& value, const std::string& where)>;
  void watch(std::string name, Observer observer);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace linnet::reference
