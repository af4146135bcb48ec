// Canonical text of a graph or subgraph: the canonical order (canonical_order.h) written out
// with every op, normalised attribute, shape, dtype and constant.
#include "ir/text/signature.h"

#include <fmt/format.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "ir/text/canonical_order.h"

namespace fusetune {
namespace {

constexpr std::string_view kHeader = "fusetune-canonical v1";

// "[name=value, ...] : Tensor[...]": every normalised attribute, then the type.
std::string AttrsAndType(const Value& v) {
  std::string s = "[";
  bool first = true;
  for (const auto& [name, value] : v.attrs.items()) {
    s += (first ? "" : ", ") + name + "=" + canonical::AttrValueText(value);
    first = false;
  }
  return s + "] : " + v.type.ToString();
}

const canonical::KeySpelling& ExactSpelling() {
  static const canonical::KeySpelling spelling{
      .attrs_and_type = AttrsAndType,
      .type = [](const TensorType& t) { return t.ToString(); },
      .constant = canonical::ConstantText,
  };
  return spelling;
}

CanonicalForm Emit(const Graph& graph, canonical::Order order) {
  auto ref = [&](ValueId id) -> std::string {
    if (order.in_set[id]) return "n" + std::to_string(order.node_index[id]);
    if (graph.value(id).kind == ValueKind::kConst) return canonical::ConstantText(graph.value(id));
    return "p" + std::to_string(order.input_index[id]);
  };
  CanonicalForm form;
  std::string& out = form.text;
  out.reserve(order.nodes.size() * 96 + 256);
  out += kHeader;
  out += order.whole ? " graph\n" : " subgraph\n";
  for (size_t i = 0; i < order.inputs.size(); ++i) {
    out += fmt::format("in p{} {}\n", i, graph.value(order.inputs[i]).type.ToString());
  }
  for (size_t i = 0; i < order.nodes.size(); ++i) {
    const Value& v = graph.value(order.nodes[i]);
    out += "n" + std::to_string(i) + " = " + v.op->name + "(";
    for (size_t j = 0; j < v.inputs.size(); ++j) out += (j ? ", " : "") + ref(v.inputs[j]);
    out += ") " + AttrsAndType(v) + "\n";
  }
  out += "out";
  if (order.whole && graph.tuple_output()) out += " tuple";
  for (ValueId o : order.outputs) out += " " + ref(o);
  out += "\n";
  form.inputs = std::move(order.inputs);
  form.nodes = std::move(order.nodes);
  form.outputs = std::move(order.outputs);
  return form;
}

}  // namespace

CanonicalForm Canonicalize(const Graph& graph) {
  return Emit(graph, canonical::ComputeOrder(graph, std::nullopt, ExactSpelling()));
}

CanonicalForm Canonicalize(const Graph& graph, std::span<const ValueId> nodes,
                           std::span<const ValueId> recomputed) {
  return Emit(graph, canonical::ComputeOrder(graph, nodes, ExactSpelling(), recomputed));
}

std::string CanonicalText(const Graph& graph) { return Canonicalize(graph).text; }
std::string CanonicalText(const Graph& graph, std::span<const ValueId> nodes) {
  return Canonicalize(graph, nodes).text;
}

std::string Hash128Hex(std::string_view text) {
  XXH128_hash_t h = XXH3_128bits(text.data(), text.size());
  return fmt::format("{:016x}{:016x}", h.high64, h.low64);
}

std::string Signature(const Graph& graph) { return Hash128Hex(CanonicalText(graph)); }
std::string Signature(const Graph& graph, std::span<const ValueId> nodes,
                      std::span<const ValueId> recomputed) {
  return Hash128Hex(Canonicalize(graph, nodes, recomputed).text);
}

}  // namespace fusetune
