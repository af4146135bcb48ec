#pragma once
// Internal to the ONNX importer: the table of ONNX values (each either a run-time graph value or a
// host value known at import time) and the per-node view converters work through.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "ir/error.h"
#include "ir/graph.h"
#include "ir/onnx/host_tensor.h"

namespace onnx {
class NodeProto;
class AttributeProto;
}  // namespace onnx

namespace fusetune::onnx_import {

// One ONNX value. Exactly one of `id` (a run-time value) and `host` (known at import) is set at
// first; a host value used by a run-time op also gets an `id` when it is materialised.
struct OnnxValue {
  int32_t elem_type = kOnnxFloat;
  Shape shape;
  std::optional<ValueId> id;
  std::shared_ptr<const HostTensor> host;
};

// The whole import's state: the graph being built and every ONNX value seen so far.
class ImportState {
 public:
  ImportState(const Limits& limits, std::string source)
      : builder(limits), source(std::move(source)) {}

  GraphBuilder builder;
  std::string source;  // the file, for messages
  // Several names may share one value (Identity), so materialising it once serves them all.
  std::unordered_map<std::string, std::shared_ptr<OnnxValue>> values;
  std::unordered_map<std::string, ValueId> derived;  // see NodeContext::DerivedInput

  // A parameter name that Relay text can spell and no other value has: ONNX names such as
  // "onnx::MatMul_130" or "/attn/Add_output_0" become "onnx__MatMul_130", "_attn_Add_output_0".
  std::string ParamName(const std::string& onnx_name);

  // The graph value of `v` (named `onnx_name`), materialising a host value: a scalar becomes a
  // literal constant; a tensor becomes a parameter carrying the data (so weights do not enter
  // region signatures and the same layer shape shares its tuning).
  ValueId Materialize(const std::string& onnx_name, OnnxValue& v);
  // Declares a name (graph input, initialiser, node output); a second definition is malformed.
  void Define(const std::string& onnx_name, std::shared_ptr<OnnxValue> v);

 private:
  std::unordered_set<std::string> param_names_;
};

// A converter's view of one node. Errors are thrown as UserError without position; the driver
// prefixes them with the file, node and op.
class NodeContext {
 public:
  NodeContext(ImportState& state, const onnx::NodeProto& node, int opset)
      : state_(state), node_(node), opset_(opset) {}

  int opset() const { return opset_; }
  const std::string& op_type() const;
  int num_inputs() const;
  int num_outputs() const;
  // An optional input may be absent (fewer inputs) or given as "".
  bool HasInput(int i) const;
  bool HasOutput(int i) const;  // listed and non-empty
  const OnnxValue& Input(int i) const;
  bool IsHost(int i) const { return Input(i).host != nullptr; }
  // Input i as a graph value (materialised if known at import).
  ValueId Runtime(int i);
  // Input i's value at import time; throws "dynamic shape" naming `what` when it is computed at
  // run time.
  const HostTensor& Host(int i, std::string_view what) const;
  std::vector<int64_t> HostInts(int i, std::string_view what) const;
  TensorType TypeOfInput(int i) const;  // the IR type of input i (throws on non-IR dtypes)

  bool HasAttr(std::string_view name) const;
  int64_t IntAttr(std::string_view name, int64_t fallback) const;
  int64_t RequiredIntAttr(std::string_view name) const;
  float FloatAttr(std::string_view name, float fallback) const;
  std::string StringAttr(std::string_view name, std::string_view fallback) const;
  std::optional<std::vector<int64_t>> IntsAttr(std::string_view name) const;
  const onnx::AttributeProto* Attr(std::string_view name) const;

  // Adds an IR node; its UserErrors (type inference) pass through to the driver's prefix.
  ValueId Emit(const std::string& op, std::vector<ValueId> inputs, const Attrs& attrs = {});
  ValueId EmitConst(Tensor value);
  // A host value made at import (a transposed or cast weight) as a graph value: a scalar becomes
  // a literal, a tensor a parameter with data named after input i and `suffix`. The result is
  // cached per (input, suffix), so a weight two nodes transpose the same way is stored once.
  ValueId DerivedInput(int i, const std::string& suffix,
                       const std::function<HostTensor(const HostTensor&)>& make);
  const TensorType& TypeOf(ValueId id) const { return state_.builder.TypeOf(id); }

  void SetOutput(int i, ValueId id);
  void SetOutput(int i, HostTensor value);
  // Output i is input j unchanged (Identity, Dropout in inference).
  void ForwardInput(int output, int input);

  const Limits& limits() const { return state_.builder.limits(); }

  template <typename... Args>
  [[noreturn]] void Fail(fmt::format_string<Args...> format, Args&&... args) const {
    throw UserError(fmt::format(format, std::forward<Args>(args)...));
  }

 private:
  ImportState& state_;
  const onnx::NodeProto& node_;
  int opset_;
};

using Converter = std::function<void(NodeContext&)>;
using ConverterTable = std::map<std::string, Converter, std::less<>>;

void AddMathConverters(ConverterTable& table);   // convert_math.cc
void AddNNConverters(ConverterTable& table);     // convert_nn.cc
void AddShapeConverters(ConverterTable& table);  // convert_shape.cc
const ConverterTable& Converters();

// Axis in [-rank, rank) made non-negative, or a UserError naming `what`.
int NormalizeOnnxAxis(int64_t axis, int rank, std::string_view what);
std::string ShapeString(const Shape& shape);

}  // namespace fusetune::onnx_import
