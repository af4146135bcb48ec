#include "worker/timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

namespace fusetune {
namespace {

volatile uint64_t g_flush_sink;  // keeps the flush loop from being optimised away

double NowUs() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

void FlushCaches() {
  static std::vector<uint64_t> buffer(size_t{64} << 20 >> 3, 1);  // 64 MiB
  uint64_t sum = 0;
  for (size_t i = 0; i < buffer.size(); i += 8) {
    buffer[i] += 1;
    sum += buffer[i];
  }
  g_flush_sink = sum;
}

Timing TimeCalls(const std::function<void()>& call, const TimingOptions& options) {
  for (int i = 0; i < options.warmup; ++i) call();
  int number = options.number > 0 ? options.number : 1;
  if (options.number <= 0 && !options.flush_cache) {
    // Grow `number` until one repeat lasts min_repeat_ms (capped so a slow call is not repeated
    // needlessly: one call longer than the minimum keeps number = 1).
    for (;;) {
      double start = NowUs();
      for (int i = 0; i < number; ++i) call();
      double elapsed_ms = (NowUs() - start) / 1000.0;
      if (elapsed_ms >= options.min_repeat_ms || number >= (1 << 24)) break;
      double factor = elapsed_ms > 0 ? options.min_repeat_ms / elapsed_ms : 16.0;
      number =
          static_cast<int>(std::min<double>(number * std::clamp(factor * 1.1, 2.0, 16.0), 1 << 24));
    }
  }
  Timing t;
  t.number = number;
  t.repeat = std::max(1, options.repeat);
  for (int r = 0; r < t.repeat; ++r) {
    if (options.flush_cache) FlushCaches();
    double start = NowUs();
    for (int i = 0; i < number; ++i) call();
    t.samples_us.push_back((NowUs() - start) / number);
  }
  std::vector<double> sorted = t.samples_us;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  t.median_us = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  t.min_us = sorted.front();
  double mean = std::accumulate(sorted.begin(), sorted.end(), 0.0) / n;
  double var = 0;
  for (double s : sorted) var += (s - mean) * (s - mean);
  t.stddev_us = n > 1 ? std::sqrt(var / (n - 1)) : 0.0;
  return t;
}

}  // namespace fusetune
