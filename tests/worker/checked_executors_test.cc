// A plan checked against the reference in a decision's job is timed in the next round's job
// without being built or checked again, and only for the same graph, plan, inputs and threads; a
// plan that failed its check, or was a candidate's, is checked again. The kept executors are
// bounded in bytes.
#include <cstdlib>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "ir/text/relay_parser.h"
#include "worker/checked_executors.h"
#include "worker/job_runner.h"

namespace fusetune {
namespace {

const char* kGraph =
    "fn (%x: Tensor[(48, 40), float32], %y: Tensor[(48, 40), float32]) {\n"
    "  %0 = subtract(%x, %y);\n  exp(%0)\n}";
const char* kFused = R"({"groups":[{"nodes":["%0","%1"]}]})";
const char* kUnfused = R"({"groups":[{"nodes":["%0"]},{"nodes":["%1"]}]})";

MeasureJob Job(int64_t id, uint64_t seed = 1) {
  MeasureJob job;
  job.id = id;
  job.graph_text = kGraph;
  job.seed = seed;
  job.plans = {{"fused", kFused}, {"unfused", kUnfused}};
  job.alone = true;  // a decision's round
  job.timing.warmup = 1;
  job.timing.repeat = 3;
  job.timing.min_repeat_ms = 1;
  return job;
}

TEST(CheckedExecutors, ALaterRoundTimesThePlansCheckedBefore) {
  JobRunner runner(0);
  JobResult first = runner.Run(Job(1));
  ASSERT_EQ(first.plans.size(), 2u);
  for (const PlanResult& p : first.plans) {
    ASSERT_TRUE(p.ok) << p.name << ": " << p.reason;
    EXPECT_GT(p.check_ms, 0.0) << p.name;
  }
  EXPECT_EQ(first.reuse.reference_nodes_evaluated, 2);
  JobResult second = runner.Run(Job(2));
  for (size_t i = 0; i < 2; ++i) {
    const PlanResult& p = second.plans.at(i);
    ASSERT_TRUE(p.ok) << p.name << ": " << p.reason;
    EXPECT_EQ(p.check_ms, 0.0) << p.name << " was checked again";
    EXPECT_GT(p.median_us, 0.0) << p.name;
    EXPECT_EQ(p.max_abs_error, first.plans[i].max_abs_error) << p.name;
  }
  EXPECT_EQ(second.reuse.kernels_compiled, 0);
  EXPECT_EQ(second.reuse.kernels_reused, 3);
  // Other inputs are another check (and another reference).
  JobResult other_seed = runner.Run(Job(3, /*seed=*/2));
  for (const PlanResult& p : other_seed.plans) {
    ASSERT_TRUE(p.ok) << p.name << ": " << p.reason;
    EXPECT_GT(p.check_ms, 0.0) << p.name;
  }
  EXPECT_EQ(other_seed.reuse.reference_nodes_evaluated, 2);
}

TEST(CheckedExecutors, OnlyADecisionsJobKeepsItsPlans) {
  JobRunner runner(0);
  MeasureJob candidate = Job(1);
  candidate.alone = false;  // a candidate's measurement: timed once
  ASSERT_TRUE(runner.Run(candidate).plans.at(0).ok);
  MeasureJob again = Job(2);
  again.alone = false;
  JobResult second = runner.Run(again);
  for (const PlanResult& p : second.plans) {
    ASSERT_TRUE(p.ok) << p.name << ": " << p.reason;
    EXPECT_GT(p.check_ms, 0.0) << p.name << " was kept from a candidate's job";
  }
}

TEST(CheckedExecutors, APlanThatFailedItsCheckIsCheckedAgain) {
  ::setenv("FUSETUNE_TEST_INJECT", "wrong:exp", 1);
  JobRunner runner(0);
  JobResult first = runner.Run(Job(1));
  JobResult second = runner.Run(Job(2));
  ::unsetenv("FUSETUNE_TEST_INJECT");
  for (const JobResult* r : {&first, &second}) {
    EXPECT_FALSE(r->plans.at(0).ok) << "job " << r->id << ": the fused plan is wrong";
    EXPECT_NE(r->plans[0].reason.find("wrong result"), std::string::npos) << r->plans[0].reason;
    EXPECT_TRUE(r->plans.at(1).ok) << r->plans[1].reason;
  }
  EXPECT_GT(second.plans[0].check_ms, 0.0);
  EXPECT_EQ(second.plans[1].check_ms, 0.0) << "the unfused plan passed in job 1";
}

TEST(CheckedExecutors, KeepsTheMostRecentWithinItsBytes) {
  auto graph = std::make_shared<const Graph>(ParseRelay(kGraph, "test"));
  // Parameters twice (weights packed at bind time), nodes once: 48 x 40 floats each.
  const int64_t bytes = CheckedExecutors::Bytes(*graph);
  EXPECT_EQ(bytes, (2 * 2 + 2) * 48 * 40 * 4);
  CheckedExecutors kept(2 * bytes);
  auto checked = [&] { return CheckedExecutors::Checked{graph, nullptr, 0.0}; };
  kept.Keep("a", checked());
  kept.Keep("b", checked());
  EXPECT_EQ(kept.bytes(), 2 * bytes);
  kept.Keep("c", checked());  // "a", the least recently kept, leaves
  EXPECT_FALSE(kept.Contains("a"));
  EXPECT_TRUE(kept.Contains("b"));
  EXPECT_TRUE(kept.Contains("c"));
  EXPECT_EQ(kept.Take("b").graph, graph);
  EXPECT_FALSE(kept.Contains("b")) << "taken out until kept again";
  EXPECT_EQ(kept.Take("b").graph, nullptr);
  EXPECT_EQ(kept.size(), 1u);
  CheckedExecutors small(bytes - 1);
  small.Keep("a", checked());
  EXPECT_EQ(small.size(), 0u) << "an executor larger than the bound is not kept";
  // 4 GiB here (24 GiB machines); never above it, and room for a 12-layer encoder's plans.
  EXPECT_LE(CheckedExecutors::DefaultMaxBytes(), int64_t{4} << 30);
  EXPECT_GE(CheckedExecutors::DefaultMaxBytes(), int64_t{1} << 30);
  EXPECT_NE(CheckedExecutors::Key(kGraph, kFused, 1, 1),
            CheckedExecutors::Key(kGraph, kFused, 2, 1));
  EXPECT_NE(CheckedExecutors::Key(kGraph, kFused, 1, 1),
            CheckedExecutors::Key(kGraph, kFused, 1, 2));
  EXPECT_NE(CheckedExecutors::Key(kGraph, kFused, 1, 1),
            CheckedExecutors::Key(kGraph, kUnfused, 1, 1));
}

}  // namespace
}  // namespace fusetune
