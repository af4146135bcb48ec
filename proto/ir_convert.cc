#include "proto/ir_convert.h"

#include <algorithm>
#include <cstring>
#include <set>

#include <fmt/format.h>

#include "ir/error.h"

namespace fusetune {
namespace {

[[noreturn]] void Fail(const std::string& where, const std::string& what) {
  throw UserError(fmt::format("{}: {}", where, what));
}

// Names must print back as Relay text: %name with identifier characters only.
bool IsValidName(const std::string& name) {
  if (name.empty()) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.';
  });
}

void CheckName(const std::string& name, const std::string& where) {
  if (!IsValidName(name)) {
    Fail(where,
         fmt::format("name \"{}\" is not an identifier (letters, digits, '_' and '.')", name));
  }
}

std::string Describe(const v1::Value& value, int index) {
  switch (value.kind_case()) {
    case v1::Value::kParam:
      return fmt::format("graph.values[{}] (parameter %{})", index, value.param().name());
    case v1::Value::kConstant:
      return value.constant().name().empty()
                 ? fmt::format("graph.values[{}] (constant)", index)
                 : fmt::format("graph.values[{}] (constant %{})", index, value.constant().name());
    case v1::Value::kNode:
      return value.node().name().empty()
                 ? fmt::format("graph.values[{}] (node {})", index, value.node().op())
                 : fmt::format("graph.values[{}] (node %{} = {})", index, value.node().name(),
                               value.node().op());
    default:
      return fmt::format("graph.values[{}]", index);
  }
}

}  // namespace

// ---- types and tensors ----

v1::DType DTypeToProto(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return v1::DTYPE_FLOAT32;
    case DType::kInt32:
      return v1::DTYPE_INT32;
    case DType::kBool:
      return v1::DTYPE_BOOL;
    case DType::kFloat16:
      return v1::DTYPE_FLOAT16;
    case DType::kBFloat16:
      return v1::DTYPE_BFLOAT16;
  }
  return v1::DTYPE_UNSPECIFIED;
}

DType DTypeFromProto(v1::DType dtype, const std::string& where) {
  switch (dtype) {
    case v1::DTYPE_FLOAT32:
      return DType::kFloat32;
    case v1::DTYPE_INT32:
      return DType::kInt32;
    case v1::DTYPE_BOOL:
      return DType::kBool;
    case v1::DTYPE_FLOAT16:
      return DType::kFloat16;
    case v1::DTYPE_BFLOAT16:
      return DType::kBFloat16;
    default:
      break;
  }
  Fail(where, fmt::format("dtype {} is not one of float32, int32, bool, float16, bfloat16",
                          static_cast<int>(dtype)));
}

v1::TensorType TensorTypeToProto(const TensorType& type) {
  v1::TensorType out;
  out.set_dtype(DTypeToProto(type.dtype));
  for (int64_t d : type.shape) out.add_shape(d);
  return out;
}

TensorType TensorTypeFromProto(const v1::TensorType& type, const std::string& where) {
  TensorType out;
  out.dtype = DTypeFromProto(type.dtype(), where + ".dtype");
  for (int i = 0; i < type.shape_size(); ++i) {
    if (type.shape(i) < 0) {
      Fail(where + fmt::format(".shape[{}]", i),
           fmt::format("dimension {} is negative", type.shape(i)));
    }
    out.shape.push_back(type.shape(i));
  }
  return out;
}

v1::Tensor TensorToProto(const Tensor& tensor) {
  v1::Tensor out;
  *out.mutable_type() = TensorTypeToProto(tensor.type());
  out.set_data(static_cast<const char*>(tensor.data()),
               static_cast<size_t>(tensor.type().NumBytes()));
  return out;
}

Tensor TensorFromProto(const v1::Tensor& tensor, const std::string& where) {
  if (!tensor.has_type()) Fail(where, "the tensor has no type");
  TensorType type = TensorTypeFromProto(tensor.type(), where + ".type");
  // Element counts are checked before anything is allocated; the graph's own limits (per-tensor
  // elements) are applied again by the builder.
  int64_t elements = 1;
  for (int64_t d : type.shape) {
    if (d != 0 && elements > (int64_t{1} << 40) / d) Fail(where, "the tensor is too large");
    elements *= d;
  }
  int64_t want = elements * static_cast<int64_t>(DTypeSize(type.dtype));
  if (static_cast<int64_t>(tensor.data().size()) != want) {
    Fail(where + ".data",
         fmt::format("holds {} bytes; a {} needs {}", tensor.data().size(), type.ToString(), want));
  }
  Tensor out(type);
  if (want > 0) std::memcpy(out.data(), tensor.data().data(), static_cast<size_t>(want));
  if (type.dtype == DType::kBool) {
    const auto* bytes = static_cast<const uint8_t*>(out.data());
    for (int64_t i = 0; i < want; ++i) {
      if (bytes[i] > 1) {
        Fail(where + ".data", fmt::format("bool element {} is {}, not 0 or 1", i, bytes[i]));
      }
    }
  }
  return out;
}

// ---- attributes ----

v1::AttrValue AttrValueToProto(const AttrValue& value) {
  v1::AttrValue out;
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, NoneAttr>) {
          out.mutable_none();
        } else if constexpr (std::is_same_v<T, bool>) {
          out.set_b(v);
        } else if constexpr (std::is_same_v<T, int64_t>) {
          out.set_i(v);
        } else if constexpr (std::is_same_v<T, double>) {
          out.set_f(v);
        } else if constexpr (std::is_same_v<T, std::string>) {
          out.set_s(v);
        } else {
          for (int64_t x : v) out.mutable_ints()->add_values(x);
        }
      },
      value);
  return out;
}

AttrValue AttrValueFromProto(const v1::AttrValue& value, const std::string& where) {
  switch (value.value_case()) {
    case v1::AttrValue::kNone:
      return NoneAttr{};
    case v1::AttrValue::kB:
      return value.b();
    case v1::AttrValue::kI:
      return value.i();
    case v1::AttrValue::kF:
      return value.f();
    case v1::AttrValue::kS:
      return value.s();
    case v1::AttrValue::kInts:
      return IntList(value.ints().values().begin(), value.ints().values().end());
    default:
      break;
  }
  Fail(where, "the attribute has no value");
}

// ---- graphs ----

v1::Graph GraphToProto(const Graph& graph) {
  v1::Graph out;
  for (ValueId id = 0; id < static_cast<ValueId>(graph.values().size()); ++id) {
    const Value& v = graph.value(id);
    v1::Value* pv = out.add_values();
    switch (v.kind) {
      case ValueKind::kParam: {
        v1::Param* p = pv->mutable_param();
        p->set_name(v.name);
        *p->mutable_type() = TensorTypeToProto(v.type);
        if (v.data) *p->mutable_data() = TensorToProto(*v.data);
        break;
      }
      case ValueKind::kConst: {
        v1::Constant* c = pv->mutable_constant();
        c->set_name(v.name);
        FT_CHECK(v.data != nullptr, "a constant without data");
        *c->mutable_value() = TensorToProto(*v.data);
        break;
      }
      case ValueKind::kNode: {
        v1::Node* n = pv->mutable_node();
        n->set_name(v.name);
        n->set_op(v.op->name);
        for (ValueId in : v.inputs) n->add_inputs(in);
        for (const auto& [name, value] : v.attrs.items()) {
          v1::Attr* a = n->add_attrs();
          a->set_name(name);
          *a->mutable_value() = AttrValueToProto(value);
        }
        *n->mutable_type() = TensorTypeToProto(v.type);
        break;
      }
    }
  }
  for (ValueId id : graph.outputs()) out.add_outputs(id);
  out.set_tuple_output(graph.tuple_output());
  return out;
}

Graph GraphFromProto(const v1::Graph& graph, const Limits& limits) {
  // Checked before building anything, so a hostile message costs little.
  if (graph.values_size() > limits.max_nodes) {
    throw UserError(fmt::format(
        "graph.values: {} values (parameters, constants and calls) are more than max_nodes = {}",
        graph.values_size(), limits.max_nodes));
  }
  GraphBuilder builder(limits);
  const int n = graph.values_size();
  for (int i = 0; i < n; ++i) {
    const v1::Value& pv = graph.values(i);
    const std::string where = Describe(pv, i);
    ValueId id = -1;
    try {
      switch (pv.kind_case()) {
        case v1::Value::kParam: {
          const v1::Param& p = pv.param();
          CheckName(p.name(), where);
          if (!p.has_type()) Fail(where, "the parameter has no type");
          TensorType type = TensorTypeFromProto(p.type(), where + ".type");
          if (p.has_data()) {
            Tensor data = TensorFromProto(p.data(), where + ".data");
            if (!(data.type() == type)) {
              Fail(where, fmt::format("its data is a {}, its type {}", data.type().ToString(),
                                      type.ToString()));
            }
            id = builder.AddConst(std::move(data), p.name());
          } else {
            id = builder.AddParam(p.name(), type);
          }
          break;
        }
        case v1::Value::kConstant: {
          const v1::Constant& c = pv.constant();
          if (!c.name().empty()) CheckName(c.name(), where);
          if (!c.has_value()) Fail(where, "the constant has no value");
          id = builder.AddConst(TensorFromProto(c.value(), where + ".value"), c.name());
          break;
        }
        case v1::Value::kNode: {
          const v1::Node& node = pv.node();
          if (!node.name().empty()) CheckName(node.name(), where);
          if (node.op().empty()) Fail(where, "the node has no op");
          std::vector<ValueId> inputs;
          for (int k = 0; k < node.inputs_size(); ++k) {
            int32_t in = node.inputs(k);
            if (in < 0 || in >= i) {
              Fail(where + fmt::format(".inputs[{}]", k),
                   fmt::format("refers to value {}; a node may only read values 0..{} before it",
                               in, i - 1));
            }
            inputs.push_back(in);
          }
          std::vector<std::pair<std::string, AttrValue>> attrs;
          std::set<std::string> seen;
          for (int k = 0; k < node.attrs_size(); ++k) {
            const v1::Attr& a = node.attrs(k);
            std::string attr_where = where + fmt::format(".attrs[{}] ({})", k, a.name());
            if (a.name().empty()) Fail(attr_where, "the attribute has no name");
            if (!seen.insert(a.name()).second) Fail(attr_where, "the attribute is given twice");
            attrs.emplace_back(a.name(), AttrValueFromProto(a.value(), attr_where));
          }
          id = builder.AddNode(node.op(), std::move(inputs), Attrs(std::move(attrs)), node.name());
          if (node.has_type()) {
            builder.CheckAnnotatedType(id, TensorTypeFromProto(node.type(), where + ".type"));
          }
          break;
        }
        default:
          Fail(where, "the value is neither a parameter, a constant nor a node");
      }
    } catch (const UserError& e) {
      // Errors of the builder do not know where in the message they arose; say it once.
      std::string message = e.what();
      if (message.rfind("graph.values[", 0) == 0) throw;
      Fail(where, message);
    }
    FT_CHECK(id == i, "GraphFromProto: value ids must follow message order");
  }
  if (graph.outputs_size() == 0) throw UserError("graph.outputs: the graph has no outputs");
  std::vector<ValueId> outputs;
  for (int k = 0; k < graph.outputs_size(); ++k) {
    int32_t out = graph.outputs(k);
    if (out < 0 || out >= n) {
      throw UserError(
          fmt::format("graph.outputs[{}]: refers to value {}; the graph has {} values", k, out, n));
    }
    outputs.push_back(out);
  }
  if (!graph.tuple_output() && outputs.size() != 1) {
    throw UserError(fmt::format(
        "graph.outputs: {} outputs need tuple_output = true (a single result is one value)",
        outputs.size()));
  }
  builder.SetOutputs(std::move(outputs), graph.tuple_output());
  return std::move(builder).Build();
}

// ---- schedules and plans ----

v1::Schedule ScheduleToProto(const Schedule& schedule) {
  v1::Schedule out;
  for (const auto& [name, value] : schedule.knobs) {
    v1::Knob* k = out.add_knobs();
    k->set_name(name);
    k->set_value(value);
  }
  return out;
}

Schedule ScheduleFromProto(const v1::Schedule& schedule, const std::string& where) {
  Schedule out;
  std::set<std::string> seen;
  for (int i = 0; i < schedule.knobs_size(); ++i) {
    const v1::Knob& k = schedule.knobs(i);
    std::string knob_where = where + fmt::format(".knobs[{}]", i);
    if (!IsValidName(k.name())) {
      Fail(knob_where, fmt::format("knob name \"{}\" is not an identifier", k.name()));
    }
    if (!seen.insert(k.name()).second) {
      Fail(knob_where, fmt::format("knob \"{}\" is given twice", k.name()));
    }
    out.Set(k.name(), k.value());
  }
  return out;
}

v1::Plan PlanToProto(const Graph& graph, const Plan& plan) {
  v1::Plan out;
  out.set_name(plan.name);
  for (const PlanGroup& g : plan.groups) {
    v1::PlanGroup* pg = out.add_groups();
    for (ValueId id : g.nodes) pg->add_nodes(graph.RefName(id));
    *pg->mutable_schedule() = ScheduleToProto(g.schedule);
  }
  return out;
}

Plan PlanFromProto(const Graph& graph, const v1::Plan& plan) {
  Plan out;
  out.name = plan.name();
  for (int i = 0; i < plan.groups_size(); ++i) {
    const v1::PlanGroup& pg = plan.groups(i);
    std::string where = fmt::format("plan.groups[{}]", i);
    PlanGroup group;
    for (int k = 0; k < pg.nodes_size(); ++k) {
      const std::string& ref = pg.nodes(k);
      std::string name = ref.rfind('%', 0) == 0 ? ref.substr(1) : ref;
      std::optional<ValueId> id = graph.FindByName(name);
      if (!id || graph.value(*id).kind != ValueKind::kNode) {
        Fail(where + fmt::format(".nodes[{}]", k),
             fmt::format("\"{}\" is not a node of the graph", ref));
      }
      group.nodes.push_back(*id);
    }
    std::sort(group.nodes.begin(), group.nodes.end());
    group.schedule = ScheduleFromProto(pg.schedule(), where + ".schedule");
    out.groups.push_back(std::move(group));
  }
  ValidatePlan(graph, out);
  return out;
}

}  // namespace fusetune
