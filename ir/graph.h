#pragma once
// The graph IR: parameters, constants and op nodes in one value list, in topological order
// (every input of a node precedes it). A Graph is immutable once built; GraphBuilder verifies
// arity, attributes, types and limits as nodes are added.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ir/attrs.h"
#include "ir/op.h"
#include "ir/tensor.h"

namespace fusetune {

using ValueId = int32_t;

enum class ValueKind { kParam, kConst, kNode };

struct Value {
  ValueKind kind = ValueKind::kNode;
  // kParam: the parameter name without '%'. kNode: the binding name without '%' ("0", "1", ...),
  // assigned by the builder when the text had none. kConst: empty unless imported with a name.
  std::string name;
  TensorType type;
  const OpDef* op = nullptr;    // kNode
  std::vector<ValueId> inputs;  // kNode
  Attrs attrs;                  // kNode, normalised
  // kConst; also a kParam that carries weights (ONNX initialisers).
  std::shared_ptr<const Tensor> data;
};

// Protects a server from hostile graphs; each limit is checked with a clear error.
struct Limits {
  int64_t max_nodes = 100000;
  int max_rank = 8;
  int64_t max_elements = int64_t{1} << 30;  // per tensor
  int64_t max_text_bytes = int64_t{64} << 20;
};

class Graph {
 public:
  const std::vector<Value>& values() const { return values_; }
  const Value& value(ValueId id) const { return values_.at(id); }
  const std::vector<ValueId>& params() const { return params_; }
  const std::vector<ValueId>& outputs() const { return outputs_; }
  bool tuple_output() const { return tuple_output_; }
  int64_t num_nodes() const;
  // Node ids that read `id`, in order (each once).
  const std::vector<ValueId>& Users(ValueId id) const { return users_.at(id); }
  // Whether `id` is a node of the op `op_name` (false for parameters, constants and ids out of
  // range): what the pattern matchers (attention, softmax, layer norm written op by op) test.
  bool IsOp(ValueId id, std::string_view op_name) const;
  // "%x", "%0", or a literal for a scalar constant.
  std::string RefName(ValueId id) const;
  std::optional<ValueId> FindByName(const std::string& name) const;  // without '%'

  bool operator==(const Graph& other) const;  // structural, names included

 private:
  friend class GraphBuilder;
  std::vector<Value> values_;
  std::vector<ValueId> params_;
  std::vector<ValueId> outputs_;
  bool tuple_output_ = false;
  std::vector<std::vector<ValueId>> users_;           // per value, filled by GraphBuilder::Build
  std::unordered_map<std::string, ValueId> by_name_;  // every non-empty name
};

class GraphBuilder {
 public:
  explicit GraphBuilder(Limits limits = {}) : limits_(limits) {}

  ValueId AddParam(const std::string& name, const TensorType& type);
  // A parameter that carries a value (an ONNX initialiser, a weight): the interpreter uses the
  // value unless the caller passes one (see interpreter.h).
  ValueId AddParamWithData(const std::string& name, Tensor data);
  ValueId AddConst(Tensor value, const std::string& name = "");
  // The same, sharing `data` with another graph (a rewrite of one keeps its weights, uncopied).
  ValueId AddParamWithData(const std::string& name, std::shared_ptr<const Tensor> data);
  ValueId AddConst(std::shared_ptr<const Tensor> value, const std::string& name = "");
  // Checks arity, attributes and infers the type; throws UserError naming the problem.
  // `name` empty: the next free number.
  ValueId AddNode(const std::string& op_name, std::vector<ValueId> inputs, const Attrs& attrs,
                  const std::string& name = "");
  // When the text annotates a type, check it matches inference.
  void CheckAnnotatedType(ValueId id, const TensorType& annotated) const;
  const TensorType& TypeOf(ValueId id) const { return graph_.values_.at(id).type; }
  void SetOutputs(std::vector<ValueId> outputs, bool tuple);
  Graph Build() &&;

  const Limits& limits() const { return limits_; }

 private:
  void CheckType(const TensorType& t, const std::string& what) const;
  Limits limits_;
  Graph graph_;
  int next_number_ = 0;
};

}  // namespace fusetune
