#include "ir/plan_changes.h"

#include <algorithm>
#include <optional>

#include "ir/fusion.h"
#include "ir/schedule_space.h"

namespace fusetune {
namespace {

std::vector<ValueId> Sorted(std::vector<ValueId> nodes) {
  std::sort(nodes.begin(), nodes.end());
  return nodes;
}

std::string Fusion(const Graph& graph, const std::vector<ValueId>& nodes,
                   const std::vector<ValueId>& recomputed) {
  const std::optional<FusedGroup> group = AnalyzeGroup(graph, nodes, nullptr, recomputed);
  if (group && group->Attention()) return "attention kernel";
  if (group && group->NormWrittenOpByOp())
    return std::string(group->row_norm.Name()) + " row kernel";
  if (group && group->Horizontal()) return "horizontal GEMM";
  if (group && group->norm >= 0) return "layer norm folded";
  // A member before the anchor computes an operand: the rules fuse only a matmul's consumers.
  if (group && group->templ == GroupTemplate::kMatmul && group->nodes.front() < group->anchor)
    return "matmul prologue";
  if (group && !group->recompute.empty()) {
    std::string names;
    for (ValueId v : group->recompute) names += (names.empty() ? "" : " ") + graph.RefName(v);
    return "recomputes " + names;
  }
  return nodes.size() == 1 ? "no fusion" : "other grouping";
}

// The knobs of `schedule` that `base` does not have or sets otherwise; "-name" for one it drops.
std::string KnobsChanged(const Schedule& schedule, const Schedule& base) {
  std::string out;
  auto add = [&](const std::string& knob) { out += (out.empty() ? "" : ",") + knob; };
  for (const auto& [name, value] : schedule.knobs)
    if (base.Get(name, value + 1) != value) add(name + "=" + std::to_string(value));
  for (const auto& [name, value] : base.knobs)
    if (schedule.Get(name, value + 1) == value + 1 && schedule.Get(name, value) == value)
      add("-" + name);
  return out;
}

void NameSchedule(const Graph& graph, const PlanGroup& pg, const std::vector<ValueId>& recomputed,
                  int threads, PlanChange& change) {
  const std::optional<FusedGroup> group =
      AnalyzeGroup(graph, Sorted(pg.nodes), nullptr, recomputed);
  const Schedule base = group ? ScheduleSpace(graph, *group, threads).front() : Schedule{};
  if (pg.schedule.ToString() == base.ToString()) return;
  change.schedule = pg.schedule.ToString();
  change.knobs_changed = KnobsChanged(pg.schedule, base);
}

}  // namespace

std::vector<PlanChange> ChangesFromGreedy(const Graph& graph, const std::vector<PlanGroup>& plan,
                                          const std::vector<PlanGroup>& greedy, int threads) {
  std::vector<std::vector<ValueId>> greedy_groups;
  for (const PlanGroup& g : greedy) greedy_groups.push_back(Sorted(g.nodes));
  std::vector<PlanChange> changes;
  const std::vector<std::vector<ValueId>> recomputed = RecomputedNodes(plan);
  for (size_t gi = 0; gi < plan.size(); ++gi) {
    const PlanGroup& pg = plan[gi];
    PlanChange change;
    change.nodes = Sorted(pg.nodes);
    const bool rules_group =
        std::find(greedy_groups.begin(), greedy_groups.end(), change.nodes) != greedy_groups.end();
    if (!rules_group) change.fusion = Fusion(graph, change.nodes, recomputed[gi]);
    NameSchedule(graph, pg, recomputed[gi], threads, change);
    if (!change.fusion.empty() || !change.schedule.empty()) changes.push_back(std::move(change));
  }
  return changes;
}

std::string DescribeChanges(const Graph& graph, const std::vector<PlanChange>& changes) {
  std::string out;
  for (const PlanChange& c : changes) {
    std::string nodes;
    for (ValueId v : c.nodes) nodes += (nodes.empty() ? "" : " ") + graph.RefName(v);
    std::string what = c.fusion;
    if (!c.schedule.empty())
      what += (what.empty() ? "schedule " : " on schedule ") + c.knobs_changed;
    out += (out.empty() ? "" : "; ") + what + " [" + nodes + "]";
  }
  return out;
}

}  // namespace fusetune
