#pragma once
// Stage: report assembly. The regions' answers become the TuneReport: each region's figures and
// counts, the whole graph's tuned plan (every region's choice), and the whole-graph figures,
// either summed from the regions or timed together under the three plans.
#include <vector>

#include "server/job_runner.h"
#include "server/measurement_planning.h"
#include "server/region_formation.h"
#include "server/request_policy.h"
#include "server/tune_report.h"

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

// The whole graph under the tuned plan (report.tuned_plan), the greedy plan and the unfused
// plan, timed together; the fastest is what the report calls tuned.
void TimeWholeGraph(const RequestPolicy& policy, const MeasuredGroups& groups, JobRunner& runner,
                    TuneReport& report);

}  // namespace fusetune
