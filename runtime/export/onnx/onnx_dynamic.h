// Dynamic axes for an entry's own dimension generics (forward's B and S).
//
// The elaborated program is instantiated, so each lowering has static
// shapes. The entry is lowered at a grid of sizes and the graphs compared
// node by node: where they differ only in integer constants that are
// multilinear in the generics (S, S - 1, B * S, ...), fitted on the grid and
// confirmed at further sizes, the graph computes those constants from its
// inputs' shapes at run time, and each generic becomes a named axis
// (dim_param) of the inputs and outputs. A generic stays static, with its
// reason, when the graphs differ in anything else (their nodes, a constant's
// shape, a float constant), when no fit holds at the confirming sizes, or
// when no input has an axis of exactly its size.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace linnet::exporter::onnx_export {

using Sizes = std::map<std::string, int64_t>;  // entry generic -> size

// Lowers the entry at `sizes` (its graph, without initializers); throws
// std::exception when it cannot be lowered there.
using LowerAt = std::function<onnx::GraphProto(const Sizes& sizes)>;

struct DynamicAxes {
  onnx::GraphProto graph;                       // the graph, its dynamic constants computed
  std::map<std::string, std::string> dynamic;   // generic -> where it is read ("tokens, axis 1")
  std::map<std::string, std::string> staticWhy;  // generic left static -> why
};

// Makes as many of `generics` dynamic as the graphs allow, adding them one at
// a time in order; `fixed` gives the others' sizes (and the size each
// generic stays at when static).
DynamicAxes makeDynamic(const LowerAt& lower, const std::vector<std::string>& generics, const Sizes& fixed);

}  // namespace linnet::exporter::onnx_export
