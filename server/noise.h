#pragma once
// What counts as faster on a shared, noisy machine: one rule for a plan over a simpler plan
// (server/validation.h) and for a schedule over a group's default schedule (GroupWork).
#include <algorithm>
#include <cmath>
#include <cstdint>

namespace fusetune {

// Below this relative difference two timings are the same speed, whatever their spread says.
inline constexpr double kNoiseFloor = 0.03;

// The standard error of a median of `repeat` timings with standard deviation `stddev_us`,
// relative to the median (the median's efficiency against the mean is 1/1.2533 for normal noise).
inline double RelativeError(double median_us, double stddev_us, int64_t repeat) {
  if (!(median_us > 0)) return 0;
  return 1.2533 * stddev_us / median_us /
         std::sqrt(static_cast<double>(std::max<int64_t>(1, repeat)));
}

// A round's spread (server/validation.cc) comes from the repeats' median absolute deviation
// instead: the round's figure is a plan's fastest repeat, and one slow repeat, which leaves that
// figure alone, tripled a plan's standard deviation. In a GPT-2 stack's tune the first repeat of
// a decision's plan ran a median 2-8% and at the slowest tenth 1.9-2.3x slower than the others
// after a check call as long as a repeat, which was then its only warm-up; the MLP's
// plan, 1.04-1.08x faster than greedy in every round, showed ±3-6% against greedy's ±0.8% and was
// decided "within noise". The factor makes the MAD of n normal repeats a standard deviation on
// average (1.4826 for many; simulated for the few a worker takes: from 3, stopping once most
// agree).
inline double MadToStddev(int64_t n) {
  constexpr double kFactor[] = {0,     0,     1.772, 2.199, 2.017, 1.806,
                                1.762, 1.688, 1.670, 1.632, 1.626};
  return n < 2 ? 0 : n <= 10 ? kFactor[n] : 1.4826;
}
// A round's relative error: from the smaller of the scaled MAD and the stddev (the stddev alone
// when the worker sent no MAD). Of three repeats spread evenly (100, 109, 118) the scaled MAD
// reads 2.2x the stddev and would call a round within noise, or disturbed, that the stddev
// decides; one slow repeat inflates only the stddev. The smaller of the two cannot favour either
// plan: for two plans of one speed wins and losses stay equally likely, and the sign test over the
// rounds bounds the rest. Simulated, 3 repeats at ±2% and one slow repeat in 5 rounds: a plan 4%
// faster wins 75% of rounds (MAD 67%, stddev 55%) and loses 1%; of one speed, 20% each way.
inline double RoundRelativeError(double median_us, double stddev_us, double mad_us,
                                 int64_t repeat) {
  const double spread = mad_us > 0 ? std::min(stddev_us, MadToStddev(repeat) * mad_us) : stddev_us;
  return RelativeError(median_us, spread, repeat);
}

// Short timings with few repeats can report a spread as large as the time itself (one cold
// repeat); past this the spread says nothing more, and the paired rounds' sign test decides.
inline constexpr double kNoiseCeiling = 0.25;

// The relative difference below which two timings are within each other's noise.
inline double NoiseThreshold(double rel_error_a, double rel_error_b) {
  return std::clamp(2 * std::hypot(rel_error_a, rel_error_b), kNoiseFloor, kNoiseCeiling);
}

// Whether `a` is faster than `b` by more than the noise of the two timings: b / a > 1 + noise.
inline bool FasterBeyondNoise(double a_us, double a_rel_error, double b_us, double b_rel_error) {
  return a_us * (1 + NoiseThreshold(a_rel_error, b_rel_error)) < b_us;
}

// One round of a validation (server/validation.h) is judged otherwise: there the plans are timed
// back to back in one job, alone on the worker, in an order rotated per round, and a win must hold
// in a sign test over the rounds, which by itself bounds the chance that a plan no faster wins
// (any per-round threshold above 0 only makes it rarer). The round's threshold then only sets
// aside differences inside the timings' own spread: one combined standard error, at least 1%
// (and at most the ceiling, as above).
// With the rule above (3%, two standard errors) a plan 4-6% faster lost most rounds: BERT's denses
// on weights packed once (4-13% faster alone) were kept in no region at S=256, "searched
// schedules 1.04× vs greedy on defaults, within noise" (BENCHMARKS.md, "Decisions against noise").
inline constexpr double kRoundNoiseFloor = 0.01;
inline bool RoundWon(double a_us, double a_rel_error, double b_us, double b_rel_error) {
  return a_us * (1 + std::clamp(std::hypot(a_rel_error, b_rel_error), kRoundNoiseFloor,
                                kNoiseCeiling)) <
         b_us;
}
// A round whose timings spread to the ceiling (a burst of load) says nothing about two plans
// within the ceiling of each other: the sign test leaves it out, as a tie, instead of counting it
// as a loss. One plan faster than the other beyond the ceiling is still a win or a loss (a fused
// chain several times faster than its unfused plan wins even on a loaded machine). Both ways
// alike, so for two plans of one speed wins and losses stay equally likely.
inline bool RoundDisturbed(double a_us, double a_rel_error, double b_us, double b_rel_error) {
  return 2 * std::hypot(a_rel_error, b_rel_error) >= kNoiseCeiling &&
         a_us * (1 + kNoiseCeiling) >= b_us && b_us * (1 + kNoiseCeiling) >= a_us;
}

}  // namespace fusetune
