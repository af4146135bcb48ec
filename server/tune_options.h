#pragma once
// The options of one tuning request: the search controls and how each measurement is timed.
#include "server/search_options.h"
#include "worker/timing.h"

namespace fusetune {

// Bumped whenever a change to the search could change which plan is best: stored plans of other
// versions are then ignored (and kept).
constexpr int kSearchVersion = 3;  // 2: horizontal matmul groups; 3: attention groups

// Measurement defaults of the tuner: shorter repeats than the timing harness's own default, since
// a search times hundreds of kernels and each figure is the median of several repeats anyway
// (workers stop from 3 once a majority agree within 2%: worker/job_runner.h). 5 ms repeats made
// the BERT layer's tune 1.4x faster than 10 ms with plans re-timed alike (BENCHMARKS.md).
inline TimingOptions DefaultTuneTiming() {
  TimingOptions t;
  t.min_repeat_ms = 5.0;
  return t;
}

// What `tune` does with a region whose family has a tuned member (server/warm_start.h).
enum class WarmStart {
  kSearch,  // time the transferred plan first, then search with the family's groups first
  kOnly,    // time the transferred plan against greedy and unfused, and stop there
  kOff,     // a cold search, as if the family had no tuned member
};

struct TuneOptions {
  SearchOptions search;
  TimingOptions timing = DefaultTuneTiming();
  bool use_cache = true;  // false: search again (measurements are still reused)
  WarmStart warm_start = WarmStart::kSearch;
};

}  // namespace fusetune
