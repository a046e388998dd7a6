// Building an ONNX graph (onnx::GraphProto) node by node: fresh value
// names, constants, the element types of Linnet's dtypes. Only the
// exporter's translation units include this header (and protobuf's).
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/dtype.h"

namespace linnet::exporter::onnx_export {

// ONNX's TensorProto.DataType of a dtype.
int onnxElementType(DType t);

class GraphBuilder {
 public:
  explicit GraphBuilder(onnx::GraphProto& graph) : graph_(graph) {}

  std::string fresh(std::string_view hint);
  // A node of `type` on `inputs` with one new output (named after `hint`);
  // the output's name.
  std::string op(const char* type, const std::vector<std::string>& inputs, std::string_view hint = {});
  // The same with attributes set by the caller on the returned node.
  onnx::NodeProto& node(const char* type, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs);
  std::string opWith(const char* type, const std::vector<std::string>& inputs, std::string_view hint,
                     const std::function<void(onnx::NodeProto&)>& attributes);

  // Constant nodes.
  std::string int64s(const std::vector<int64_t>& values);  // 1-D
  std::string int64Scalar(int64_t v);
  std::string scalar(DType dtype, double value);            // rank 0, rounded to dtype
  std::string integerScalar(DType dtype, int64_t value);

  // Graph inputs and outputs with static shapes.
  void input(const std::string& name, DType dtype, const std::vector<int64_t>& shape);
  void output(const std::string& name, DType dtype, const std::vector<int64_t>& shape);

  onnx::GraphProto& graph() { return graph_; }

 private:
  std::string constantOf(onnx::TensorProto t);
  onnx::GraphProto& graph_;
  int64_t next_ = 0;
};

void setInt(onnx::NodeProto& n, const char* name, int64_t v);
void setInts(onnx::NodeProto& n, const char* name, const std::vector<int64_t>& v);
void setFloat(onnx::NodeProto& n, const char* name, float v);
void setTypeShape(onnx::ValueInfoProto& v, DType dtype, const std::vector<int64_t>& shape);

}  // namespace linnet::exporter::onnx_export
