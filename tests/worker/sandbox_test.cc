// The sandbox child lives across jobs (its JIT and caches with it); a kernel that crashes or
// hangs costs only its own job: the child is replaced and the next job runs.
#include <algorithm>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ir/plan.h"
#include "ir/text/relay_parser.h"
#include "worker/sandbox.h"

namespace fusetune {
namespace {

const char* kGraph =
    "fn (%x: Tensor[(64, 64), float32], %y: Tensor[(64, 64), float32]) {\n"
    "  %0 = subtract(%x, %y);\n  %1 = exp(%0);\n  negative(%1)\n}";

MeasureJob Job(int64_t id, const std::string& groups) {
  MeasureJob job;
  job.id = id;
  job.graph_text = kGraph;
  job.plans.push_back({"p", "{\"groups\":" + groups + "}"});
  job.timing.warmup = 1;
  job.timing.repeat = 3;
  job.timing.min_repeat_ms = 1;
  return job;
}
// exp fused with its producer: the fault injection's target. The unfused plan has no such group.
const char* kFusedExp = R"([{"nodes":["%0","%1"]},{"nodes":["%2"]}])";
const char* kUnfused = R"([{"nodes":["%0"]},{"nodes":["%1"]},{"nodes":["%2"]}])";

// Sets FUSETUNE_TEST_INJECT for the children started while it lives.
class Inject {
 public:
  explicit Inject(const char* spec) { ::setenv("FUSETUNE_TEST_INJECT", spec, 1); }
  ~Inject() { ::unsetenv("FUSETUNE_TEST_INJECT"); }
};

TEST(Sandbox, OneChildRunsManyJobsAndKeepsItsCaches) {
  Sandbox sandbox(std::chrono::seconds(60), FUSETUNE_BINARY);
  JobResult first = sandbox.Run(Job(1, kUnfused));
  ASSERT_TRUE(first.plans.at(0).ok) << first.plans[0].reason;
  EXPECT_EQ(first.reuse.kernels_compiled, 3);
  EXPECT_EQ(first.reuse.reference_nodes_evaluated, 3);
  // The same kernels and reference again: found in the child that ran the first job.
  JobResult second = sandbox.Run(Job(2, kUnfused));
  ASSERT_TRUE(second.plans.at(0).ok) << second.plans[0].reason;
  EXPECT_EQ(second.reuse.kernels_compiled, 0);
  EXPECT_EQ(second.reuse.kernels_reused, 3);
  EXPECT_EQ(second.reuse.reference_nodes_evaluated, 0);
  EXPECT_EQ(second.plans[0].max_abs_error, first.plans[0].max_abs_error);
  // A kept executor reports the magnitude its check was read on, as a fresh one does.
  EXPECT_GT(first.plans[0].max_output_magnitude, 0.0);
  EXPECT_EQ(second.plans[0].max_output_magnitude, first.plans[0].max_output_magnitude);
  EXPECT_GT(second.phases.total_ms, 0.0);
}

TEST(Sandbox, ACrashCostsOnlyItsJob) {
  Inject inject("crash:exp");
  Sandbox sandbox(std::chrono::seconds(60), FUSETUNE_BINARY);
  JobResult warm = sandbox.Run(Job(1, kUnfused));
  ASSERT_TRUE(warm.plans.at(0).ok) << warm.plans[0].reason;
  JobResult crashed = sandbox.Run(Job(2, kFusedExp));
  ASSERT_EQ(crashed.plans.size(), 1u);
  EXPECT_FALSE(crashed.plans[0].ok);
  EXPECT_NE(crashed.plans[0].reason.find("signal"), std::string::npos) << crashed.plans[0].reason;
  // The next job runs in a new child, which starts with empty caches.
  JobResult next = sandbox.Run(Job(3, kUnfused));
  ASSERT_TRUE(next.plans.at(0).ok) << next.plans[0].reason;
  EXPECT_EQ(next.reuse.kernels_compiled, 3);
}

TEST(Sandbox, AHangCostsOnlyItsJob) {
  Inject inject("hang:exp");
  Sandbox sandbox(std::chrono::seconds(3), FUSETUNE_BINARY);
  JobResult hung = sandbox.Run(Job(1, kFusedExp));
  ASSERT_EQ(hung.plans.size(), 1u);
  EXPECT_FALSE(hung.plans[0].ok);
  EXPECT_NE(hung.plans[0].reason.find("timed out"), std::string::npos) << hung.plans[0].reason;
  JobResult next = sandbox.Run(Job(2, kUnfused));
  ASSERT_TRUE(next.plans.at(0).ok) << next.plans[0].reason;
}

TEST(Sandbox, ACrashWhileCompilingAheadCostsOnlyItsJob) {
  Inject inject("compile_crash:exp");
  Sandbox sandbox(std::chrono::seconds(60), FUSETUNE_BINARY);
  MeasureJob first = Job(1, kUnfused), guilty = Job(2, kFusedExp), last = Job(3, kUnfused);
  // The guilty job's kernel compiles while the first job runs, and takes its child down.
  JobResult a = sandbox.Run(first, &guilty);
  ASSERT_TRUE(a.plans.at(0).ok) << a.plans[0].reason;
  JobResult b = sandbox.Run(guilty, &last);
  ASSERT_EQ(b.plans.size(), 1u);
  EXPECT_FALSE(b.plans[0].ok);
  EXPECT_NE(b.plans[0].reason.find("signal"), std::string::npos) << b.plans[0].reason;
  JobResult c = sandbox.Run(last);
  ASSERT_TRUE(c.plans.at(0).ok) << c.plans[0].reason;
}

TEST(Sandbox, TheNextJobSentAlongIsPreparedAndRunsAlike) {
  Sandbox sandbox(std::chrono::seconds(60), FUSETUNE_BINARY);
  MeasureJob first = Job(1, kUnfused), second = Job(2, kFusedExp);
  JobResult a = sandbox.Run(first, &second);
  JobResult b = sandbox.Run(second);
  ASSERT_TRUE(a.plans.at(0).ok) << a.plans[0].reason;
  ASSERT_TRUE(b.plans.at(0).ok) << b.plans[0].reason;
  EXPECT_EQ(a.reuse.kernels_compiled, 3);
  EXPECT_EQ(b.reuse.kernels_compiled, 1);  // the fused group; negative's kernel is the first's
  EXPECT_EQ(b.reuse.kernels_reused, 1);
}

// Runs `jobs` in order, each with up to `window` of the next ones sent ahead, as LocalBackend does.
std::vector<JobResult> RunWindowed(Sandbox& sandbox, const std::vector<MeasureJob>& jobs,
                                   size_t window) {
  std::vector<JobResult> results;
  for (size_t i = 0; i < jobs.size(); ++i)
    results.push_back(sandbox.Run(
        jobs[i], std::span(jobs).subspan(i + 1, std::min(window, jobs.size() - i - 1))));
  return results;
}

// Every job of `results` answered in order, its one plan valid, except job `bad_id`, which failed
// with a reason containing `why`.
void ExpectOnlyJobFailed(const std::vector<JobResult>& results, const std::vector<MeasureJob>& jobs,
                         int64_t bad_id, const std::string& why) {
  ASSERT_EQ(results.size(), jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    EXPECT_EQ(results[i].id, jobs[i].id);
    ASSERT_EQ(results[i].plans.size(), 1u);
    if (jobs[i].id == bad_id) {
      EXPECT_FALSE(results[i].plans[0].ok);
      EXPECT_NE(results[i].plans[0].reason.find(why), std::string::npos)
          << results[i].plans[0].reason;
    } else {
      EXPECT_TRUE(results[i].plans[0].ok) << jobs[i].id << ": " << results[i].plans[0].reason;
    }
  }
}

// Jobs that each fuse differently or not at all, with their own ids: two plans each, so a window
// of three holds up to six plans' kernels.
std::vector<MeasureJob> MixedJobs() {
  const char* groups[] = {kUnfused, R"([{"nodes":["%0"]},{"nodes":["%1","%2"]}])",
                          R"([{"nodes":["%0","%1","%2"]}])", kFusedExp};
  std::vector<MeasureJob> jobs;
  for (int i = 0; i < 6; ++i) {
    MeasureJob job = Job(10 + i, groups[i % 4]);
    job.plans.push_back({"q", std::string("{\"groups\":") + groups[(i + 1) % 4] + "}"});
    job.seed = 1 + i % 2;  // two sets of inputs, so references are computed ahead too
    jobs.push_back(std::move(job));
  }
  return jobs;
}

TEST(Sandbox, JobsSentSeveralAheadAnswerInOrderAndAlike) {
  const std::vector<MeasureJob> jobs = MixedJobs();
  Sandbox alone(std::chrono::seconds(60), FUSETUNE_BINARY);
  Sandbox windowed(std::chrono::seconds(60), FUSETUNE_BINARY);
  const std::vector<JobResult> expected = RunWindowed(alone, jobs, 0);
  const std::vector<JobResult> got = RunWindowed(windowed, jobs, 3);
  ASSERT_EQ(got.size(), jobs.size());
  int compiled = 0, expected_compiled = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    EXPECT_EQ(got[i].id, jobs[i].id);
    ASSERT_EQ(got[i].plans.size(), 2u);
    for (size_t p = 0; p < 2; ++p) {
      ASSERT_TRUE(got[i].plans[p].ok) << i << ": " << got[i].plans[p].reason;
      EXPECT_EQ(got[i].plans[p].name, jobs[i].plans[p].name);
      EXPECT_GT(got[i].plans[p].median_us, 0.0);
      // The same kernels on the same inputs: the same values, bit for bit.
      EXPECT_EQ(got[i].plans[p].max_abs_error, expected[i].plans[p].max_abs_error) << i;
    }
    compiled += got[i].reuse.kernels_compiled;
    expected_compiled += expected[i].reuse.kernels_compiled;
  }
  // Every kernel compiled once, counted by the job that first needed it or had it prepared.
  EXPECT_EQ(compiled, expected_compiled);
}

TEST(Sandbox, ACrashWhilePreparingAJobAheadFailsOnlyThatJob) {
  Inject inject("compile_crash:exp");
  Sandbox sandbox(std::chrono::seconds(60), FUSETUNE_BINARY);
  std::vector<MeasureJob> jobs;
  for (int64_t id = 1; id <= 6; ++id) jobs.push_back(Job(id, id == 3 ? kFusedExp : kUnfused));
  // Job 3's kernel crashes the child while job 1 or 2 runs, with jobs up to 5 held ahead.
  ExpectOnlyJobFailed(RunWindowed(sandbox, jobs, 3), jobs, 3, "signal");
}

TEST(Sandbox, AHangWhilePreparingAJobAheadFailsOnlyThatJob) {
  Inject inject("compile_hang:exp");
  Sandbox sandbox(std::chrono::seconds(5), FUSETUNE_BINARY);
  std::vector<MeasureJob> jobs;
  for (int64_t id = 1; id <= 5; ++id) jobs.push_back(Job(id, id == 2 ? kFusedExp : kUnfused));
  ExpectOnlyJobFailed(RunWindowed(sandbox, jobs, 3), jobs, 2, "timed out");
}

TEST(Sandbox, AJobThatHangsWithJobsAheadFailsOnlyItself) {
  Inject inject("hang:exp");
  Sandbox sandbox(std::chrono::seconds(5), FUSETUNE_BINARY);
  std::vector<MeasureJob> jobs;
  for (int64_t id = 1; id <= 4; ++id) jobs.push_back(Job(id, id == 1 ? kFusedExp : kUnfused));
  // Job 1 hangs while it is timed, holding jobs 2-4 ahead: they are run again in new children.
  ExpectOnlyJobFailed(RunWindowed(sandbox, jobs, 3), jobs, 1, "timed out");
}

TEST(Sandbox, OnlyTheGuiltyPlanOfAJobFails) {
  Inject inject("crash:exp");
  Sandbox sandbox(std::chrono::seconds(60), FUSETUNE_BINARY);
  MeasureJob job = Job(1, kUnfused);
  job.plans.push_back({"fused", std::string("{\"groups\":") + kFusedExp + "}"});
  JobResult r = sandbox.Run(job);
  ASSERT_EQ(r.plans.size(), 2u);
  EXPECT_TRUE(r.plans[0].ok) << r.plans[0].reason;
  EXPECT_FALSE(r.plans[1].ok);
}

}  // namespace
}  // namespace fusetune
