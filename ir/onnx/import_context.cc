#include "ir/onnx/import_context.h"

#include <onnx/onnx_pb.h>

namespace fusetune::onnx_import {
namespace {

bool IsIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsIdentChar(char c) { return IsIdentStart(c) || (c >= '0' && c <= '9') || c == '.'; }

}  // namespace

std::string ShapeString(const Shape& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

int NormalizeOnnxAxis(int64_t axis, int rank, std::string_view what) {
  if (axis < -rank || axis >= rank) {
    throw UserError(fmt::format("{} {} is out of range for rank {} (valid: {} to {})", what, axis,
                                rank, -rank, rank - 1));
  }
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

std::string ImportState::ParamName(const std::string& onnx_name) {
  std::string name;
  for (char c : onnx_name) name += IsIdentChar(c) ? c : '_';
  if (name.empty() || !IsIdentStart(name[0])) name = "_" + name;
  std::string unique = name;
  for (int n = 1; param_names_.count(unique); ++n) unique = name + "_" + std::to_string(n);
  param_names_.insert(unique);
  return unique;
}

ValueId ImportState::Materialize(const std::string& onnx_name, OnnxValue& v) {
  if (v.id) return *v.id;
  FT_CHECK(v.host != nullptr, "an ONNX value with neither a graph value nor host data");
  Tensor t = ToTensor(*v.host, "'" + onnx_name + "'");
  if (t.type().rank() == 0)
    v.id = builder.AddConst(std::move(t));
  else
    v.id = builder.AddParamWithData(ParamName(onnx_name), std::move(t));
  return *v.id;
}

void ImportState::Define(const std::string& onnx_name, std::shared_ptr<OnnxValue> v) {
  if (!values.emplace(onnx_name, std::move(v)).second) {
    throw UserError(fmt::format("value '{}' is defined twice; the file is malformed", onnx_name));
  }
}

const std::string& NodeContext::op_type() const { return node_.op_type(); }
int NodeContext::num_inputs() const { return node_.input_size(); }
int NodeContext::num_outputs() const { return node_.output_size(); }

bool NodeContext::HasInput(int i) const {
  return i < node_.input_size() && !node_.input(i).empty();
}
bool NodeContext::HasOutput(int i) const {
  return i < node_.output_size() && !node_.output(i).empty();
}

const OnnxValue& NodeContext::Input(int i) const {
  if (!HasInput(i)) Fail("input {} is required but missing", i);
  auto it = state_.values.find(node_.input(i));
  FT_CHECK(it != state_.values.end(), "the driver checks inputs before converting");
  return *it->second;
}

ValueId NodeContext::Runtime(int i) {
  Input(i);
  return state_.Materialize(node_.input(i), *state_.values.at(node_.input(i)));
}

const HostTensor& NodeContext::Host(int i, std::string_view what) const {
  const OnnxValue& v = Input(i);
  if (!v.host) {
    Fail(
        "{} (input {}, '{}') is computed at run time, a dynamic shape; fusetune needs it known "
        "at import: export with fixed input shapes (no dynamic_axes) so the exporter or this "
        "importer can fold it",
        what, i, node_.input(i));
  }
  return *v.host;
}

std::vector<int64_t> NodeContext::HostInts(int i, std::string_view what) const {
  const HostTensor& h = Host(i, what);
  std::vector<int64_t> out(static_cast<size_t>(h.size()));
  for (int64_t k = 0; k < h.size(); ++k) out[k] = h.Int(k);
  return out;
}

TensorType NodeContext::TypeOfInput(int i) const {
  const OnnxValue& v = Input(i);
  std::optional<DType> d = RuntimeDType(v.elem_type);
  if (!d) {
    Fail("input {} ('{}') is {}, which fusetune cannot compute in (float32, int32 and bool only)",
         i, node_.input(i), OnnxTypeName(v.elem_type));
  }
  return TensorType{*d, v.shape};
}

const onnx::AttributeProto* NodeContext::Attr(std::string_view name) const {
  for (const onnx::AttributeProto& a : node_.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

bool NodeContext::HasAttr(std::string_view name) const { return Attr(name) != nullptr; }

int64_t NodeContext::IntAttr(std::string_view name, int64_t fallback) const {
  const onnx::AttributeProto* a = Attr(name);
  if (!a) return fallback;
  if (a->type() != onnx::AttributeProto::INT) Fail("attribute '{}' must be an int", name);
  return a->i();
}

int64_t NodeContext::RequiredIntAttr(std::string_view name) const {
  if (!HasAttr(name)) Fail("attribute '{}' is required", name);
  return IntAttr(name, 0);
}

float NodeContext::FloatAttr(std::string_view name, float fallback) const {
  const onnx::AttributeProto* a = Attr(name);
  if (!a) return fallback;
  if (a->type() != onnx::AttributeProto::FLOAT) Fail("attribute '{}' must be a float", name);
  return a->f();
}

std::string NodeContext::StringAttr(std::string_view name, std::string_view fallback) const {
  const onnx::AttributeProto* a = Attr(name);
  if (!a) return std::string(fallback);
  if (a->type() != onnx::AttributeProto::STRING) Fail("attribute '{}' must be a string", name);
  return a->s();
}

std::optional<std::vector<int64_t>> NodeContext::IntsAttr(std::string_view name) const {
  const onnx::AttributeProto* a = Attr(name);
  if (!a) return std::nullopt;
  if (a->type() != onnx::AttributeProto::INTS) Fail("attribute '{}' must be a list of ints", name);
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

ValueId NodeContext::Emit(const std::string& op, std::vector<ValueId> inputs, const Attrs& attrs) {
  return state_.builder.AddNode(op, std::move(inputs), attrs);
}

ValueId NodeContext::EmitConst(Tensor value) { return state_.builder.AddConst(std::move(value)); }

ValueId NodeContext::DerivedInput(int i, const std::string& suffix,
                                  const std::function<HostTensor(const HostTensor&)>& make) {
  const std::string& name = node_.input(i);
  const std::string key = name + "\n" + suffix;
  auto it = state_.derived.find(key);
  if (it != state_.derived.end()) return it->second;
  const std::string hint = name + "_" + suffix;
  Tensor t = ToTensor(make(Host(i, "a weight")), "'" + hint + "'");
  ValueId id = t.type().rank() == 0
                   ? state_.builder.AddConst(std::move(t))
                   : state_.builder.AddParamWithData(state_.ParamName(hint), std::move(t));
  state_.derived.emplace(key, id);
  return id;
}

void NodeContext::SetOutput(int i, ValueId id) {
  if (!HasOutput(i)) return;
  const TensorType& t = TypeOf(id);
  auto v = std::make_shared<OnnxValue>();
  v->elem_type = OnnxTypeOf(t.dtype);
  v->shape = t.shape;
  v->id = id;
  state_.Define(node_.output(i), std::move(v));
}

void NodeContext::SetOutput(int i, HostTensor value) {
  if (!HasOutput(i)) return;
  int64_t n = 1;
  for (int64_t d : value.shape) n *= d;
  FT_CHECK(n == value.size(), "host tensor size disagrees with its shape");
  if (n > limits().max_elements) {
    Fail("the folded value has {} elements, more than the tensor size limit {}", n,
         limits().max_elements);
  }
  auto v = std::make_shared<OnnxValue>();
  v->elem_type = value.elem_type;
  v->shape = value.shape;
  v->host = std::make_shared<const HostTensor>(std::move(value));
  state_.Define(node_.output(i), std::move(v));
}

void NodeContext::ForwardInput(int output, int input) {
  if (!HasOutput(output)) return;
  Input(input);
  state_.Define(node_.output(output), state_.values.at(node_.input(input)));
}

const ConverterTable& Converters() {
  static const ConverterTable table = [] {
    ConverterTable t;
    AddMathConverters(t);
    AddNNConverters(t);
    AddShapeConverters(t);
    return t;
  }();
  return table;
}

}  // namespace fusetune::onnx_import
