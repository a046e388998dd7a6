// Reverse-mode differentiation of an entry (docs/train.md, "Gradients").
// The gradient of an elaborated entry with respect to params of the model
// is derived as another function instance of the same program: its
// parameters are the entry's (and a cotangent, below), and it returns a tuple of the entry's value
// and, for each param differentiated, d value / d param (f32, the param's
// shape). Backends run it as they run the entry.
//
// Two halves: forward.h copies the entry into straight-line code (the tape),
// and the reverse walk here gives each value its cotangent by the rules of
// vjp.h, from the last value back to the params.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "autodiff/policy.h"
#include "elaborate/program.h"

namespace linnet::autodiff {

struct Gradient {
  // (value, d/d params[0], d/d params[1], ..., d/d input inputs[0], ...)
  const elab::FnInstance* fn = nullptr;
  std::vector<std::string> params;  // paths (`layers.0.mlp.up.weight`), in the model's order
  std::vector<size_t> inputs;       // the entry's float parameters differentiated, by index
  Policy policy = Policy::Scan;     // the tape it was derived with
  bool cotangent = false;           // whether the function takes one, after the entry's parameters
  // With a low rank (autodiff/low_rank.h): each param differentiated is a
  // matrix W [out, in] seen as W + B A, and has two results in `params`,
  // `PATH.lora_A` ([r, in]) then `PATH.lora_B` ([out, r]); the function
  // takes A and B under the same names (`factors`), after the cotangent.
  int64_t lowRank = 0;
  std::vector<std::string> factors;
};

// The gradient of `entry` (whose value must be a float tensor) with
// respect to every param whose path `wrt` accepts. A value of one element
// is differentiated as is; any other value is weighed by a cotangent of its
// type, which the derived function takes as one more parameter, after the
// entry's (a vector-Jacobian product: `log_probs_packed` weighed as a
// policy-gradient update weighs it). Throws elab::Error naming the place of
// what cannot be differentiated (a state write, a primitive without a rule
// on the differentiated path) and naming the entry when its value is not a
// float tensor.
// With `inputs`, the entry's float arguments are differentiated too, after
// the params (integer ones, like token ids, never are).
// `policy` chooses the tape (forward.h): layer loops kept whole with each
// layer recomputed from its saved input, or every layer copied with every
// value saved. A loop the scan cannot take falls back to the second.
// `lowRank` > 0 asks for the low-rank gradient of every param `wrt`
// accepts (each must be a float matrix; elab::Error names one that is not).
// `attentionKernel`: the target runs f32 attention's two halves as ops of
// their own (linnet.attention_rows and linnet.attention_grad; attention.h),
// which the reference backend does not.
Gradient deriveGradient(elab::Program& program, const elab::EntryInstance& entry,
                        const std::function<bool(const std::string&)>& wrt, bool inputs = false,
                        Policy policy = Policy::Scan, int64_t lowRank = 0, bool attentionKernel = false);

}  // namespace linnet::autodiff
