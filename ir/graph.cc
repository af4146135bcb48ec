#include "ir/graph.h"

#include <algorithm>
#include <charconv>
#include <cstring>

#include <fmt/format.h>

#include "ir/error.h"

namespace fusetune {
namespace {

// The number a binding name spells ("12" -> 12), or -1 when it is not a plain number.
int64_t NumberOf(const std::string& name) {
  if (name.empty() || name.size() > 9) return -1;
  int64_t n = 0;
  auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), n);
  if (ec != std::errc() || end != name.data() + name.size()) return -1;
  if (name.size() > 1 && name[0] == '0') return -1;  // "01" is a name, not a number
  return n;
}

bool SameData(const std::shared_ptr<const Tensor>& a, const std::shared_ptr<const Tensor>& b) {
  if (!a || !b) return !a && !b;
  if (a == b) return true;
  if (a->type() != b->type()) return false;
  return std::memcmp(a->data(), b->data(), static_cast<size_t>(a->type().NumBytes())) == 0;
}

bool SameValue(const Value& a, const Value& b) {
  return a.kind == b.kind && a.name == b.name && a.type == b.type && a.op == b.op &&
         a.inputs == b.inputs && a.attrs == b.attrs && SameData(a.data, b.data);
}

std::string ScalarLiteral(const Tensor& t) {
  double v = t.Get(0);
  switch (t.dtype()) {
    case DType::kFloat32:
      return FormatAttrValue(v);
    case DType::kInt32:
      return std::to_string(static_cast<int64_t>(v));
    case DType::kBool:
      return v != 0.0 ? "True" : "False";
    default:
      return "?";
  }
}

}  // namespace

int64_t Graph::num_nodes() const {
  return std::count_if(values_.begin(), values_.end(),
                       [](const Value& v) { return v.kind == ValueKind::kNode; });
}

bool Graph::IsOp(ValueId id, std::string_view op_name) const {
  return id >= 0 && id < static_cast<ValueId>(values_.size()) &&
         values_[id].kind == ValueKind::kNode && values_[id].op->name == op_name;
}

std::string Graph::RefName(ValueId id) const {
  const Value& v = values_.at(id);
  if (v.kind != ValueKind::kConst || !v.name.empty()) return "%" + v.name;
  if (v.data && v.type.rank() == 0) return ScalarLiteral(*v.data);
  int index = 0;  // position among the unnamed tensor constants, as Relay's meta table numbers them
  for (ValueId i = 0; i < id; ++i) {
    const Value& c = values_[i];
    if (c.kind == ValueKind::kConst && c.name.empty() && c.type.rank() > 0) ++index;
  }
  return fmt::format("meta[relay.Constant][{}]", index);
}

std::optional<ValueId> Graph::FindByName(const std::string& name) const {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

bool Graph::operator==(const Graph& other) const {
  if (params_ != other.params_ || outputs_ != other.outputs_ ||
      tuple_output_ != other.tuple_output_)
    return false;
  if (values_.size() != other.values_.size()) return false;
  for (size_t i = 0; i < values_.size(); ++i)
    if (!SameValue(values_[i], other.values_[i])) return false;
  return true;
}

// ---------------------------------------------------------------------------------------------

void GraphBuilder::CheckType(const TensorType& t, const std::string& what) const {
  if (t.rank() > limits_.max_rank) {
    throw UserError(fmt::format(
        "{} has type {} of rank {}, above the limit max_rank = {} (raise max_rank to accept it)",
        what, t.ToString(), t.rank(), limits_.max_rank));
  }
  int64_t elements = 1;
  bool over = false;
  for (int64_t d : t.shape) {
    if (d < 0)
      throw UserError(fmt::format("{} has type {} with a negative dimension", what, t.ToString()));
    if (d > 0 && elements > limits_.max_elements / d) over = true;
    if (!over) elements *= d;
  }
  if (over || elements > limits_.max_elements) {
    throw UserError(
        fmt::format("{} has type {} with more than max_elements = {} elements per tensor (raise "
                    "max_elements to accept it)",
                    what, t.ToString(), limits_.max_elements));
  }
}

namespace {
void CheckValueCount(size_t count, const Limits& limits) {
  if (static_cast<int64_t>(count) >= limits.max_nodes) {
    throw UserError(
        fmt::format("graph has more than max_nodes = {} values (parameters, constants and calls); "
                    "raise max_nodes to accept it",
                    limits.max_nodes));
  }
}
}  // namespace

// Records `name` for value `id`; numbered names move the counter for unnamed nodes past them.
static void ClaimName(std::unordered_map<std::string, ValueId>& names, const std::string& name,
                      ValueId id, int& next_number) {
  if (name.empty()) return;
  if (!names.emplace(name, id).second) throw UserError(fmt::format("%{} is defined twice", name));
  int64_t n = NumberOf(name);
  if (n >= next_number) next_number = static_cast<int>(n + 1);
}

ValueId GraphBuilder::AddParam(const std::string& name, const TensorType& type) {
  if (name.empty()) throw UserError("a parameter needs a name");
  CheckValueCount(graph_.values_.size(), limits_);
  CheckType(type, "parameter %" + name);
  ClaimName(graph_.by_name_, name, static_cast<ValueId>(graph_.values_.size()), next_number_);
  Value v;
  v.kind = ValueKind::kParam;
  v.name = name;
  v.type = type;
  graph_.values_.push_back(std::move(v));
  ValueId id = static_cast<ValueId>(graph_.values_.size() - 1);
  graph_.params_.push_back(id);
  return id;
}

ValueId GraphBuilder::AddParamWithData(const std::string& name, Tensor data) {
  return AddParamWithData(name, std::make_shared<const Tensor>(std::move(data)));
}

ValueId GraphBuilder::AddParamWithData(const std::string& name,
                                       std::shared_ptr<const Tensor> data) {
  ValueId id = AddParam(name, data->type());
  graph_.values_[id].data = std::move(data);
  return id;
}

ValueId GraphBuilder::AddConst(Tensor value, const std::string& name) {
  return AddConst(std::make_shared<const Tensor>(std::move(value)), name);
}

ValueId GraphBuilder::AddConst(std::shared_ptr<const Tensor> value, const std::string& name) {
  CheckValueCount(graph_.values_.size(), limits_);
  CheckType(value->type(), name.empty() ? std::string("a constant") : "constant %" + name);
  ClaimName(graph_.by_name_, name, static_cast<ValueId>(graph_.values_.size()), next_number_);
  Value v;
  v.kind = ValueKind::kConst;
  v.name = name;
  v.type = value->type();
  v.data = std::move(value);
  graph_.values_.push_back(std::move(v));
  return static_cast<ValueId>(graph_.values_.size() - 1);
}

ValueId GraphBuilder::AddNode(const std::string& op_name, std::vector<ValueId> inputs,
                              const Attrs& attrs, const std::string& name) {
  const OpDef* op = FindOp(op_name);
  if (!op) throw UserError(fmt::format("unknown operator '{}'", op_name));
  const int n = static_cast<int>(inputs.size());
  if (n < op->min_inputs || (op->max_inputs >= 0 && n > op->max_inputs)) {
    std::string expected;
    if (op->max_inputs < 0)
      expected = fmt::format("at least {}", op->min_inputs);
    else if (op->min_inputs == op->max_inputs)
      expected = std::to_string(op->min_inputs);
    else
      expected = fmt::format("{} to {}", op->min_inputs, op->max_inputs);
    bool plural = !(op->min_inputs == 1 && (op->max_inputs == 1 || op->max_inputs < 0));
    throw UserError(
        fmt::format("{} takes {} input{}, got {}", op->name, expected, plural ? "s" : "", n));
  }
  CheckValueCount(graph_.values_.size(), limits_);
  std::vector<TensorType> types;
  for (int i = 0; i < n; ++i) {
    FT_CHECK(inputs[i] >= 0 && inputs[i] < static_cast<ValueId>(graph_.values_.size()),
             fmt::format("AddNode({}): input {} refers to value {} that does not exist", op_name, i,
                         inputs[i]));
    const TensorType& t = graph_.values_[inputs[i]].type;
    if (!IsSupportedForCompute(t.dtype)) {
      throw UserError(
          fmt::format("{}: input {} ({}) has type {}; {} is not supported for computation "
                      "(supported: float32, int32, bool)",
                      op->name, i, graph_.RefName(inputs[i]), t.ToString(), DTypeName(t.dtype)));
    }
    types.push_back(t);
  }
  Attrs normalised = NormalizeAttrs(*op, attrs);
  TensorType out = op->infer(types, normalised);
  if (!IsSupportedForCompute(out.dtype)) {
    throw UserError(
        fmt::format("{}: result type {} is not supported for computation (supported: float32, "
                    "int32, bool)",
                    op->name, out.ToString()));
  }
  std::string binding = name;
  if (binding.empty()) {
    while (graph_.by_name_.count(binding = std::to_string(next_number_))) ++next_number_;
  }
  CheckType(out, fmt::format("%{} = {}(...)", binding, op->name));
  ClaimName(graph_.by_name_, binding, static_cast<ValueId>(graph_.values_.size()), next_number_);

  Value v;
  v.kind = ValueKind::kNode;
  v.name = std::move(binding);
  v.type = std::move(out);
  v.op = op;
  v.inputs = std::move(inputs);
  v.attrs = std::move(normalised);
  graph_.values_.push_back(std::move(v));
  return static_cast<ValueId>(graph_.values_.size() - 1);
}

void GraphBuilder::CheckAnnotatedType(ValueId id, const TensorType& annotated) const {
  const TensorType& inferred = TypeOf(id);
  if (!(annotated == inferred)) {
    throw UserError(fmt::format("type annotation {} does not match inferred {}",
                                annotated.ToString(), inferred.ToString()));
  }
}

void GraphBuilder::SetOutputs(std::vector<ValueId> outputs, bool tuple) {
  if (outputs.empty()) throw UserError("the graph has no outputs");
  if (!tuple && outputs.size() != 1) {
    FT_CHECK(false, "SetOutputs: several outputs need tuple = true");
  }
  for (ValueId id : outputs) {
    FT_CHECK(id >= 0 && id < static_cast<ValueId>(graph_.values_.size()),
             "SetOutputs: no such value");
  }
  graph_.outputs_ = std::move(outputs);
  graph_.tuple_output_ = tuple;
}

Graph GraphBuilder::Build() && {
  if (graph_.outputs_.empty()) throw UserError("the graph has no outputs");
  auto& users = graph_.users_;
  users.assign(graph_.values_.size(), {});
  for (ValueId v = 0; v < static_cast<ValueId>(graph_.values_.size()); ++v) {
    for (ValueId in : graph_.values_[v].inputs) {
      if (users[in].empty() || users[in].back() != v) users[in].push_back(v);  // add(%x, %x): once
    }
  }
  return std::move(graph_);
}

}  // namespace fusetune
