#include "model_builder.h"

#include "ir/onnx/onnx_import.h"

namespace fusetune::testing {
namespace {

void SetType(onnx::ValueInfoProto* info, int32_t elem_type, const std::vector<int64_t>* dims) {
  auto* tt = info->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem_type);
  if (!dims) return;
  auto* shape = tt->mutable_shape();
  for (int64_t d : *dims) shape->add_dim()->set_dim_value(d);
}

}  // namespace

ModelBuilder::ModelBuilder(int opset) {
  model.set_ir_version(8);
  model.set_producer_name("fusetune-test");
  auto* id = model.add_opset_import();
  id->set_domain("");
  id->set_version(opset);
  model.mutable_graph()->set_name("test");
}

ModelBuilder& ModelBuilder::Input(const std::string& name, const std::vector<int64_t>& dims,
                                  int32_t elem_type) {
  auto* in = model.mutable_graph()->add_input();
  in->set_name(name);
  SetType(in, elem_type, &dims);
  return *this;
}

ModelBuilder& ModelBuilder::DynamicInput(const std::string& name, const std::vector<int64_t>& dims,
                                         int axis, const std::string& param) {
  Input(name, dims);
  auto* shape = model.mutable_graph()
                    ->mutable_input()
                    ->rbegin()
                    ->mutable_type()
                    ->mutable_tensor_type()
                    ->mutable_shape();
  shape->mutable_dim(axis)->set_dim_param(param);
  return *this;
}

ModelBuilder& ModelBuilder::Output(const std::string& name) {
  return TypedOutput(name, onnx::TensorProto::FLOAT);
}

ModelBuilder& ModelBuilder::TypedOutput(const std::string& name, int32_t elem_type) {
  auto* out = model.mutable_graph()->add_output();
  out->set_name(name);
  SetType(out, elem_type, nullptr);
  return *this;
}

ModelBuilder& ModelBuilder::Output(const std::string& name, const std::vector<int64_t>& dims,
                                   int32_t elem_type) {
  auto* out = model.mutable_graph()->add_output();
  out->set_name(name);
  SetType(out, elem_type, &dims);
  return *this;
}

ModelBuilder& ModelBuilder::Initializer(const std::string& name, const std::vector<int64_t>& dims,
                                        const std::vector<float>& values) {
  *model.mutable_graph()->add_initializer() = FloatTensor(name, dims, values);
  return *this;
}

ModelBuilder& ModelBuilder::IntInitializer(const std::string& name,
                                           const std::vector<int64_t>& dims,
                                           const std::vector<int64_t>& values) {
  *model.mutable_graph()->add_initializer() = IntTensor(name, dims, values);
  return *this;
}

onnx::NodeProto& ModelBuilder::Node(const std::string& op_type,
                                    const std::vector<std::string>& inputs,
                                    const std::vector<std::string>& outputs,
                                    const std::string& name) {
  auto* node = model.mutable_graph()->add_node();
  node->set_op_type(op_type);
  node->set_name(name);
  for (const auto& i : inputs) node->add_input(i);
  for (const auto& o : outputs) node->add_output(o);
  return *node;
}

ModelBuilder& ModelBuilder::IntConstant(const std::string& output, const std::vector<int64_t>& dims,
                                        const std::vector<int64_t>& values) {
  auto& node = Node("Constant", {}, {output});
  auto* a = node.add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  *a->mutable_t() = IntTensor("", dims, values);
  return *this;
}

ModelBuilder& ModelBuilder::FloatConstant(const std::string& output,
                                          const std::vector<int64_t>& dims,
                                          const std::vector<float>& values) {
  auto& node = Node("Constant", {}, {output});
  auto* a = node.add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  *a->mutable_t() = FloatTensor("", dims, values);
  return *this;
}

std::string ModelBuilder::Bytes() const { return model.SerializeAsString(); }

Graph ModelBuilder::Import() const { return ImportOnnx(Bytes(), "test.onnx"); }

void SetAttr(onnx::NodeProto& node, const std::string& name, int64_t value) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}

void SetAttr(onnx::NodeProto& node, const std::string& name, float value) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(value);
}

void SetAttr(onnx::NodeProto& node, const std::string& name, const std::vector<int64_t>& values) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
}

void SetAttr(onnx::NodeProto& node, const std::string& name, const std::string& value) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(value);
}

onnx::TensorProto FloatTensor(const std::string& name, const std::vector<int64_t>& dims,
                              const std::vector<float>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t.add_dims(d);
  // Alternate the two encodings so both are exercised: raw bytes for longer tensors.
  if (values.size() > 4) {
    t.set_raw_data(
        std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
  } else {
    for (float v : values) t.add_float_data(v);
  }
  return t;
}

onnx::TensorProto IntTensor(const std::string& name, const std::vector<int64_t>& dims,
                            const std::vector<int64_t>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::INT64);
  for (int64_t d : dims) t.add_dims(d);
  for (int64_t v : values) t.add_int64_data(v);
  return t;
}

Tensor F32(const Shape& shape, const std::vector<float>& values) {
  Tensor t(TensorType{DType::kFloat32, shape});
  for (size_t i = 0; i < values.size(); ++i) t.as<float>()[i] = values[i];
  return t;
}

std::vector<float> Values(const Tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.size()));
  for (int64_t i = 0; i < t.size(); ++i) v[i] = static_cast<float>(t.Get(i));
  return v;
}

std::vector<float> Ramp(int64_t n, float scale) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = (i % 2 ? -1.0f : 1.0f) * scale * static_cast<float>(i + 1);
  return v;
}

std::vector<std::string> OpNames(const Graph& graph) {
  std::vector<std::string> names;
  for (const Value& v : graph.values())
    if (v.kind == ValueKind::kNode) names.push_back(v.op->name);
  return names;
}

}  // namespace fusetune::testing
