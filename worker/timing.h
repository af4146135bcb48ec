#pragma once
// The timing harness: warm-up calls, then `repeat` repeats of `number` back-to-back calls, with
// `number` grown (doubling) until one repeat lasts at least `min_repeat_ms`; per-call times of
// the repeats give median, min and standard deviation. Optionally the caches are flushed before
// each repeat (then `number` stays 1 so every timed call starts cold).
#include <cstdint>
#include <functional>
#include <vector>

namespace fusetune {

struct TimingOptions {
  int warmup = 2;
  int repeat = 5;
  int number = 0;  // calls per repeat; 0: grow until a repeat lasts min_repeat_ms
  double min_repeat_ms = 20.0;
  bool flush_cache = false;
};

struct Timing {
  double median_us = 0;
  double min_us = 0;
  double stddev_us = 0;
  int number = 0;
  int repeat = 0;
  std::vector<double> samples_us;  // per-call time of each repeat
};

Timing TimeCalls(const std::function<void()>& call, const TimingOptions& options = {});

// Evicts the caches by touching a buffer larger than the last-level cache.
void FlushCaches();

}  // namespace fusetune
