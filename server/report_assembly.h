#pragma once
// Stage: report assembly. The regions' answers become the TuneReport: each region's figures and
// counts, the whole graph's tuned plan (every region's choice), and the whole-graph figures,
// either summed from the regions or timed together under the three plans, whose verdict can
// send the searched regions back to a baseline.
#include <optional>
#include <vector>

#include "server/job_runner.h"
#include "server/measurement_planning.h"
#include "server/region_formation.h"
#include "server/request_policy.h"
#include "server/tune_cache.h"
#include "server/tune_report.h"
#include "server/validation.h"

namespace fusetune {

// One report per region with its signature, nodes and ops; later stages fill in the rest.
std::vector<RegionReport> DescribeRegions(const Graph& graph,
                                          const std::vector<TuneRegion>& regions);

// The search's counts into the report: per searched region and in total.
void AddSearchCounts(const MeasurementPlan& plan, int measured, TuneReport& report);

// The whole graph's plan: every region's choice, in an order that runs.
Plan CollectTunedPlan(const Graph& graph, const std::vector<RegionReport>& regions);

// Whole-graph figures as the sums of the regions' (no timing).
void SumRegionFigures(TuneReport& report);

// Each region's plan against the rules: its groups and schedules that greedy on default schedules
// (GreedyBaseline, the groups inside the region) does not have.
void NameChangesFromGreedy(const RequestPolicy& policy, TuneReport& report);

// The whole graph timed under three plans: the tuned plan (report.tuned_plan, every region's
// choice), greedy and unfused on default schedules (server/validation.h), in paired rounds. Each
// region's plan won its own validation, so here they are the incumbent, as in `cache verify`
// (kIncumbentFirst): kept unless a baseline beats them beyond noise, now that they run in
// sequence (regions' plans that are greedy on the defaults are that one plan, named greedy).
// Regions timed alone can each win and lose together (at 2 threads a BERT layer's searched
// schedules did, by 11%). Fills the report's totals with the kept plan's.
struct WholeGraphTiming {
  int chosen = -1;  // the kept slot; -1 when the whole graph could not be timed
  std::optional<Plan> plans[3];
  ThreeWayResult result;
};
WholeGraphTiming TimeWholeGraph(const RequestPolicy& policy, JobRunner& runner, TuneReport& report);

// When the whole graph kept a baseline, the stored plans must not be the slower whole: every
// searched region whose winner is not its own plan of that slot (validated with it, so checked
// against the reference and timed) falls back to it, with the whole graph's decision, margin
// and rounds, and is stored again in place of its first choice (the replaced plan is kept in the
// store's history); the report's plan becomes the regions' new plans. Regions answered from the
// store keep theirs (`cache verify` re-checks them). Nothing changes when the tuned plan was kept.
void KeepTheWholeGraphsChoice(const RequestPolicy& policy, const std::vector<TuneRegion>& regions,
                              const WholeGraphTiming& whole,
                              const std::vector<RegionWinner>& winners, TuneCache& cache,
                              TuneReport& report);

}  // namespace fusetune
