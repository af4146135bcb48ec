#include "ir/subgraph.h"

#include <algorithm>

#include <fmt/format.h>

#include "ir/error.h"

namespace fusetune {
namespace {

Plan MapPlan(const Plan& plan, const std::function<ValueId(ValueId)>& map) {
  Plan out{plan.name, {}};
  for (const PlanGroup& g : plan.groups) {
    PlanGroup mapped{{}, g.schedule};
    for (ValueId v : g.nodes) mapped.nodes.push_back(map(v));
    std::sort(mapped.nodes.begin(), mapped.nodes.end());
    out.groups.push_back(std::move(mapped));
  }
  return out;
}

}  // namespace

Plan Subgraph::PlanToOriginal(const Plan& sub_plan) const {
  return MapPlan(sub_plan, [&](ValueId v) { return ToOriginal(v); });
}

Plan Subgraph::PlanToSub(const Plan& original_plan) const {
  Plan out = MapPlan(original_plan, [&](ValueId v) { return ToSub(v); });
  SortGroupsTopologically(graph, out);
  return out;
}

Subgraph ExtractSubgraph(const Graph& graph, std::span<const ValueId> inputs,
                         std::span<const ValueId> nodes, std::span<const ValueId> outputs) {
  GraphBuilder b;
  Subgraph out;
  auto add = [&](ValueId original, ValueId sub) {
    out.to_sub[original] = sub;
    if (out.to_original.size() <= static_cast<size_t>(sub)) out.to_original.resize(sub + 1, -1);
    out.to_original[sub] = original;
    return sub;
  };
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value& v = graph.value(inputs[i]);
    if (v.kind == ValueKind::kConst && v.data && v.type.rank() == 0)
      add(inputs[i], b.AddConst(*v.data));
    else
      add(inputs[i], b.AddParam(fmt::format("p{}", i), v.type));
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Value& v = graph.value(nodes[i]);
    std::vector<ValueId> args;
    for (ValueId in : v.inputs) {
      auto it = out.to_sub.find(in);
      if (it == out.to_sub.end()) {
        // A constant read inside the piece but not listed as an input.
        const Value& c = graph.value(in);
        FT_CHECK(c.kind == ValueKind::kConst && c.data, "subgraph reads a value it does not list");
        add(in, b.AddConst(*c.data));
        it = out.to_sub.find(in);
      }
      args.push_back(it->second);
    }
    add(nodes[i], b.AddNode(v.op->name, std::move(args), v.attrs, fmt::format("n{}", i)));
  }
  std::vector<ValueId> results;
  for (ValueId o : outputs) results.push_back(out.to_sub.at(o));
  b.SetOutputs(std::move(results), outputs.size() > 1);
  out.graph = std::move(b).Build();
  FT_CHECK(out.to_original.size() == out.graph.values().size(),
           "every value of a subgraph stands for one original value");
  return out;
}

}  // namespace fusetune
