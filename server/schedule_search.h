#pragma once
// Stage: the schedule search, run where the measuring stage runs. After the planned jobs (each
// group's default and its best-ranked schedules, server/measurement_planning.h) are measured, it
// spends a per-region budget of further measurements in rounds, successive-halving style:
//
//   round r:  the region's groups that are still alive, those in its best cover by the times
//             measured so far first (the plan the search would pick), heaviest first within each
//             part (their best measured time: where a faster schedule saves the most), each get
//             up to kPerRound new
//             schedules: first the unmeasured neighbours (one knob changed, ScheduleDistance) of
//             the group's better half (the measured schedules within noise of its best, at most
//             half of them), in the ranker's order, then the next ranked; measured together as one
//             batch
//   a group drops out when its space is measured, or after two rounds that found nothing faster
//             beyond noise (server/noise.h); the region's budget ends the search
//
// A schedule already in the store is taken from it instead of measured; it still counts against
// the budget, so the same request again follows the same path through the store and measures
// nothing new (while the ranker's order is the same). A group shared by several
// regions is searched once, charged to the first region that picks it in a round. Every
// measurement is stored (server/measuring.h), so other regions and later requests reuse it.
#include "server/job_runner.h"
#include "server/measurement_planning.h"
#include "server/region_formation.h"
#include "server/tune_cache.h"

namespace fusetune {

// Measures the planned jobs, then searches schedules under `budget_per_region` further
// measurements per region (0: none). Returns how many (group, schedule) pairs were measured; on
// return plan.jobs holds every job run.
int MeasureWithScheduleSearch(const Graph& graph, const std::vector<TuneRegion>& regions,
                              MeasurementPlan& plan, JobRunner& runner, TuneCache& cache,
                              int budget_per_region);

// The next `n` schedules to measure of `gw`'s candidates (removed from them): the unmeasured
// neighbours of its better half first, then the best ranked. Exposed for tests.
std::vector<Schedule> NextSchedules(GroupWork& gw, int n);

}  // namespace fusetune
