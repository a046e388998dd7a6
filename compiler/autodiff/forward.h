// The forward half of a gradient entry: the entry's body copied into the
// derived function as straight-line code. Calls are inlined with their
// receiver known, each layer of a `for` over an array is copied with its own
// params (read through `Element`), and the structure (tuples, options,
// blocks) is resolved while copying, so that every tensor the entry computes
// is one `let` of one primitive: the tape the reverse half reads.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "autodiff/emitter.h"

namespace linnet::autodiff {

struct Tape {
  // A slot of the derived function that reads a param: its path.
  std::map<elab::SlotId, std::string> paramReads;
  // Slots whose value does not change the result to first order (the
  // maximum a softmax subtracts): no cotangent flows through them.
  std::set<elab::SlotId> detached;
  const Expr* result = nullptr;  // the entry's value, a Local or a Constant
};

// Copies `entry`'s body into `em`'s function, whose first slots are
// `entry`'s parameters. Throws elab::Error naming the place of what cannot
// be differentiated: a state write, a `while` loop.
Tape copyForward(const elab::Program& program, const elab::FnInstance& entry, Emitter& em,
                 const std::vector<elab::SlotId>& inputs);

}  // namespace linnet::autodiff
