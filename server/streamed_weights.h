#pragma once
// Stage: weights streamed further ahead. A matmul on weights packed once (wpack) streams the B
// block its thread uses next into L2 while it computes, one line per k-loop iteration (pb=1). In a
// whole model the weights come from DRAM (a 12-layer BERT encoder's 340 MB), and there a stream
// that reaches further (pb=2, two lines an iteration) ran BERT's denses 2-7% faster and the whole
// encoder 0.97-1.01 of its time in paired runs; with the weights in the last-level cache it ran
// three of the four denses 1-3% slower (BENCHMARKS.md, "Weights streamed further ahead"). A group's
// candidate jobs and duels time it alone, where its weights stay in cache, so they cannot tell the
// two apart; the whole graph's timing can, since there the weights are where the other kernels
// leave them. So once the whole graph has kept the regions' plans, its twin with every such group
// on pb=2 (StreamedTwin, ir/matmul_schedule.h) is timed against it in paired rounds and replaces it
// only by winning them (the tuned plan is the incumbent). The searched regions' stored plans then
// take the twin's schedules, so `--plan tuned` serves what won; regions answered from the store
// keep theirs. The decision is added to the report's total_decision. Only a graph whose weights
// no last-level cache holds is tried (kStreamedWeightsMinBytes): a BERT layer's 28 MB stay in a
// 32 MB L3 from one run to the next, and there pb=2 loses; a 12-layer encoder's 340 MB do not.
#include <cstdint>
#include <vector>

#include "server/job_runner.h"
#include "server/region_formation.h"
#include "server/report_assembly.h"
#include "server/request_policy.h"
#include "server/tune_cache.h"
#include "server/tune_report.h"
#include "server/validation.h"

namespace fusetune {

// Weights beyond the largest last-level caches of current CPUs (96 MB on a Zen 4/5 X3D CCD).
inline constexpr int64_t kStreamedWeightsMinBytes = int64_t{128} << 20;

// `plan` with every group that reads weights packed once on pb=2; nullopt when none does.
std::optional<Plan> StreamedPlan(const Plan& plan);

// After TimeWholeGraph kept the tuned plan (whole.chosen == kTuned): times its streamed twin
// against it and, when the twin wins, stores it for the searched regions (`winners`) and makes it
// the report's plan and total. Nothing when the whole graph kept a baseline or was not timed.
void DuelStreamedWeights(const RequestPolicy& policy, const std::vector<TuneRegion>& regions,
                         const WholeGraphTiming& whole, const std::vector<RegionWinner>& winners,
                         JobRunner& runner, TuneCache& cache, TuneReport& report);

}  // namespace fusetune
