// The primitive -> ONNX table: one emitter per tensor expression kind of
// the elaborated program (and per elementwise and reduction kind), each
// writing one or a few standard ONNX nodes (opset kOpset). A kind with no
// ONNX form gives nullopt from `refusal` and is refused before anything is
// written.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "elaborate/program.h"
#include "export/onnx/onnx_graph.h"

namespace linnet::exporter::onnx_export {

inline constexpr int kOpset = 17;

// Why `e` has no ONNX form (the primitive and what is missing), or nullopt
// when emit() can write it. Reads only types and kinds.
std::optional<std::string> refusal(const elab::Expr& e);

// The nodes of tensor expression `e` on its operands' values (in
// e.operands' order; a null operand has an empty name); the result's name.
std::string emit(GraphBuilder& g, const elab::Expr& e, const std::vector<std::string>& operands);

// The primitive an expression kind is (for messages): `matmul`, `exp`, `+`.
std::string primitiveName(const elab::Expr& e);

}  // namespace linnet::exporter::onnx_export
