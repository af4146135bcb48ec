#pragma once
// The tuner: the whole search for one graph, free of transport so `tune --local` and the gRPC
// service run the same code. Its pipeline reads as the steps of DESIGN.md's data flow:
//
//   candidates ▶ regions ▶ signature per region ▶ cache lookup ▶ measurement jobs for the misses
//   ▶ partition search per region ▶ region validation (tuned vs greedy vs unfused, one run)
//   ▶ best plan per region into the store ▶ whole-graph timing of the three plans
//
// Where jobs run is the MeasurementBackend's business: an in-process sandbox child (local mode)
// or the service's worker farm.
#include <functional>
#include <string>
#include <vector>

#include "db/cache.h"
#include "ir/graph.h"
#include "ir/plan.h"
#include "server/search_options.h"
#include "worker/job.h"

namespace fusetune {

// Bumped whenever a change to the search could change which plan is best: stored plans of other
// versions are then ignored (and kept).
constexpr int kSearchVersion = 1;

// Measurement defaults of the tuner: shorter repeats than the timing harness's own default, since
// a search times hundreds of kernels and each figure is the median of `repeat` repeats anyway.
inline TimingOptions DefaultTuneTiming() {
  TimingOptions t;
  t.min_repeat_ms = 10.0;
  return t;
}

struct TuneOptions {
  SearchOptions search;
  TimingOptions timing = DefaultTuneTiming();
  bool use_cache = true;  // false: search again (measurements are still reused)
};

struct RegionReport {
  std::string signature;
  std::vector<ValueId> nodes;
  std::vector<std::string> ops;
  bool cached = false;
  std::vector<PlanGroup> plan;  // the stored plan, in this graph's node ids
  std::string chosen;           // "tuned", "greedy" or "unfused"
  double tuned_us = 0, greedy_us = 0, unfused_us = 0;
  double max_abs_error = 0;
  int candidates = 0;  // (group, schedule) pairs in the search space
  int measured = 0;    // measured in this run
  int reused = 0;      // found in the store
  int pruned = 0;      // skipped by the cost model under the budget
};

struct TuneReport {
  std::string target;
  int threads = 1;
  std::vector<RegionReport> regions;
  Plan tuned_plan;  // the whole graph
  double total_tuned_us = 0, total_greedy_us = 0, total_unfused_us = 0;
  // false: sums of stored region figures (a fully cached run, whose plans were checked against
  // the reference when they were stored). A graph that is one region is timed by its validation.
  bool totals_measured = false;
  std::string total_chosen = "tuned";  // which whole-graph plan was fastest
  double max_abs_error = 0;
  int candidates_measured = 0;
  int measurements_reused = 0;
  int pruned = 0;
  double seconds = 0;
};

// Runs measurement jobs somewhere. Implementations: LocalBackend (client/), the service's queue.
class MeasurementBackend {
 public:
  virtual ~MeasurementBackend() = default;
  virtual std::string TargetFingerprint() = 0;
  // Runs every job, in any order; results in the order of `jobs`. `on_done` is called once per
  // finished job (from the calling thread).
  virtual std::vector<JobResult> RunJobs(const std::vector<MeasureJob>& jobs,
                                         const std::function<void(size_t finished)>& on_done) = 0;
};

struct TuneProgress {
  std::string phase;  // "measuring", "validating", "timing"
  size_t done = 0, total = 0;
};
using ProgressFn = std::function<void(const TuneProgress&)>;

TuneReport Tune(const Graph& graph, const TuneOptions& options, db::Cache& store,
                MeasurementBackend& backend, const ProgressFn& progress = {});

// Cached plans only: the report's regions with `cached` set, and the signatures of regions that
// have no stored plan in `missing`. Nothing is measured.
TuneReport LookupCached(const Graph& graph, const SearchOptions& options, db::Cache& store,
                        const std::string& target, std::vector<std::string>* missing);

// The DESIGN.md `tune --json` shape.
std::string TuneReportToJson(const Graph& graph, const std::string& graph_name,
                             const TuneReport& report);

}  // namespace fusetune
