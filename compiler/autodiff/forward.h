// The forward half of a gradient entry: the entry's body copied into the
// derived function as straight-line code. Calls are inlined with their
// receiver known and the structure (tuples, options, blocks) is resolved
// while copying, so that every tensor the entry computes is one `let` of
// one primitive: the tape the reverse half reads.
//
// A `for` over a sub-block array of the root (the layers) is kept a loop
// (a `Scan`): the layer's code is copied once, reading the params of the
// loop's element, and each iteration saves the values the loop carries
// (the layer's input) into a stacked [Layers, ...] tensor. The reverse half
// runs a loop from the last layer to the first that recomputes the layer
// from its saved input and takes its cotangents: the tape holds one input
// per layer, and the code one copy of the layer, whatever `Layers` is
// (`Policy::Saved` stacks the layer's values the reverse reads instead of
// recomputing them: autodiff/gradient.cpp). With
// `Policy::Unrolled` each layer is copied instead (reading its params
// through `Element k`) and every value stays on the tape.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "autodiff/attention.h"
#include "autodiff/emitter.h"
#include "autodiff/policy.h"
#include "autodiff/token_log_probs.h"

namespace linnet::autodiff {

// What the reverse half needs of a layer loop kept whole.
struct Scan {
  elab::Stmt* loop = nullptr;         // the forward loop (Policy::Saved adds its stacks to it)
  const elab::Expr* array = nullptr;  // the array, an expression of the derived function
  elab::SlotId layer = -1;            // the loop's element
  elab::SlotId index = -1;            // the forward loop's layer index (an i32 it counts up)
  int64_t count = 0;                  // Layers
  // The loop's carried values, each with its stacked copy per layer
  // ([count, ...]) and what an iteration assigns it (the layer's output).
  std::vector<elab::SlotId> carried, saved;
  std::vector<const elab::Expr*> next;
  elab::Body layer_body;  // the layer's statements (lets only), between the saves and the assignments
};

// Thrown where a loop cannot be kept whole (a layer that reads a param of
// another block, a nested loop, a `return` from the loop): the caller
// derives again with Policy::Unrolled.
struct ScanUnsupported : elab::Error {
  using elab::Error::Error;
};

struct Tape {
  // A slot of the derived function that reads a param: its path. A read
  // in a Scan's layer has the array's path with `*` for the element
  // (`layers.*.mlp.up.weight`), and `layers` says how many there are.
  std::map<elab::SlotId, std::string> paramReads;
  std::map<elab::SlotId, int64_t> layers;
  std::map<const elab::Stmt*, Scan> scans;  // by the forward loop
  // Slots whose value does not change the result to first order (the
  // maximum a softmax subtracts): no cotangent flows through them.
  std::set<elab::SlotId> detached;
  // Each attention written out, by its output's slot: the reverse half
  // takes it by its own rule (autodiff/attention.h), not statement by
  // statement.
  std::map<elab::SlotId, AttentionTape> attentions;
  // Each output head's log-probabilities, by the result's slot, likewise
  // (autodiff/token_log_probs.h).
  std::map<elab::SlotId, TokenLogProbsTape> tokenLogProbs;
  const Expr* result = nullptr;  // the entry's value, a Local or a Constant
};

// Whether a value written so far (with the tape so far) depends on a
// differentiated param: the output head asks it of its weight, to leave
// the reverse half less to do where the weight takes no cotangent.
using ActiveSoFar = std::function<bool(const Tape&, const Expr*)>;

// Copies `entry`'s body into `em`'s function, whose first slots are
// `entry`'s parameters. Throws elab::Error naming the place of what cannot
// be differentiated: a state write, a `while` loop. `attentionKernel`:
// the target runs f32 attention's two halves as ops of their own
// (attention.h).
Tape copyForward(const elab::Program& program, const elab::FnInstance& entry, Emitter& em,
                 const std::vector<elab::SlotId>& inputs, Policy policy, const ActiveSoFar& active,
                 bool attentionKernel = false);

// A stacked path (`layers.*.x`) for element k (`layers.k.x`).
std::string elementPath(const std::string& stacked, int64_t k);

}  // namespace linnet::autodiff
