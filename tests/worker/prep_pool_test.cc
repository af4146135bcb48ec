// Work ahead of timing: the pool runs tasks on the cores a timing leaves free and never on the
// timing's own; the job runner's kernels compiled ahead are exactly the ones each plan needs (its
// schedule, target and thread count), and the results they give agree with the reference.
#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "ir/fusion.h"
#include "ir/plan.h"
#include "ir/text/relay_parser.h"
#include "worker/codegen/target.h"
#include "worker/job_runner.h"
#include "worker/kernel_cache.h"
#include "worker/prep_pool.h"

namespace fusetune {
namespace {

using namespace std::chrono_literals;

// Tasks of ~20 ms each; the most that ran at once.
int MostAtOnce(PrepPool& pool, int tasks) {
  std::atomic<int> running{0}, most{0};
  std::vector<std::shared_future<void>> done;
  for (int i = 0; i < tasks; ++i) {
    done.push_back(pool.Submit([&] {
      int now = ++running;
      int seen = most.load();
      while (now > seen && !most.compare_exchange_weak(seen, now)) {
      }
      std::this_thread::sleep_for(20ms);
      --running;
    }));
  }
  for (auto& d : done) d.get();
  return most.load();
}

TEST(PrepPool, UsesEveryCoreWhileNothingIsTimed) {
  PrepPool pool(2);
  EXPECT_EQ(MostAtOnce(pool, 6), 2);
}

TEST(PrepPool, CountsTheCoresLeftIdleWhileAThreadWaits) {
  PrepPool pool(2);
  // One task while the caller waits: one core of two idle for its 100 ms.
  pool.Wait(pool.Submit([] { std::this_thread::sleep_for(100ms); }));
  const double alone = pool.idle_core_ms();
  EXPECT_GE(alone, 80.0);
  EXPECT_LE(alone, 400.0);
  // Two at once: no core idle while the caller waits for the first.
  std::shared_future<void> first = pool.Submit([] { std::this_thread::sleep_for(100ms); });
  std::shared_future<void> second = pool.Submit([] { std::this_thread::sleep_for(100ms); });
  pool.Wait(first);
  pool.Wait(second);
  EXPECT_LE(pool.idle_core_ms() - alone, 40.0);
}

TEST(PrepPool, LeavesATimingItsCores) {
  PrepPool pool(2);
  {
    PrepPool::Timing timing(pool, 1);  // one core timed: one task at a time
    EXPECT_EQ(MostAtOnce(pool, 4), 1);
  }
  std::atomic<bool> ran{false};
  std::shared_future<void> done;
  {
    PrepPool::Timing timing(pool, 2);  // every core timed: no task starts
    done = pool.Submit([&] { ran = true; });
    std::this_thread::sleep_for(50ms);
    EXPECT_FALSE(ran.load());
  }
  done.get();  // and runs once the timing ends
  EXPECT_TRUE(ran.load());
}

TEST(PrepPool, ATimingWaitsForTasksOnItsCores) {
  PrepPool pool(1);
  std::atomic<bool> finished{false};
  pool.Submit([&] {
    std::this_thread::sleep_for(100ms);
    finished = true;
  });
  std::this_thread::sleep_for(20ms);  // the task is running
  PrepPool::Timing timing(pool, 1);
  EXPECT_TRUE(finished.load());
}

TEST(PrepPool, ATimingOfEveryCoreFirstFinishesTheQueueOnEveryCore) {
  PrepPool pool(2);
  PrepPool::Foreground job(pool, 2);
  std::atomic<int> done{0};
  for (int i = 0; i < 4; ++i)
    pool.Submit([&] {
      std::this_thread::sleep_for(30ms);
      ++done;
    });
  {
    PrepPool::Timing timing(pool, 2);
    EXPECT_EQ(done.load(), 4);  // the jobs sent ahead are compiled before it, not between timings
  }
  EXPECT_EQ(pool.max_running_seen(), 2);
  // A timing that leaves a core free does not wait for the queue: it compiles beside it.
  std::atomic<int> started{0};  // before the pool, which outlives its tasks
  PrepPool two(2);
  for (int i = 0; i < 4; ++i)
    two.Submit([&] {
      ++started;
      std::this_thread::sleep_for(100ms);
    });
  std::this_thread::sleep_for(20ms);
  PrepPool::Timing timing(two, 1);
  EXPECT_LT(started.load(), 4);
}

TEST(PrepPool, AJobOfEveryCoreStartsTasksOnlyWhileItWaits) {
  PrepPool pool(2);
  PrepPool::Foreground job(pool, 2);  // its check runs on both cores
  std::atomic<bool> ran{false};
  std::shared_future<void> done = pool.Submit([&] { ran = true; });
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(ran.load());
  pool.Wait(done);  // now it waits: every core takes tasks
  EXPECT_TRUE(ran.load());
}

TEST(PrepPool, WithoutThreadsRunsTasksInPlace) {
  PrepPool pool(0);
  bool ran = false;
  pool.Submit([&] { ran = true; });
  EXPECT_TRUE(ran);
}

TEST(PrepPool, AFailedTaskReportsItsError) {
  PrepPool pool(2);
  auto done = pool.Submit([] { throw std::runtime_error("no"); });
  EXPECT_THROW(done.get(), std::runtime_error);
}

const char* kSubExp =
    "fn (%x: Tensor[(48, 40), float32], %y: Tensor[(48, 40), float32]) {\n"
    "  %0 = subtract(%x, %y);\n  exp(%0)\n}";

MeasureJob Job(int64_t id, int threads, std::vector<std::string> schedules) {
  MeasureJob job;
  job.id = id;
  job.graph_text = kSubExp;
  job.threads = threads;
  for (const std::string& s : schedules)
    job.plans.push_back({s, R"({"groups":[{"nodes":["%0","%1"],"schedule":")" + s + R"("}]})"});
  job.timing.warmup = 1;
  job.timing.repeat = 3;
  job.timing.min_repeat_ms = 1;
  return job;
}

std::string Key(const Graph& g, const std::string& schedule, int threads) {
  const std::vector<ValueId> nodes = {2, 3};
  FusedGroup group = *AnalyzeGroup(g, nodes);
  return KernelKey(g, group, Schedule::Parse(schedule), codegen::HostTarget().Fingerprint(),
                   threads, 3);
}

TEST(JobRunner, KernelsCompiledAheadAreTheOnesOfTheirScheduleAndTarget) {
  JobRunner runner(2);
  Graph g = ParseRelay(kSubExp, "test");
  ASSERT_EQ(g.value(2).op->name, "subtract");
  MeasureJob first = Job(1, 1, {"vector=8", "vector=4"});
  runner.Prepare(first);
  JobResult r = runner.Run(first);
  ASSERT_EQ(r.plans.size(), 2u);
  for (const PlanResult& p : r.plans) EXPECT_TRUE(p.ok) << p.name << ": " << p.reason;
  EXPECT_EQ(r.reuse.kernels_compiled, 2);
  EXPECT_TRUE(runner.kernels().Contains(Key(g, "vector=8", 1)));
  EXPECT_TRUE(runner.kernels().Contains(Key(g, "vector=4", 1)));
  EXPECT_FALSE(runner.kernels().Contains(Key(g, "vector=8", 2)));
  EXPECT_FALSE(runner.kernels().Contains(Key(g, "vector=16", 1)));
  EXPECT_EQ(runner.kernels().size(), 2u);
  // Another thread count is another kernel, compiled ahead under its own key; a schedule already
  // compiled is found.
  MeasureJob second = Job(2, 2, {"vector=8"});
  MeasureJob third = Job(3, 1, {"vector=4", "vector=16"});
  runner.Prepare(second);
  runner.Prepare(third);
  JobResult r2 = runner.Run(second);
  ASSERT_TRUE(r2.plans.at(0).ok) << r2.plans[0].reason;
  EXPECT_EQ(r2.reuse.kernels_compiled, 1);
  EXPECT_TRUE(runner.kernels().Contains(Key(g, "vector=8", 2)));
  JobResult r3 = runner.Run(third);
  for (const PlanResult& p : r3.plans) EXPECT_TRUE(p.ok) << p.name << ": " << p.reason;
  EXPECT_EQ(r3.reuse.kernels_compiled, 1);
  EXPECT_EQ(r3.reuse.kernels_reused, 1);
  EXPECT_EQ(runner.kernels().size(), 4u);
  EXPECT_EQ(r3.plans[0].max_abs_error, r.plans[1].max_abs_error);  // the same vector=4 kernel
}

TEST(JobRunner, AKernelThatCannotCompileFailsOnlyItsPlan) {
  JobRunner runner(2);
  MeasureJob job = Job(1, 1, {"vector=8", "vector=3"});  // 3 lanes: not a vector width
  runner.Prepare(job);
  JobResult r = runner.Run(job);
  ASSERT_EQ(r.plans.size(), 2u);
  EXPECT_TRUE(r.plans[0].ok) << r.plans[0].reason;
  EXPECT_FALSE(r.plans[1].ok);
  EXPECT_NE(r.plans[1].reason.find("compile error"), std::string::npos) << r.plans[1].reason;
}

TEST(JobRunner, NoPlanIsTimedWhileAnotherPlanOfItsJobCompiles) {
  // Two plans of a dense and an exp (unfused: two kernels; fused: one): the job waits for all
  // three kernels before it runs its first plan, so no plan waits for a compile of its own.
  JobRunner runner(2);
  MeasureJob job;
  job.id = 1;
  job.graph_text =
      "fn (%x: Tensor[(64, 96), float32], %w: Tensor[(80, 96), float32]) {\n"
      "  %0 = nn.dense(%x, %w);\n  exp(%0)\n}";
  job.plans.push_back({"unfused", R"({"groups":[{"nodes":["%0"]},{"nodes":["%1"]}]})"});
  job.plans.push_back({"fused", R"({"groups":[{"nodes":["%0","%1"]}]})"});
  job.timing.warmup = 1;
  job.timing.repeat = 3;
  job.timing.min_repeat_ms = 1;
  runner.Prepare(job);
  JobResult r = runner.Run(job);
  ASSERT_EQ(r.plans.size(), 2u);
  for (const PlanResult& p : r.plans) ASSERT_TRUE(p.ok) << p.name << ": " << p.reason;
  EXPECT_EQ(r.reuse.kernels_compiled, 3);
  EXPECT_GT(r.phases.compile_ms, 0.0);
  // Before this rule, the unfused plan waited here for its dense kernel (most of the job's
  // compile time) and was timed while the fused kernel compiled on the other core.
  for (const PlanResult& p : r.plans)
    EXPECT_LT(p.compile_ms, 0.2 * r.phases.compile_ms)
        << p.name << ": " << p.compile_ms << " of " << r.phases.compile_ms << " ms";
}

TEST(JobRunner, AJobTimedAloneLetsNothingCompileBesideItsTiming) {
  // The next job (a dense: an O3 compile of tens of ms) is prepared ahead; the first job, a
  // 1-thread sub/exp timed in a few ms, leaves a core free. Timed alone, it first lets the queued
  // compile finish, so by its end the dense's kernel is there; timed as usual, the compile runs
  // beside the timing and is still running when the short job ends.
  JobRunner runner(2);
  MeasureJob first = Job(1, 1, {"vector=8"});
  first.alone = true;
  MeasureJob next;
  next.id = 2;
  next.graph_text =
      "fn (%x: Tensor[(64, 96), float32], %w: Tensor[(80, 96), float32]) {\n"
      "  nn.dense(%x, %w)\n}";
  next.plans.push_back({"dense", R"({"groups":[{"nodes":["%0"]}]})"});
  next.timing = first.timing;
  runner.Prepare(first);
  const JobResult warm = runner.Run(first);  // the first job's own kernel compiled and timed
  ASSERT_TRUE(warm.plans.at(0).ok) << warm.plans[0].reason;
  runner.Prepare(next);
  const size_t before = runner.kernels().size();
  const JobResult r = runner.Run(first);
  ASSERT_TRUE(r.plans.at(0).ok) << r.plans[0].reason;
  EXPECT_EQ(runner.kernels().size(), before + 1) << "the dense compiled before the timing";
  const JobResult dense = runner.Run(next);
  ASSERT_TRUE(dense.plans.at(0).ok) << dense.plans[0].reason;
  EXPECT_EQ(dense.reuse.kernels_compiled, 1);
}

}  // namespace
}  // namespace fusetune
