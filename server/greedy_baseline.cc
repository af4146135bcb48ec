#include "server/greedy_baseline.h"

#include <functional>

#include <spdlog/spdlog.h>

#include "server/stage_log.h"

namespace fusetune {
namespace {

// `graph` is the policy's graph or a piece of it; `original` maps its ids to the policy's.
Plan Greedy(const RequestPolicy& policy, const Graph& graph,
            const std::function<ValueId(ValueId)>& original) {
  Plan rules = GreedyPlan(graph, [&](ValueId v) { return !policy.MayJoinGroup(original(v)); });
  Plan out{"greedy", {}};
  for (PlanGroup& pg : rules.groups) {
    std::vector<ValueId> nodes;
    for (ValueId v : pg.nodes) nodes.push_back(original(v));
    std::string why;
    if (pg.nodes.size() == 1 || policy.OneKernel(nodes, &why)) {
      out.groups.push_back(std::move(pg));
      continue;
    }
    spdlog::debug("greedy group {} runs unfused: {}", NodesText(policy.graph(), nodes), why);
    for (ValueId v : pg.nodes) out.groups.push_back({{v}, {}});
  }
  SortGroupsTopologically(graph, out);
  return out;
}

}  // namespace

Plan GreedyBaseline(const RequestPolicy& policy) {
  return Greedy(policy, policy.graph(), [](ValueId v) { return v; });
}

Plan GreedyBaseline(const RequestPolicy& policy, const Subgraph& region) {
  return Greedy(policy, region.graph, [&](ValueId v) { return region.ToOriginal(v); });
}

}  // namespace fusetune
