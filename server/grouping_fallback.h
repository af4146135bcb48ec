#pragma once
// Stage: greedy's grouping on the schedules that won their duels, when a searched grouping lost.
// Plan choice hands validation another grouping than greedy's when the DP's cover beats it by more
// than the unpaired floor; validation keeps that cover only if it wins, and otherwise keeps greedy
// on default schedules. What the duels found for greedy's own groups (a dense's weights packed
// once, 4-6%) was then never timed: in the BERT layer's four tunes of one run, two dense regions
// lost their wpack that way. Such a region is validated once more: greedy's groups are dueled
// (those not dueled yet, server/schedule_duels.h), and greedy's grouping on the winners is the
// tuned plan, kept unless a baseline beats it, as ValidateRegions treats a plan whose only schedule
// changes won duels. Nothing runs where the searched grouping won or was greedy's.
#include <optional>
#include <vector>

#include "ir/plan.h"
#include "server/job_runner.h"
#include "server/measurement_planning.h"
#include "server/region_formation.h"
#include "server/request_policy.h"
#include "server/tune_report.h"
#include "server/validation.h"

namespace fusetune {

// `tuned` and `winners` are per entry of plan.regions (ChooseTunedPlans, ValidateRegions). A
// region's winner is replaced when greedy's grouping on dueled schedules is kept over the
// baselines. Returns the duels run.
std::vector<ScheduleDuel> RetryOnGreedysGrouping(const RequestPolicy& policy,
                                                 const std::vector<TuneRegion>& regions,
                                                 MeasurementPlan& plan,
                                                 const std::vector<std::optional<Plan>>& tuned,
                                                 std::vector<RegionWinner>& winners,
                                                 JobRunner& runner);

}  // namespace fusetune
