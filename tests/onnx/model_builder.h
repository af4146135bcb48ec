#pragma once
// Small ONNX models for tests, built with the onnx_proto API and serialised as a file would be.
#include <cstdint>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "ir/graph.h"
#include "ir/tensor.h"

namespace fusetune::testing {

class ModelBuilder {
 public:
  explicit ModelBuilder(int opset = 13);

  // A graph input with static dims (elem_type: onnx::TensorProto::FLOAT etc.).
  ModelBuilder& Input(const std::string& name, const std::vector<int64_t>& dims,
                      int32_t elem_type = onnx::TensorProto::FLOAT);
  // A graph input whose axis `axis` is the symbolic dimension `param`.
  ModelBuilder& DynamicInput(const std::string& name, const std::vector<int64_t>& dims, int axis,
                             const std::string& param);
  // A float graph output that declares no shape, or one of another element type.
  ModelBuilder& Output(const std::string& name);
  ModelBuilder& TypedOutput(const std::string& name, int32_t elem_type);
  ModelBuilder& Output(const std::string& name, const std::vector<int64_t>& dims,
                       int32_t elem_type = onnx::TensorProto::FLOAT);
  ModelBuilder& Initializer(const std::string& name, const std::vector<int64_t>& dims,
                            const std::vector<float>& values);
  ModelBuilder& IntInitializer(const std::string& name, const std::vector<int64_t>& dims,
                               const std::vector<int64_t>& values);
  onnx::NodeProto& Node(const std::string& op_type, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const std::string& name = "");
  // A Constant node with an int64 (or float) tensor value.
  ModelBuilder& IntConstant(const std::string& output, const std::vector<int64_t>& dims,
                            const std::vector<int64_t>& values);
  ModelBuilder& FloatConstant(const std::string& output, const std::vector<int64_t>& dims,
                              const std::vector<float>& values);

  std::string Bytes() const;
  Graph Import() const;  // ImportOnnx(Bytes(), "test.onnx")

  onnx::ModelProto model;
};

void SetAttr(onnx::NodeProto& node, const std::string& name, int64_t value);
void SetAttr(onnx::NodeProto& node, const std::string& name, float value);
void SetAttr(onnx::NodeProto& node, const std::string& name, const std::vector<int64_t>& values);
void SetAttr(onnx::NodeProto& node, const std::string& name, const std::string& value);

onnx::TensorProto FloatTensor(const std::string& name, const std::vector<int64_t>& dims,
                              const std::vector<float>& values);
onnx::TensorProto IntTensor(const std::string& name, const std::vector<int64_t>& dims,
                            const std::vector<int64_t>& values);

// An IR float32 tensor with the given values (row-major).
Tensor F32(const Shape& shape, const std::vector<float>& values);
std::vector<float> Values(const Tensor& t);
// 0.1, 0.2, ... (i + 1) / 10 with alternating signs: distinct, small, exact enough.
std::vector<float> Ramp(int64_t n, float scale = 0.1f);
// The names of the ops of the graph's nodes, in order.
std::vector<std::string> OpNames(const Graph& graph);

}  // namespace fusetune::testing
