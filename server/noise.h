#pragma once
// What counts as faster on a shared, noisy machine: one rule for a plan over a simpler plan
// (server/validation.h) and for a schedule over a group's default schedule (GroupWork).
#include <algorithm>
#include <cmath>
#include <cstdint>

namespace fusetune {

// Below this relative difference two timings are the same speed, whatever their spread says.
inline constexpr double kNoiseFloor = 0.03;
// The same for one round of a validation (server/validation.h): there the plans are timed back to
// back in one job, alone on the worker, in an order rotated per round, and a win must also hold in
// a sign test over the rounds, which alone bounds the chance of a plan no faster winning. With
// the 3% floor a plan 4% faster had to beat it in nearly every round: BERT's denses on weights
// packed once (4-13% faster alone) were kept in no region at S=256, "searched schedules 1.04× vs
// greedy on defaults, within noise" (BENCHMARKS.md, "Decisions against noise").
inline constexpr double kPairedNoiseFloor = 0.01;

// The standard error of a median of `repeat` timings with standard deviation `stddev_us`,
// relative to the median (the median's efficiency against the mean is 1/1.2533 for normal noise).
inline double RelativeError(double median_us, double stddev_us, int64_t repeat) {
  if (!(median_us > 0)) return 0;
  return 1.2533 * stddev_us / median_us /
         std::sqrt(static_cast<double>(std::max<int64_t>(1, repeat)));
}

// Short timings with few repeats can report a spread as large as the time itself (one cold
// repeat); past this the spread says nothing more, and the paired rounds' sign test decides.
inline constexpr double kNoiseCeiling = 0.25;

// The relative difference below which two timings are within each other's noise.
inline double NoiseThreshold(double rel_error_a, double rel_error_b, double floor = kNoiseFloor) {
  return std::clamp(2 * std::hypot(rel_error_a, rel_error_b), floor, kNoiseCeiling);
}

// Whether `a` is faster than `b` by more than the noise of the two timings: b / a > 1 + noise.
inline bool FasterBeyondNoise(double a_us, double a_rel_error, double b_us, double b_rel_error,
                              double floor = kNoiseFloor) {
  return a_us * (1 + NoiseThreshold(a_rel_error, b_rel_error, floor)) < b_us;
}

}  // namespace fusetune
