// What every export is held to before it is renamed into place, and what
// the tests check again on the file: onnx::checker on the written model
// (its external data beside it), and ONNX shape inference, run with the
// outputs' shapes cleared, giving each output the shape the entry has.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>

namespace linnet::exporter::onnx_export {

// Throws std::runtime_error with the checker's message.
void checkModelFile(const std::string& path);

// The model without its initializers' data (types and shapes kept): what
// shape inference needs, at a model's size without its weights.
onnx::ModelProto withoutData(const onnx::ModelProto& model);

// Runs strict shape inference on `model` (without data) with the graph
// outputs' shapes cleared, and throws std::runtime_error unless every
// output gets back its declared type (with dynamic input axes: its element
// type, and no axis contradicted; ONNX infers no sizes through computed
// Range lengths).
void checkInferredShapes(const onnx::ModelProto& model);

}  // namespace linnet::exporter::onnx_export
