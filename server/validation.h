#pragma once
// Stage: validation. A plan chosen from per-group figures is timed as a whole, in the same jobs as
// TVM's greedy plan and the unfused plan, so the three figures are comparable and the fastest is
// what is kept: a tuned plan is never reported slower than a baseline it could have been. Each
// plan is timed in kTimingRounds rounds and keeps its fastest median. (Paired rounds and a
// decision that holds against noise would go in TimeThreeWays and PickWinner.)
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/plan.h"
#include "server/job_runner.h"
#include "server/measurement_planning.h"
#include "server/region_formation.h"
#include "server/request_policy.h"

namespace fusetune {

enum Slot { kTuned = 0, kGreedy = 1, kUnfused = 2 };
inline constexpr const char* kSlotNames[3] = {"tuned", "greedy", "unfused"};
// On a shared machine, a burst of load during one plan's timing must not decide the comparison.
inline constexpr int kTimingRounds = 2;

// The three plans of one graph (a region or the whole), to be timed together.
struct ThreeWay {
  const Graph* graph = nullptr;
  std::optional<Plan> plans[3];
};

struct ThreeWayResult {
  double us[3] = {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity(),
                  std::numeric_limits<double>::infinity()};
  double max_abs_error[3] = {0, 0, 0};
  std::string reason[3];  // why a plan could not run
  int chosen = -1;        // the winner's slot; -1 when none ran
};

// Times the plans of every ThreeWay in kTimingRounds rounds, as the progress phase `phase`. A plan
// equal to another of its graph (the tuned plan is often the greedy one) is timed once and shares
// its figure.
std::vector<ThreeWayResult> TimeThreeWays(const std::vector<ThreeWay>& ways, JobRunner& runner,
                                          const std::string& phase);

// The validated winner of one searched region.
struct RegionWinner {
  size_t region = 0;  // index into the regions (a representative)
  int chosen = -1;    // the winner's slot
  Plan plan;          // the winner, in the graph's ids
  double us[3] = {0, 0, 0};
  double max_abs_error = 0;  // the winner's, against the reference interpreter
};

// Per entry of plan.regions, with `tuned` from plan choice (server/plan_choice.h). Throws when a
// region cannot run under any of the three plans.
std::vector<RegionWinner> ValidateRegions(const RequestPolicy& policy,
                                          const std::vector<TuneRegion>& regions,
                                          const MeasurementPlan& plan,
                                          const std::vector<std::optional<Plan>>& tuned,
                                          JobRunner& runner);

}  // namespace fusetune
