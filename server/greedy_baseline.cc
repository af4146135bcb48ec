#include "server/greedy_baseline.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "server/stage_log.h"

namespace fusetune {

Plan GreedyBaseline(const RequestPolicy& policy) {
  const Graph& graph = policy.graph();
  Plan rules = GreedyPlan(graph, [&](ValueId v) { return !policy.MayJoinGroup(v); });
  Plan out{"greedy", {}};
  for (PlanGroup& pg : rules.groups) {
    std::string why;
    if (pg.nodes.size() == 1 || policy.BaselineKernel(pg.nodes, &why)) {
      out.groups.push_back(std::move(pg));
      continue;
    }
    spdlog::debug("greedy group {} runs unfused: {}", NodesText(graph, pg.nodes), why);
    for (ValueId v : pg.nodes) out.groups.push_back({{v}, {}});
  }
  SortGroupsTopologically(graph, out);
  return out;
}

Plan GreedyBaseline(const RequestPolicy& policy, const Plan& whole, const Subgraph& region) {
  const Graph& graph = policy.graph();
  Plan out{"greedy", {}};
  for (const PlanGroup& pg : whole.groups) {
    std::vector<ValueId> inside;
    for (ValueId v : pg.nodes) {
      // to_sub holds the region's inputs too, as parameters: only its nodes are inside.
      auto it = region.to_sub.find(v);
      if (it != region.to_sub.end() && region.graph.value(it->second).kind == ValueKind::kNode)
        inside.push_back(v);
    }
    if (inside.empty()) continue;
    std::string why = "a region cut splits it";
    if (inside.size() < pg.nodes.size() && inside.size() > 1 && !policy.OneKernel(inside, &why)) {
      spdlog::debug("greedy group {}: its part {} in the region runs unfused ({})",
                    NodesText(graph, pg.nodes), NodesText(graph, inside), why);
      for (ValueId v : inside) out.groups.push_back({{region.ToSub(v)}, {}});
      continue;
    }
    if (inside.size() < pg.nodes.size())
      spdlog::debug("greedy group {}: a region cut leaves {} of it in the region",
                    NodesText(graph, pg.nodes), NodesText(graph, inside));
    PlanGroup part;
    for (ValueId v : inside) part.nodes.push_back(region.ToSub(v));
    std::sort(part.nodes.begin(), part.nodes.end());
    out.groups.push_back(std::move(part));
  }
  SortGroupsTopologically(region.graph, out);
  return out;
}

}  // namespace fusetune
