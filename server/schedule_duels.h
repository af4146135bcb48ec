#pragma once
// Stage: schedule duels. From per-group figures a schedule enters the tuned plan only when it
// beats its group's default beyond the unpaired noise rule (3% and two standard errors,
// server/noise.h): the candidate jobs time each schedule once, beside compiles. Few gains worth
// having got through that rule: weights packed once (wpack) ran 4-8% faster on BERT's denses
// alone, yet at S = 256 tunes kept it in almost no region (BENCHMARKS.md, "Schedule duels").
// A duel gives such a schedule a fair test. The group's fastest schedule by median, when it is
// at least kRoundNoiseFloor faster than the default, is timed against the default in paired
// rounds: alone on the worker, in an order rotated per round, decided by validation's sign test
// (server/validation.h). A winner becomes the group's schedule for plan choice; validation then
// still judges the whole plan against greedy on defaults.
// Only groups of the regions' tuned plans are dueled, at most kMaxDuels, those with the most
// microseconds to save first: a duel costs 2-9 paired rounds of its group.
#include <optional>
#include <vector>

#include "ir/plan.h"
#include "server/job_runner.h"
#include "server/measurement_planning.h"
#include "server/tune_report.h"

namespace fusetune {

inline constexpr int kMaxDuels = 6;

// Duels the groups of `tuned` (per entry of plan.regions, in `graph`'s ids) and marks the
// winners (GroupWork::dueled). Returns every duel run, won or not.
std::vector<ScheduleDuel> DuelSchedules(const Graph& graph,
                                        const std::vector<std::optional<Plan>>& tuned,
                                        MeasurementPlan& plan, JobRunner& runner);

}  // namespace fusetune
