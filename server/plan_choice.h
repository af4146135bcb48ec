#pragma once
// Stage: plan choice. Per searched region, the partition DP (server/partition_search.h) over its
// candidate groups at their fastest measured time, a pruned or invalid group never chosen: the
// fastest exact cover, with each group's fastest schedule; greedy's grouping instead when its
// groups' times sum within the unpaired noise floor (3%) of that cover's, else the cover with
// fewer kernels within that floor (server/cover_merging.h). This is where a later
// cost model that ranks schedules, or new kinds of fusion, hand their candidates to the DP.
#include <optional>
#include <utility>
#include <vector>

#include "ir/plan.h"
#include "server/measurement_planning.h"
#include "server/region_formation.h"

namespace fusetune {

// Per entry of plan.regions: the tuned plan in `graph`'s ids, or nullopt when no cover has a
// valid measurement for every group.
std::vector<std::optional<Plan>> ChooseTunedPlans(const Graph& graph,
                                                  const std::vector<TuneRegion>& regions,
                                                  const MeasurementPlan& plan);

// Greedy's grouping of the region (in `graph`'s ids), each group on its best schedule (a duel's
// winner, else the unpaired rule's), with the sum of their times; nullopt when a group of it has
// no valid measurement.
std::optional<std::pair<Plan, double>> GreedyCover(const Graph& graph, const RegionSearch& rs,
                                                   const MeasurementPlan& plan);

}  // namespace fusetune
