#include "worker/timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

namespace fusetune {
namespace {

volatile uint64_t g_flush_sink;  // keeps the flush loop from being optimised away

constexpr int kMaxNumber = 1 << 24;       // calls per repeat, at most
constexpr double kReliableRunUs = 100.0;  // a growing run this long predicts the per-call time

double NowUs() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Whether an adaptive timing has seen enough after `samples` (see timing.h).
bool Enough(const std::vector<double>& samples, const TimingOptions& o, bool* raced) {
  const int n = static_cast<int>(samples.size());
  if (n >= std::max(1, o.repeat)) return true;
  if (o.min_repeat <= 0) return false;
  const double fastest = *std::min_element(samples.begin(), samples.end());
  if (o.race_us > 0 && n >= o.race_after && fastest > o.race_us * (1.0 + o.race_margin)) {
    *raced = true;
    return true;
  }
  if (n < o.min_repeat) return false;
  const double median = Median(samples);
  const auto agreeing = std::count_if(samples.begin(), samples.end(), [&](double s) {
    return std::fabs(s - median) <= o.tolerance * median;
  });
  return 2 * agreeing > n;
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

Timing Summarize(std::vector<double> samples_us, int number) {
  Timing t;
  t.number = number;
  t.repeat = static_cast<int>(samples_us.size());
  t.samples_us = std::move(samples_us);
  const std::vector<double>& s = t.samples_us;
  const size_t n = s.size();
  t.median_us = Median(s);
  t.min_us = *std::min_element(s.begin(), s.end());
  const double mean = std::accumulate(s.begin(), s.end(), 0.0) / n;
  double var = 0;
  for (double x : s) var += (x - mean) * (x - mean);
  t.stddev_us = n > 1 ? std::sqrt(var / (n - 1)) : 0.0;
  std::vector<double> deviations;
  for (double x : s) deviations.push_back(std::abs(x - t.median_us));
  t.mad_us = Median(std::move(deviations));
  return t;
}

Timing TimeCalls(const std::function<void()>& call, const TimingOptions& options,
                 const std::function<void()>& before_run) {
  for (int i = 0; i < options.warmup; ++i) call();
  int number = options.number > 0 ? options.number : 1;
  std::vector<double> samples;
  if (options.number <= 0 && !options.flush_cache) {
    // Grow `number` until one repeat lasts min_repeat_ms (capped so a slow call is not repeated
    // needlessly: one call longer than the minimum keeps number = 1). The run that reaches it is
    // a repeat like the others: it comes after the warm-up and the shorter runs.
    const double target_us = options.min_repeat_ms * 1000.0;
    for (;;) {
      if (before_run) before_run();
      double start = NowUs();
      for (int i = 0; i < number; ++i) call();
      double elapsed_us = NowUs() - start;
      if (elapsed_us >= target_us || number >= kMaxNumber) {
        samples.push_back(elapsed_us / number);
        break;
      }
      // A run of >= 100 µs predicts the per-call time within the clock's and the loop's noise:
      // jump to 10% past the target (doubling from there overshot by up to 2x: a 3 ms repeat
      // grew to 6). A shorter run grows by at most 16x, since its figure may be mostly overhead.
      const double factor = elapsed_us >= kReliableRunUs ? target_us * 1.1 / elapsed_us
                            : elapsed_us > 0 ? std::clamp(target_us * 1.1 / elapsed_us, 2.0, 16.0)
                                             : 16.0;
      number = static_cast<int>(
          std::min<double>(std::max<double>(number + 1, std::ceil(number * factor)), kMaxNumber));
    }
  }
  bool raced = false;
  while (samples.empty() || !Enough(samples, options, &raced)) {
    if (options.flush_cache) FlushCaches();
    if (before_run) before_run();
    double start = NowUs();
    for (int i = 0; i < number; ++i) call();
    samples.push_back((NowUs() - start) / number);
  }
  Timing t = Summarize(std::move(samples), number);
  t.raced = raced;
  return t;
}

}  // namespace fusetune
