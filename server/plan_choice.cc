#include "server/plan_choice.h"

#include <spdlog/spdlog.h>

#include "server/partition_search.h"
#include "server/stage_log.h"

namespace fusetune {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::string CoverText(const Graph& g, const Region& region, const Partition& p) {
  if (!p.found()) return "none";
  std::vector<PlanGroup> groups;
  for (size_t idx : p.groups) groups.push_back({region.groups[idx].nodes, {}});
  return fmt::format("{} {:.2f} µs", PlanText(g, groups), p.cost);
}

}  // namespace

std::vector<std::optional<Plan>> ChooseTunedPlans(const Graph& graph,
                                                  const std::vector<TuneRegion>& regions,
                                                  const MeasurementPlan& plan) {
  std::vector<std::optional<Plan>> out;
  for (const RegionSearch& rs : plan.regions) {
    const TuneRegion& tr = regions[rs.region];
    std::vector<CostedGroup> costed;
    for (size_t i = 0; i < tr.region.groups.size(); ++i) {
      const GroupWork& gw = plan.groups.at(rs.group_sigs[i]);
      costed.push_back(
          {tr.region.groups[i].nodes, plan.pruned.count(gw.signature) ? kInf : gw.best_us()});
    }
    const RankedPartitions ranked = FindBestPartitions(graph, tr.region.nodes, costed);
    spdlog::debug("region {}: best cover {}; runner-up {}", tr.signature,
                  CoverText(graph, tr.region, ranked.best),
                  CoverText(graph, tr.region, ranked.runner_up));
    if (!ranked.best.found()) {
      out.push_back(std::nullopt);
      continue;
    }
    Plan tuned{"tuned", {}};
    for (size_t idx : ranked.best.groups)
      tuned.groups.push_back(
          {tr.region.groups[idx].nodes, plan.groups.at(rs.group_sigs[idx]).best_schedule()});
    out.push_back(std::move(tuned));
  }
  return out;
}

}  // namespace fusetune
