#include "server/report_assembly.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "server/greedy_baseline.h"
#include "server/stage_log.h"
#include "server/validation.h"

namespace fusetune {

std::vector<RegionReport> DescribeRegions(const Graph& graph,
                                          const std::vector<TuneRegion>& regions) {
  std::vector<RegionReport> out;
  for (const TuneRegion& r : regions) {
    RegionReport rr;
    rr.signature = r.signature;
    rr.nodes = r.region.nodes;
    rr.ops = OpsOf(graph, rr.nodes);
    out.push_back(std::move(rr));
  }
  return out;
}

void AddSearchCounts(const MeasurementPlan& plan, int measured, TuneReport& report) {
  for (const RegionSearch& rs : plan.regions) {
    RegionReport& rr = report.regions[rs.region];
    rr.candidates = rs.candidates;
    rr.measured = rs.measured;
    rr.reused = rs.reused;
    rr.pruned = rs.pruned;
  }
  report.candidates_measured = measured;
  report.measurements_reused = plan.reused;
  report.pruned = plan.pruned_schedules;
}

Plan CollectTunedPlan(const Graph& graph, const std::vector<RegionReport>& regions) {
  Plan plan{"tuned", {}};
  for (const RegionReport& rr : regions)
    for (const PlanGroup& pg : rr.plan) plan.groups.push_back(pg);
  SortGroupsTopologically(graph, plan);
  return plan;
}

void SumRegionFigures(TuneReport& report) {
  for (const RegionReport& rr : report.regions) {
    report.total_tuned_us += rr.tuned_us;
    report.total_greedy_us += rr.greedy_us;
    report.total_unfused_us += rr.unfused_us;
    report.max_abs_error = std::max(report.max_abs_error, rr.max_abs_error);
  }
}

void TimeWholeGraph(const RequestPolicy& policy, const MeasuredGroups& groups, JobRunner& runner,
                    TuneReport& report) {
  const Graph& g = policy.graph();
  ThreeWay way;
  way.graph = &g;
  way.plans[kTuned] = report.tuned_plan;
  way.plans[kGreedy] = WithBestSchedules(g, GreedyBaseline(policy), groups);
  way.plans[kUnfused] = UnfusedPlan(g);
  const ThreeWayResult res = TimeThreeWays({way}, runner, "timing")[0];
  if (res.chosen < 0) {
    // The regions' plans are measured and stored already; a whole graph too large to time in one
    // job (a 12-layer model under load can pass the sandbox's time limit) must not fail the tune.
    SumRegionFigures(report);
    report.total_decision = fmt::format(
        "the whole graph was not timed ({}); totals are the sums of the regions' figures",
        res.reason[kTuned]);
    spdlog::warn("{}", report.total_decision);
    return;
  }
  report.totals_measured = true;
  report.total_chosen = kSlotNames[res.chosen];
  report.total_decision = res.decision;
  report.total_tuned_us = res.us[res.chosen];
  report.total_greedy_us = res.us[kGreedy];
  report.total_unfused_us = res.us[kUnfused];
  report.max_abs_error = res.max_abs_error[res.chosen];
  report.tuned_plan = *way.plans[res.chosen];
  report.tuned_plan.name = "tuned";
  spdlog::debug("whole graph: tuned {:.2f} µs, greedy {:.2f} µs, unfused {:.2f} µs: {}",
                res.us[kTuned], res.us[kGreedy], res.us[kUnfused], res.decision);
}

}  // namespace fusetune
