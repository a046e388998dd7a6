#include "export/onnx/onnx_check.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include <stdexcept>
#include <vector>

namespace linnet::exporter::onnx_export {

namespace {

std::string describe(const onnx::TypeProto& t) {
  if (!t.has_tensor_type()) return "not a tensor";
  const onnx::TypeProto_Tensor& tt = t.tensor_type();
  if (!tt.has_shape()) return fmt::format("element type {}, no shape", tt.elem_type());
  std::vector<std::string> dims;
  for (const auto& d : tt.shape().dim())
    dims.push_back(d.has_dim_value() ? std::to_string(d.dim_value()) : d.has_dim_param() ? d.dim_param() : "?");
  return fmt::format("element type {}, [{}]", tt.elem_type(), fmt::join(dims, ", "));
}

// The inferred type against the declared one. In a graph with static
// inputs every output must come back exactly. With a dynamic input axis,
// ONNX infers no sizes through a Range whose length is computed, so an
// output must come back with its element type, its shape unknown or with
// unknown axes, but never contradicting a static axis or fixing a dynamic one.
bool agrees(const onnx::TypeProto& inferred, const onnx::TypeProto& declared, bool dynamic) {
  const onnx::TypeProto_Tensor& d = declared.tensor_type();
  if (!dynamic) return inferred.SerializeAsString() == declared.SerializeAsString();
  if (!inferred.has_tensor_type() || inferred.tensor_type().elem_type() != d.elem_type()) return false;
  const onnx::TypeProto_Tensor& i = inferred.tensor_type();
  if (!i.has_shape()) return true;
  if (i.shape().dim_size() != d.shape().dim_size()) return false;
  for (int a = 0; a < d.shape().dim_size(); ++a) {
    const auto &id = i.shape().dim(a), &dd = d.shape().dim(a);
    if (id.has_dim_value() && (!dd.has_dim_value() || id.dim_value() != dd.dim_value())) return false;
  }
  return true;
}

}  // namespace

void checkModelFile(const std::string& path) {
  try {
    onnx::checker::check_model(path);
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("onnx::checker refuses the model: {}", e.what()));
  }
}

onnx::ModelProto withoutData(const onnx::ModelProto& model) {
  onnx::ModelProto copy;
  copy.set_ir_version(model.ir_version());
  *copy.mutable_opset_import() = model.opset_import();
  onnx::GraphProto* g = copy.mutable_graph();
  const onnx::GraphProto& from = model.graph();
  g->set_name(from.name());
  *g->mutable_node() = from.node();
  *g->mutable_input() = from.input();
  *g->mutable_output() = from.output();
  for (const onnx::TensorProto& t : from.initializer()) {
    onnx::TensorProto* c = g->add_initializer();
    c->set_name(t.name());
    c->set_data_type(t.data_type());
    *c->mutable_dims() = t.dims();
  }
  return copy;
}

void checkInferredShapes(const onnx::ModelProto& model) {
  onnx::ModelProto m = model;
  std::vector<onnx::TypeProto> declared;
  for (onnx::ValueInfoProto& out : *m.mutable_graph()->mutable_output()) {
    declared.push_back(out.type());
    out.mutable_type()->mutable_tensor_type()->clear_shape();
  }
  try {
    onnx::shape_inference::InferShapes(m, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(/*check_type=*/true, /*error_mode=*/1,
                                                                   /*data_prop_val=*/true));
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("ONNX shape inference fails: {}", e.what()));
  }
  bool dynamic = false;
  for (const onnx::ValueInfoProto& in : m.graph().input())
    for (const auto& dim : in.type().tensor_type().shape().dim()) dynamic = dynamic || !dim.has_dim_value();
  for (int k = 0; k < m.graph().output_size(); ++k) {
    const onnx::ValueInfoProto& out = m.graph().output(k);
    if (!agrees(out.type(), declared[k], dynamic))
      throw std::runtime_error(fmt::format("ONNX shape inference gives output `{}` {}, but the entry's is {}",
                                           out.name(), describe(out.type()), describe(declared[k])));
  }
}

}  // namespace linnet::exporter::onnx_export
