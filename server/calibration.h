#pragma once
// Stage: calibration. The target's roofline (peak GFLOP/s and memory bandwidth) for the cost model
// that orders and prunes measurements under a budget.
#include "server/cost_model.h"
#include "server/job_runner.h"
#include "server/tune_cache.h"

namespace fusetune {

// The stored roofline of the target; else, when `needed` (a budget makes the model prune), one
// job that times a copy-like kernel over 32 MiB and a batch_matmul, stored for next time; else
// (or when that job fails) the model's defaults.
RooflineTarget Calibrate(TuneCache& cache, JobRunner& runner, bool needed);

}  // namespace fusetune
