#pragma once
// Stage: measuring. Runs the planned jobs on the backend, stores each job's measurements together
// (so a concurrent task never sees half of a group's schedules), and fills in the medians of the
// groups measured and each region's count. A failed kernel is a value: invalid, infinitely slow.
#include "server/job_runner.h"
#include "server/measurement_planning.h"
#include "server/tune_cache.h"

namespace fusetune {

// Returns how many (group, schedule) pairs were measured. `graph` is the one the plan was made for.
int Measure(const Graph& graph, MeasurementPlan& plan, JobRunner& runner, TuneCache& cache);

}  // namespace fusetune
