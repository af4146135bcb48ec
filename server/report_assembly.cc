#include "server/report_assembly.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "server/greedy_baseline.h"
#include "server/stage_log.h"
#include "server/stored_plans.h"
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

void NameChangesFromGreedy(const RequestPolicy& policy, TuneReport& report) {
  const Plan greedy = GreedyBaseline(policy);
  for (RegionReport& rr : report.regions) {
    std::vector<PlanGroup> inside;
    for (const PlanGroup& g : greedy.groups) {
      const bool in_region = std::all_of(g.nodes.begin(), g.nodes.end(), [&](ValueId v) {
        return std::binary_search(rr.nodes.begin(), rr.nodes.end(), v);
      });
      if (in_region) inside.push_back(g);
    }
    rr.changes = ChangesFromGreedy(policy.graph(), rr.plan, inside, report.threads);
  }
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
  report.schedule_ranking = plan.ranking;
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
    report.max_output_magnitude = std::max(report.max_output_magnitude, rr.max_output_magnitude);
  }
}

WholeGraphTiming TimeWholeGraph(const RequestPolicy& policy, JobRunner& runner,
                                TuneReport& report) {
  const Graph& g = policy.graph();
  const int threads = policy.options().threads;
  ThreeWay way;
  way.graph = &g;
  way.plans[kTuned] = report.tuned_plan;
  way.plans[kGreedy] = WithDefaultSchedules(g, GreedyBaseline(policy), threads);
  way.plans[kUnfused] = WithDefaultSchedules(g, UnfusedPlan(g), threads);
  WholeGraphTiming out;
  // The regions' plans are the incumbent; when they are greedy on the defaults, one plan, it is
  // named greedy as in a region's validation.
  const SlotOrder& order =
      SamePlan(*way.plans[kTuned], *way.plans[kGreedy]) ? kSimplestFirst : kIncumbentFirst;
  out.result = TimeThreeWays({way}, runner, "timing", order)[0];
  const ThreeWayResult& res = out.result;
  if (res.chosen < 0) {
    // The regions' plans are measured and stored already; a whole graph too large to time in one
    // job (a 12-layer model under load can pass the sandbox's time limit) must not fail the tune.
    SumRegionFigures(report);
    report.total_decision = fmt::format(
        "the whole graph was not timed ({}); totals are the sums of the regions' figures",
        res.reason[kTuned]);
    spdlog::warn("{}", report.total_decision);
    return out;
  }
  out.chosen = res.chosen;
  for (int slot = 0; slot < 3; ++slot) out.plans[slot] = way.plans[slot];
  report.totals_measured = true;
  report.total_chosen = kSlotNames[res.chosen];
  report.total_decision = res.decision;
  report.total_tuned_us = res.us[res.chosen];
  report.total_greedy_us = res.us[kGreedy];
  report.total_unfused_us = res.us[kUnfused];
  report.max_abs_error = res.max_abs_error[res.chosen];
  report.max_output_magnitude = res.max_output_magnitude;
  spdlog::debug("whole graph: tuned {:.2f} µs, greedy {:.2f} µs, unfused {:.2f} µs: {}",
                res.us[kTuned], res.us[kGreedy], res.us[kUnfused], res.decision);
  return out;
}

void KeepTheWholeGraphsChoice(const RequestPolicy& policy, const std::vector<TuneRegion>& regions,
                              const WholeGraphTiming& whole,
                              const std::vector<RegionWinner>& winners, TuneCache& cache,
                              TuneReport& report) {
  const int slot = whole.chosen;
  if (slot != kGreedy && slot != kUnfused) return;
  if (SamePlan(report.tuned_plan, *whole.plans[slot])) return;  // the regions' plans are that
  const ThreeWayResult& res = whole.result;
  std::vector<RegionWinner> fallen;
  for (const RegionWinner& w : winners) {
    const std::optional<Plan>& baseline = w.plans[slot];
    if (w.chosen == slot || !baseline || !std::isfinite(w.us[slot]) || SamePlan(w.plan, *baseline))
      continue;
    RegionWinner f = w;
    f.chosen = slot;
    f.plan = *baseline;
    f.plan.name = kSlotNames[slot];
    f.max_abs_error = w.max_abs_errors[slot];
    f.decision = fmt::format("{}; in the whole graph: {}", w.decision, res.decision);
    f.margin = res.margin;
    f.rounds = res.rounds;
    fallen.push_back(std::move(f));
  }
  const std::string why =
      std::isfinite(res.us[kTuned])
          ? fmt::format("whole graph: {} {:.2f}× faster in sequence", kSlotNames[slot],
                        res.us[kTuned] / res.us[slot])
          : fmt::format("whole graph: the regions' plans failed in sequence ({})",
                        res.reason[kTuned]);
  if (!fallen.empty()) RecordBestPlans(policy, regions, fallen, cache, report.regions, why);
  report.tuned_plan = CollectTunedPlan(policy.graph(), report.regions);
  const bool exact = SamePlan(report.tuned_plan, *whole.plans[slot]);
  report.total_decision +=
      fmt::format("; {} region plan(s) fell back to {}{}", fallen.size(), kSlotNames[slot],
                  exact ? "" : ", not all: the stored plans are not exactly the plan timed");
  spdlog::info("whole graph: {} region plan(s) fell back to {} ({})", fallen.size(),
               kSlotNames[slot], res.decision);
}

}  // namespace fusetune
