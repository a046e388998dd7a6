// An elaborated entry (elaborate/program.h) as an ONNX graph: its body
// walked as the reference evaluator walks it (function instances inlined,
// `static for` over an array unrolled), each expression one or a few nodes
// (onnx_emitters.cpp, one emitter per primitive). Params become
// initializers named by their Linnet paths (their data is the caller's to
// add), states the entry touches `past.<path>` inputs and `present.<path>`
// outputs, arguments inputs by their parameter names, results outputs.
// Throws Refusal, naming the construct and its place, for what ONNX cannot
// express; nothing is written by this step.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "elaborate/program.h"
#include "export/onnx/onnx_graph.h"

namespace linnet::exporter::onnx_export {

struct Refusal : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct GraphValue {
  std::string name;
  elab::TensorType type;
};

struct LoweredEntry {
  std::vector<GraphValue> inputs, outputs;  // the entry's arguments and results
  std::vector<GraphValue> params;           // read by the entry, in declaration order
  struct State {
    std::string path;
    elab::TensorType type;
  };
  std::vector<State> states;  // past.<path> in, present.<path> out, in the tree's order
};

LoweredEntry lowerEntry(const elab::Program& program, const elab::EntryInstance& entry, GraphBuilder& graph);

}  // namespace linnet::exporter::onnx_export
