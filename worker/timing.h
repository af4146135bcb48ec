#pragma once
// The timing harness: warm-up calls, then repeats of `number` back-to-back calls, with `number`
// grown until one repeat lasts at least `min_repeat_ms` — the last of those growing runs is the
// first repeat —; a run of at least 100 µs predicts the calls a repeat needs, so the growth jumps
// there at once instead of doubling past it; per-call times of the repeats give median, min and
// standard deviation. Optionally the caches are flushed before each repeat (then `number` stays 1
// so every timed call starts cold).
//
// Adaptive (min_repeat > 0): after `min_repeat` repeats, timing stops as soon as a majority of the
// repeats lie within `tolerance` of their median (so one repeat disturbed by another process does
// not cost more repeats: the median ignores it), or, racing, as soon as even the fastest repeat is
// slower than `race_us` by `race_margin` (a call that cannot be the best); it never takes more
// than `repeat` repeats. Otherwise exactly `repeat` repeats.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

namespace fusetune {

struct TimingOptions {
  int warmup = 2;
  int repeat = 5;
  int number = 0;  // calls per repeat; 0: grow until a repeat lasts min_repeat_ms
  double min_repeat_ms = 20.0;
  bool flush_cache = false;
  // Adaptive stopping (not sent with jobs: the worker sets it, see worker/job_runner.cc).
  int min_repeat = 0;       // 0: always `repeat` repeats
  double tolerance = 0.02;  // relative distance from the median within which repeats agree
  double race_us = 0;       // > 0: the best time known for the same work
  double race_margin = 0.10;
  int race_after = 2;  // repeats before racing may stop
};

struct Timing {
  double median_us = 0;
  double min_us = 0;
  double stddev_us = 0;
  // The median of the repeats' distances from their median: a spread that one repeat disturbed
  // by another process (or started cold) does not inflate, as it does stddev_us.
  double mad_us = 0;
  int number = 0;
  int repeat = 0;
  bool raced = false;              // stopped early as clearly slower than options.race_us
  std::vector<double> samples_us;  // per-call time of each repeat
};

// `before_run`, when given, is called before every run of `number` calls that may become a repeat
// (the growing runs and the repeats; not the warm-up), outside the timed span, so a caller can
// split figures it gathers inside `call` by repeat: the last `repeat` runs are the repeats.
Timing TimeCalls(const std::function<void()>& call, const TimingOptions& options = {},
                 const std::function<void()>& before_run = {});

// The median of `v`; NaN when it is empty. Inline: the tuner's decisions (server/validation.cc)
// take medians of rounds without linking the harness.
inline double Median(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Median, min and standard deviation of `samples_us` (at least one) into a Timing.
Timing Summarize(std::vector<double> samples_us, int number);

// Evicts the caches by touching a buffer larger than the last-level cache.
void FlushCaches();

}  // namespace fusetune
