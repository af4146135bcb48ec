#include "server/grouping_fallback.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "server/plan_choice.h"
#include "server/schedule_duels.h"

namespace fusetune {

std::vector<ScheduleDuel> RetryOnGreedysGrouping(const RequestPolicy& policy,
                                                 const std::vector<TuneRegion>& regions,
                                                 MeasurementPlan& plan,
                                                 const std::vector<std::optional<Plan>>& tuned,
                                                 std::vector<RegionWinner>& winners,
                                                 JobRunner& runner) {
  const Graph& g = policy.graph();
  std::vector<std::optional<Plan>> covers(plan.regions.size());
  bool any = false;
  for (size_t i = 0; i < plan.regions.size(); ++i) {
    const RegionSearch& rs = plan.regions[i];
    if (winners[i].chosen != kGreedy || !tuned[i] ||
        SameGrouping(*tuned[i], rs.sub.PlanToOriginal(rs.greedy)))
      continue;
    if (auto cover = GreedyCover(g, rs, plan)) {
      covers[i] = std::move(cover->first);
      any = true;
    }
  }
  if (!any) return {};
  std::vector<ScheduleDuel> duels = DuelSchedules(g, covers, plan, runner);

  // The regions whose greedy grouping now carries a schedule other than the default.
  MeasurementPlan retry;
  retry.groups = plan.groups;
  retry.pruned = plan.pruned;
  std::vector<std::optional<Plan>> retry_tuned;
  std::vector<size_t> of;  // index into plan.regions
  for (size_t i = 0; i < plan.regions.size(); ++i) {
    if (!covers[i]) continue;
    const RegionSearch& rs = plan.regions[i];
    std::optional<std::pair<Plan, double>> cover = GreedyCover(g, rs, plan);
    if (!cover || SamePlan(cover->first, WithDefaultSchedules(g, rs.sub.PlanToOriginal(rs.greedy),
                                                              policy.options().threads)))
      continue;
    retry.regions.push_back(rs);
    retry_tuned.push_back(std::move(cover->first));
    of.push_back(i);
  }
  if (of.empty()) return duels;
  std::vector<RegionWinner> again = ValidateRegions(policy, regions, retry, retry_tuned, runner);
  for (size_t k = 0; k < of.size(); ++k) {
    RegionWinner& first = winners[of[k]];
    spdlog::debug(
        "region {}: greedy's grouping on dueled schedules, after the searched grouping "
        "lost: {}",
        regions[first.region].signature, again[k].decision);
    if (again[k].chosen != kTuned) continue;
    again[k].decision =
        fmt::format("the searched grouping lost ({}); then {}", first.decision, again[k].decision);
    again[k].rounds += first.rounds;
    first = std::move(again[k]);
  }
  return duels;
}

}  // namespace fusetune
