// Adaptive timing stops once its repeats agree, and no later than `repeat`; racing stops a call
// that cannot be the best after `race_after` repeats; growing runs do not overshoot the repeat
// length; a plan of one kernel is timed once; per-kernel figures measured in sequence are read
// during the whole's repeats and add up to it.
#include <chrono>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ir/interpreter.h"
#include "ir/text/relay_parser.h"
#include "worker/codegen/jit.h"
#include "worker/executor.h"
#include "worker/job_runner.h"
#include "worker/timing.h"

namespace fusetune {
namespace {

// A busy call of `us` microseconds (sleeping would measure the scheduler's timer slack).
auto Busy(double us, int* calls) {
  return [us, calls] {
    ++*calls;
    auto until = std::chrono::steady_clock::now() + std::chrono::duration<double, std::micro>(us);
    while (std::chrono::steady_clock::now() < until) {
    }
  };
}

TimingOptions Quick() {
  TimingOptions o;
  o.warmup = 1;
  o.repeat = 7;
  o.min_repeat_ms = 2;
  return o;
}

TEST(Timing, FixedRepeatsWithoutAdaptation) {
  int calls = 0;
  Timing t = TimeCalls(Busy(20, &calls), Quick());
  EXPECT_EQ(t.repeat, 7);
  EXPECT_EQ(t.samples_us.size(), 7u);
  EXPECT_FALSE(t.raced);
}

TEST(Timing, AdaptiveStopsWhenRepeatsAgree) {
  int calls = 0;
  TimingOptions o = Quick();
  o.min_repeat = 3;
  o.tolerance = 10.0;  // any repeats agree
  Timing t = TimeCalls(Busy(20, &calls), o);
  EXPECT_EQ(t.repeat, 3);
  // The run that found `number` is the first repeat: warm-up, growing runs, two more repeats.
  EXPECT_GE(calls, 1 + 3 * t.number);
  o.tolerance = -1;  // never agree: every repeat the options allow
  EXPECT_EQ(TimeCalls(Busy(20, &calls), o).repeat, 7);
}

TEST(Timing, GrowingRunsJumpToTheRepeatLengthWithoutOvershoot) {
  // 200 µs calls, 5 ms repeats: one call predicts the rest, so the next run is ~28 calls.
  // Growing by at most 16x, then at least 2x, ran 16 calls (3.2 ms) and then 32 (6.4 ms).
  int calls = 0;
  TimingOptions o = Quick();
  o.repeat = 3;
  o.min_repeat_ms = 5;
  Timing t = TimeCalls(Busy(200, &calls), o);
  EXPECT_GE(t.number * t.samples_us[0], 5000.0);  // a repeat lasts at least min_repeat_ms
  EXPECT_LE(t.number, 5000 * 1.1 / 200 + 1);      // and the prediction does not overshoot it
  EXPECT_GE(t.number, 2);
}

TEST(Timing, EveryRunThatMayBeARepeatIsAnnouncedOutsideTheTimedSpan) {
  // Calls counted between announcements: the growing runs, then `repeat` runs of `number`.
  std::vector<int> runs;
  int calls = 0;
  auto counted = Busy(20, &calls);
  TimingOptions o = Quick();
  o.warmup = 2;
  o.repeat = 4;
  Timing t = TimeCalls(counted, o, [&] { runs.push_back(calls); });
  runs.push_back(calls);
  ASSERT_GE(runs.size(), 5u);
  EXPECT_EQ(runs[0], o.warmup);  // the warm-up comes before the first announcement
  for (size_t r = runs.size() - 4; r < runs.size(); ++r)
    EXPECT_EQ(runs[r] - runs[r - 1], t.number) << "run " << r;
  EXPECT_EQ(t.repeat, 4);
}

TEST(Timing, OneDisturbedRepeatCostsNoMoreRepeats) {
  // One call per repeat; the second repeat's call is three times slower (another process took the
  // core). The other two agree with their median: enough. The calls are real spins, so on a loaded
  // machine an undisturbed one can overrun too; a broken rule fails every attempt, noise only some.
  TimingOptions o = Quick();
  o.number = 1;
  o.min_repeat = 3;
  o.tolerance = 0.2;
  std::vector<int> repeats;
  for (int attempt = 0; attempt < 5; ++attempt) {
    int calls = 0;
    auto disturbed = [&] {
      ++calls;
      const double us = calls == 3 ? 600 : 200;  // call 1 is the warm-up
      auto until = std::chrono::steady_clock::now() + std::chrono::duration<double, std::micro>(us);
      while (std::chrono::steady_clock::now() < until) {
      }
    };
    Timing t = TimeCalls(disturbed, o);
    repeats.push_back(t.repeat);
    if (t.repeat == 3 && t.median_us < 400.0) return;
  }
  ADD_FAILURE() << "no attempt stopped at 3 repeats with a median below 400 us; repeats: "
                << ::testing::PrintToString(repeats);
}

TEST(Timing, TheMadSetsOneSlowRepeatAsideWhereTheStddevDoesNot) {
  const Timing t = Summarize({150, 100, 101}, 1);
  EXPECT_DOUBLE_EQ(t.min_us, 100);
  EXPECT_DOUBLE_EQ(t.median_us, 101);
  EXPECT_DOUBLE_EQ(t.mad_us, 1);  // distances 49, 1, 0 from the median
  EXPECT_GT(t.stddev_us, 28);
  EXPECT_DOUBLE_EQ(Summarize({10, 11, 12, 30}, 1).mad_us, 1);  // distances 0.5, 0.5, 1.5, 18.5
  EXPECT_DOUBLE_EQ(Summarize({10}, 1).mad_us, 0);
}

TEST(Timing, RacingStopsACallThatCannotBeTheBest) {
  int calls = 0;
  TimingOptions o = Quick();
  o.min_repeat = 3;
  o.tolerance = -1;
  o.race_us = 5;  // the best known is 4x faster than this 20 us call
  o.race_after = 2;
  Timing slow = TimeCalls(Busy(20, &calls), o);
  EXPECT_TRUE(slow.raced);
  EXPECT_EQ(slow.repeat, 2);
  EXPECT_GE(slow.median_us, 20.0);
  o.race_us = 200;  // this call is the faster one: not raced
  Timing fast = TimeCalls(Busy(20, &calls), o);
  EXPECT_FALSE(fast.raced);
  EXPECT_EQ(fast.repeat, 7);
}

TEST(Timing, JobsAdaptFromThreeRepeatsAndRaceTheBestPlan) {
  TimingOptions asked;
  asked.repeat = 5;
  asked.min_repeat_ms = 10;
  TimingOptions t = JobTiming(asked, 0);
  EXPECT_EQ(t.warmup, asked.warmup - 1);  // the check ran the plan once
  EXPECT_EQ(t.repeat, 5);
  EXPECT_EQ(t.min_repeat_ms, 10);
  EXPECT_EQ(t.min_repeat, 3);
  EXPECT_EQ(t.race_us, 0);
  EXPECT_EQ(JobTiming(asked, 123.0).race_us, 123.0);
  EXPECT_EQ(JobTiming(asked, 123.0, 0, /*alone=*/true).race_us, 0)
      << "a decision's job never races";
  // A check call as long as a repeat was warm-up enough; a shorter one counts as one warm-up.
  EXPECT_EQ(JobTiming(asked, 0, 12.0).warmup, 0);
  EXPECT_EQ(JobTiming(asked, 0, 0.5).warmup, asked.warmup - 1);
  // No check ran (a plan checked in an earlier job): every warm-up call.
  EXPECT_EQ(JobTiming(asked, 0, std::nullopt).warmup, asked.warmup);
  asked.repeat = 1;  // never more repeats than the job allows
  EXPECT_EQ(JobTiming(asked, 0).min_repeat, 1);
}

const char* kChain =
    "fn (%x: Tensor[(256, 256), float32], %y: Tensor[(256, 256), float32]) {\n"
    "  %0 = subtract(%x, %y);\n  %1 = exp(%0);\n  negative(%1)\n}";

TEST(Measure, OneKernelIsTimedOnceAndKernelsInSequenceAddUp) {
  Graph g = ParseRelay(kChain, "test");
  codegen::Jit jit;
  std::vector<Tensor> inputs = RandomInputs(g, 1);
  TimingOptions o = Quick();
  o.repeat = 3;
  {
    PlanExecutor fused(g, Plan{"fused", {{{2, 3, 4}, {}}}}, jit, 1);
    fused.SetInputs(inputs);
    PlanProfile p = fused.Measure(o, PlanExecutor::KernelTimes::kInSequence);
    ASSERT_EQ(p.kernels.size(), 1u);
    EXPECT_EQ(p.kernels[0].timing.samples_us, p.total.samples_us);
  }
  PlanExecutor unfused(g, UnfusedPlan(g), jit, 1);
  unfused.SetInputs(inputs);
  PlanProfile p = unfused.Measure(o, PlanExecutor::KernelTimes::kInSequence);
  ASSERT_EQ(p.kernels.size(), 3u);
  // Read during the whole's own repeats: per repeat, the kernels' figures add up to the whole's
  // (less the loop around them), however busy the machine is.
  for (size_t r = 0; r < p.total.samples_us.size(); ++r) {
    double sum = 0;
    for (const KernelTiming& k : p.kernels) {
      ASSERT_EQ(k.timing.samples_us.size(), p.total.samples_us.size());
      EXPECT_EQ(k.timing.number, p.total.number);
      EXPECT_GT(k.timing.samples_us[r], 0.0);
      sum += k.timing.samples_us[r];
    }
    EXPECT_LE(sum, p.total.samples_us[r] * 1.0001) << "repeat " << r;
    EXPECT_GT(sum, p.total.samples_us[r] * 0.9) << "repeat " << r;
  }
}

}  // namespace
}  // namespace fusetune
