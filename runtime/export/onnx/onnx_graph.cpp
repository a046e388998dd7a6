#include "export/onnx/onnx_graph.h"

#include <fmt/format.h>

#include <functional>
#include <stdexcept>

#include "nest/tensor.h"

namespace linnet::exporter::onnx_export {

int onnxElementType(DType t) {
  switch (t) {
    case DType::F32: return onnx::TensorProto::FLOAT;
    case DType::BF16: return onnx::TensorProto::BFLOAT16;
    case DType::F16: return onnx::TensorProto::FLOAT16;
    case DType::F64: return onnx::TensorProto::DOUBLE;
    case DType::I32: return onnx::TensorProto::INT32;
    case DType::I64: return onnx::TensorProto::INT64;
    case DType::I16: return onnx::TensorProto::INT16;
    case DType::I8: return onnx::TensorProto::INT8;
    case DType::U8: return onnx::TensorProto::UINT8;
    case DType::Bool: return onnx::TensorProto::BOOL;
  }
  throw std::logic_error("a dtype without an ONNX element type");
}

std::string GraphBuilder::fresh(std::string_view hint) {
  return fmt::format("{}_{}", hint.empty() ? std::string_view("v") : hint, next_++);
}

onnx::NodeProto& GraphBuilder::node(const char* type, const std::vector<std::string>& inputs,
                                    const std::vector<std::string>& outputs) {
  onnx::NodeProto* n = graph_.add_node();
  n->set_op_type(type);
  n->set_name(fmt::format("{}_{}", type, graph_.node_size()));
  for (const std::string& i : inputs) n->add_input(i);
  for (const std::string& o : outputs) n->add_output(o);
  return *n;
}

std::string GraphBuilder::op(const char* type, const std::vector<std::string>& inputs, std::string_view hint) {
  std::string out = fresh(hint.empty() ? std::string_view(type) : hint);
  node(type, inputs, {out});
  return out;
}

std::string GraphBuilder::opWith(const char* type, const std::vector<std::string>& inputs, std::string_view hint,
                                 const std::function<void(onnx::NodeProto&)>& attributes) {
  std::string out = fresh(hint.empty() ? std::string_view(type) : hint);
  attributes(node(type, inputs, {out}));
  return out;
}

std::string GraphBuilder::constantOf(onnx::TensorProto t) {
  std::string out = fresh("const");
  onnx::NodeProto& n = node("Constant", {}, {out});
  onnx::AttributeProto* a = n.add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  *a->mutable_t() = std::move(t);
  return out;
}

std::string GraphBuilder::int64s(const std::vector<int64_t>& values) {
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::INT64);
  t.add_dims(static_cast<int64_t>(values.size()));
  for (int64_t v : values) t.add_int64_data(v);
  return constantOf(std::move(t));
}

std::string GraphBuilder::int64Scalar(int64_t v) { return integerScalar(DType::I64, v); }

std::string GraphBuilder::scalar(DType dtype, double value) {
  onnx::TensorProto t;
  t.set_data_type(onnxElementType(dtype));
  std::string raw(byteSize(dtype), '\0');
  nest::storeElement(dtype, value, reinterpret_cast<std::byte*>(raw.data()));
  t.set_raw_data(std::move(raw));
  return constantOf(std::move(t));
}

std::string GraphBuilder::integerScalar(DType dtype, int64_t value) {
  onnx::TensorProto t;
  t.set_data_type(onnxElementType(dtype));
  std::string raw(byteSize(dtype), '\0');
  // Little-endian two's complement, truncated to the dtype's width.
  for (size_t k = 0; k < raw.size(); ++k) raw[k] = static_cast<char>((static_cast<uint64_t>(value) >> (8 * k)) & 0xff);
  if (dtype == DType::Bool) raw[0] = value != 0;
  t.set_raw_data(std::move(raw));
  return constantOf(std::move(t));
}

void setTypeShape(onnx::ValueInfoProto& v, DType dtype, const std::vector<int64_t>& shape) {
  onnx::TypeProto_Tensor* t = v.mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnxElementType(dtype));
  onnx::TensorShapeProto* s = t->mutable_shape();
  for (int64_t d : shape) s->add_dim()->set_dim_value(d);
}

void GraphBuilder::input(const std::string& name, DType dtype, const std::vector<int64_t>& shape) {
  onnx::ValueInfoProto* v = graph_.add_input();
  v->set_name(name);
  setTypeShape(*v, dtype, shape);
}

void GraphBuilder::output(const std::string& name, DType dtype, const std::vector<int64_t>& shape) {
  onnx::ValueInfoProto* v = graph_.add_output();
  v->set_name(name);
  setTypeShape(*v, dtype, shape);
}

void setInt(onnx::NodeProto& n, const char* name, int64_t v) {
  onnx::AttributeProto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

void setInts(onnx::NodeProto& n, const char* name, const std::vector<int64_t>& v) {
  onnx::AttributeProto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

void setFloat(onnx::NodeProto& n, const char* name, float v) {
  onnx::AttributeProto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

}  // namespace linnet::exporter::onnx_export
