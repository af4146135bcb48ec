#include "ir/text/relay_printer.h"

#include <charconv>
#include <cmath>
#include <unordered_set>

#include <fmt/format.h>

namespace fusetune {
namespace {

std::string ScalarLiteral(const Tensor& t) {
  double v = t.Get(0);
  switch (t.dtype()) {
    case DType::kFloat32:
      return FormatAttrValue(v);  // 0.5f, 1e-12f, 3f
    case DType::kInt32:
      return std::to_string(static_cast<int64_t>(v));
    case DType::kBool:
      return v != 0.0 ? "True" : "False";
    default:
      return "meta[relay.Constant][0]";  // not expressible; the parser refuses it
  }
}

// Float attributes that are float32 values print as Relay's float32 literals (1e-12f); any other
// double prints exactly, without the suffix, so parsing reads back the same double.
std::string AttrText(const AttrValue& value) {
  const double* d = std::get_if<double>(&value);
  if (!d || std::isnan(*d) || std::isinf(*d) || static_cast<double>(static_cast<float>(*d)) == *d) {
    return FormatAttrValue(value);
  }
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, *d);
  std::string text(buf, end);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

std::string TupleText(const std::vector<std::string>& items) {
  std::string s = "(";
  for (size_t i = 0; i < items.size(); ++i) s += (i ? ", " : "") + items[i];
  return s + (items.size() == 1 ? ",)" : ")");
}

std::string CallText(const Graph& graph, const Value& node) {
  std::vector<std::string> args;
  for (ValueId input : node.inputs) args.push_back(RelayRef(graph, input));
  std::string text = node.op->name + "(";
  if (node.op->tuple_input) {
    text += TupleText(args);
  } else {
    for (size_t i = 0; i < args.size(); ++i) text += (i ? ", " : "") + args[i];
  }
  bool first = node.op->tuple_input ? false : args.empty();
  for (const AttrSpec& spec : node.op->attrs) {
    if (!node.attrs.Has(spec.name)) continue;
    const AttrValue& value = node.attrs.Get(spec.name);
    if (value == spec.default_value) continue;
    text += (first ? "" : ", ") + spec.name + "=" + AttrText(value);
    first = false;
  }
  return text + ")";
}

// The name the parser gives an unnamed result when every other node is bound: the smallest
// number that no other name spells.
std::string UnnamedResultName(const Graph& graph, ValueId result) {
  std::unordered_set<std::string> names;
  for (ValueId id = 0; id < static_cast<ValueId>(graph.values().size()); ++id) {
    const Value& v = graph.value(id);
    if (id != result && v.kind != ValueKind::kConst) names.insert(v.name);
  }
  for (int n = 0;; ++n) {
    std::string candidate = std::to_string(n);
    if (!names.count(candidate)) return candidate;
  }
}

}  // namespace

std::string RelayRef(const Graph& graph, ValueId id) {
  const Value& v = graph.value(id);
  if (v.kind == ValueKind::kConst) {
    if (v.data && v.data->type().rank() == 0) return ScalarLiteral(*v.data);
    return "meta[relay.Constant][0]";  // constant tensors have no Relay text; the parser refuses it
  }
  return "%" + v.name;
}

std::string PrintRelay(const Graph& graph, const PrintOptions& options) {
  const auto& values = graph.values();
  std::string out = "fn (";
  for (size_t i = 0; i < graph.params().size(); ++i) {
    const Value& p = graph.value(graph.params()[i]);
    out += fmt::format("{}%{}: {}", i ? ", " : "", p.name, p.type.ToString());
  }
  out += ")";
  const auto& outputs = graph.outputs();
  if (options.types) {
    if (graph.tuple_output()) {
      std::vector<std::string> types;
      for (ValueId o : outputs) types.push_back(graph.value(o).type.ToString());
      out += " -> " + TupleText(types);
    } else if (!outputs.empty()) {
      out += " -> " + graph.value(outputs[0]).type.ToString();
    }
  }
  out += " {\n";

  ValueId last_node = -1;
  for (ValueId id = 0; id < static_cast<ValueId>(values.size()); ++id) {
    if (values[id].kind == ValueKind::kNode) last_node = id;
  }
  bool inline_result = !graph.tuple_output() && outputs.size() == 1 && outputs[0] == last_node &&
                       last_node >= 0 &&
                       values[last_node].name == UnnamedResultName(graph, last_node);

  auto annotate = [&](ValueId id) {
    return options.types ? " /* ty=" + values[id].type.ToString() + " */" : std::string();
  };
  for (ValueId id = 0; id < static_cast<ValueId>(values.size()); ++id) {
    const Value& v = values[id];
    if (v.kind != ValueKind::kNode || (inline_result && id == last_node)) continue;
    out += fmt::format("  %{} = {}{};\n", v.name, CallText(graph, v), annotate(id));
  }
  if (inline_result) {
    out += "  " + CallText(graph, values[last_node]) + annotate(last_node) + "\n";
  } else if (graph.tuple_output()) {
    std::vector<std::string> refs;
    for (ValueId o : outputs) refs.push_back(RelayRef(graph, o));
    out += "  " + TupleText(refs) + "\n";
  } else if (!outputs.empty()) {
    out += "  " + RelayRef(graph, outputs[0]) + "\n";
  }
  out += "}\n";
  return out;
}

}  // namespace fusetune
