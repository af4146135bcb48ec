// Adaptive timing stops once its repeats agree, and no later than `repeat`; racing stops a call
// that cannot be the best after `race_after` repeats; a plan of one kernel is timed once; per-
// kernel figures measured in sequence add up to the whole.
#include <chrono>
#include <string>

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
  o.tolerance = 10.0;  // any three repeats agree
  Timing t = TimeCalls(Busy(20, &calls), o);
  EXPECT_EQ(t.repeat, 3);
  // The run that found `number` is the first repeat: warm-up, growing runs, two more repeats.
  EXPECT_GE(calls, 1 + 3 * t.number);
  o.tolerance = -1;  // never agree: every repeat the options allow
  EXPECT_EQ(TimeCalls(Busy(20, &calls), o).repeat, 7);
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
  EXPECT_EQ(t.repeat, 5);
  EXPECT_EQ(t.min_repeat_ms, 10);
  EXPECT_EQ(t.min_repeat, 3);
  EXPECT_EQ(t.race_us, 0);
  EXPECT_EQ(JobTiming(asked, 123.0).race_us, 123.0);
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
  double sum = 0;
  for (const KernelTiming& k : p.kernels) {
    EXPECT_GT(k.timing.median_us, 0.0);
    sum += k.timing.median_us;
  }
  // Measured in a later pass than the whole: equal within what a shared machine moves.
  EXPECT_GT(sum, 0.5 * p.total.median_us);
  EXPECT_LT(sum, 2.0 * p.total.median_us);
}

}  // namespace
}  // namespace fusetune
