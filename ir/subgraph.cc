#include "ir/subgraph.h"

#include <unordered_map>

#include <fmt/format.h>

#include "ir/error.h"

namespace fusetune {

Subgraph ExtractSubgraph(const Graph& graph, std::span<const ValueId> inputs,
                         std::span<const ValueId> nodes, std::span<const ValueId> outputs) {
  GraphBuilder b;
  std::unordered_map<ValueId, ValueId> to_new;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value& v = graph.value(inputs[i]);
    if (v.kind == ValueKind::kConst && v.data && v.type.rank() == 0)
      to_new[inputs[i]] = b.AddConst(*v.data);
    else
      to_new[inputs[i]] = b.AddParam(fmt::format("p{}", i), v.type);
  }
  Subgraph out;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Value& v = graph.value(nodes[i]);
    std::vector<ValueId> args;
    for (ValueId in : v.inputs) {
      auto it = to_new.find(in);
      if (it == to_new.end()) {
        // A constant read inside the piece but not listed as an input.
        const Value& c = graph.value(in);
        FT_CHECK(c.kind == ValueKind::kConst && c.data, "subgraph reads a value it does not list");
        it = to_new.emplace(in, b.AddConst(*c.data)).first;
      }
      args.push_back(it->second);
    }
    to_new[nodes[i]] = b.AddNode(v.op->name, std::move(args), v.attrs, fmt::format("n{}", i));
    out.node_map.push_back(nodes[i]);
  }
  std::vector<ValueId> results;
  for (ValueId o : outputs) results.push_back(to_new.at(o));
  b.SetOutputs(std::move(results), outputs.size() > 1);
  out.graph = std::move(b).Build();
  return out;
}

}  // namespace fusetune
