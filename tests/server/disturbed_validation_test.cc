// A real disturbance: busy sibling threads spin on the measuring process's CPU during one
// validation round, with real kernels timed in the sandbox child (as `tune --local` does). The
// stored plan is the undisturbed run's. tuner_test.cc has the simulated counterpart, where one
// round's figures of a single plan are tripled.
//
// What makes it deterministic: the test's thread, the sandbox child it starts and the spinners
// share one CPU (affinity is inherited), so the disturbed round runs at a third of the CPU; the
// region (a memory-bound chain) has a fused plan several times faster than its unfused one, so the
// undisturbed decision does not depend on the machine's load; and the disturbed run reuses the
// undisturbed run's candidate measurements, so the two runs validate the same plans and differ
// only by the disturbance.
#include <sched.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include "db/cache.h"
#include "db/database.h"
#include "ir/text/relay_parser.h"
#include "server/tuner.h"
#include "server/validation.h"
#include "worker/codegen/target.h"
#include "worker/sandbox.h"

namespace fusetune {
namespace {

const char* kChain4MiB =
    "fn (%x: Tensor[(1048576,), float32]) {\n"
    "  %0 = negative(%x);\n  %1 = abs(%0);\n  %2 = negative(%1);\n  abs(%2)\n}\n";

bool IsValidationJob(const MeasureJob& job) {
  for (const JobPlan& p : job.plans)
    if (p.name != "tuned" && p.name != "greedy" && p.name != "unfused") return false;
  return true;
}

// Jobs in the sandbox child of the fusetune binary, as LocalBackend runs them; the validation job
// numbered `disturbed_round` (from 1) runs while `spinners` threads spin.
class SpinningBackend : public MeasurementBackend {
 public:
  int disturbed_round = 0;
  int spinners = 2;
  std::vector<JobResult> validation;  // every validation job's answer, in order
  int disturbed_index = -1;           // its index in `validation`

  std::string TargetFingerprint() override { return codegen::HostTarget().Fingerprint(); }
  std::vector<JobResult> RunJobs(const std::vector<MeasureJob>& jobs,
                                 const std::function<void(size_t)>& on_done) override {
    std::vector<JobResult> out;
    for (const MeasureJob& job : jobs) {
      const bool is_validation = IsValidationJob(job);
      const bool disturb =
          is_validation && static_cast<int>(validation.size()) + 1 == disturbed_round;
      std::atomic<bool> stop{false};
      std::vector<std::thread> busy;
      if (disturb)
        for (int i = 0; i < spinners; ++i)
          busy.emplace_back([&stop] {
            volatile uint64_t x = 0;
            while (!stop.load(std::memory_order_relaxed)) x = x * 6364136223846793005u + 1;
          });
      out.push_back(sandbox_.Run(job));
      stop = true;
      for (std::thread& t : busy) t.join();
      if (is_validation) {
        if (disturb) disturbed_index = static_cast<int>(validation.size());
        validation.push_back(out.back());
      }
      if (on_done) on_done(out.size());
    }
    return out;
  }

 private:
  Sandbox sandbox_{std::chrono::seconds(120), FUSETUNE_BINARY};
};

// Pins the calling thread (and so what it starts) to one CPU for the life of the object.
class PinnedToOneCpu {
 public:
  PinnedToOneCpu() {
    sched_getaffinity(0, sizeof(old_), &old_);
    int cpu = 0;
    while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &old_)) ++cpu;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    ok_ = sched_setaffinity(0, sizeof(one), &one) == 0;
  }
  ~PinnedToOneCpu() { sched_setaffinity(0, sizeof(old_), &old_); }
  bool ok() const { return ok_; }

 private:
  cpu_set_t old_;
  bool ok_ = false;
};

// The stored plan's grouping: which nodes share a kernel. Its schedules are left out: the searched
// schedule of the fused chain and greedy's default tie within noise (1.00x), so which of the two
// the validation keeps is the machine's coin toss, disturbed or not; fused against unfused is not.
std::string StoredGrouping(db::Cache& store) {
  const auto plans = store.ListBestPlans();
  if (plans.size() != 1) return "none";
  std::string out;
  for (const db::StoredGroup& g : plans[0].groups)
    out += fmt::format("[{}]", fmt::join(g.nodes, ","));
  return out;
}

double PlanUs(const JobResult& r, const std::string& name) {
  for (const PlanResult& p : r.plans)
    if (p.name == name && p.ok) return p.median_us;
  return 0;
}

TEST(DisturbedValidation, BusyThreadsDuringOneRealRoundDoNotChangeTheStoredPlan) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / fmt::format("fusetune_disturbed_{}", ::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string base = (dir / "base.db").string(), disturbed = (dir / "disturbed.db").string();
  PinnedToOneCpu pin;
  ASSERT_TRUE(pin.ok());
  const Graph g = ParseRelay(kChain4MiB, "chain.relay");
  TuneOptions options;

  std::string undisturbed_plan;
  int undisturbed_rounds = 0;
  {
    db::Database database(base);
    db::Cache store(database);
    SpinningBackend backend;
    const TuneReport r = Tune(g, options, store, backend);
    ASSERT_EQ(r.regions.size(), 1u);
    undisturbed_plan = StoredGrouping(store);
    undisturbed_rounds = r.regions[0].rounds;
    ASSERT_EQ(undisturbed_plan, "[0,1,2,3]") << "the chain fused is several times faster";
    ASSERT_GE(static_cast<int>(backend.validation.size()), kMinRounds);
    // The measurements stay; the plan goes, so the next run searches and validates again.
    store.DeleteBestPlans({});
  }
  std::filesystem::copy_file(base, disturbed);

  db::Database database(disturbed);
  db::Cache store(database);
  SpinningBackend backend;
  backend.disturbed_round = 2;
  const TuneReport r = Tune(g, options, store, backend);
  ASSERT_EQ(r.regions.size(), 1u);
  EXPECT_EQ(r.candidates_measured, 0) << "the candidates were measured by the undisturbed run";
  EXPECT_EQ(StoredGrouping(store), undisturbed_plan) << r.regions[0].decision;
  EXPECT_LE(r.regions[0].rounds, kMaxRounds);
  EXPECT_GE(r.regions[0].rounds, std::min(undisturbed_rounds, kMinRounds));

  // The premise: the disturbed round was slowed, beyond the other rounds' spread, for some plan.
  ASSERT_GE(backend.disturbed_index, 0);
  const JobResult& hit = backend.validation[backend.disturbed_index];
  double worst = 0;
  for (const PlanResult& p : hit.plans) {
    std::vector<double> others;
    for (size_t i = 0; i < backend.validation.size(); ++i)
      if (static_cast<int>(i) != backend.disturbed_index)
        if (double us = PlanUs(backend.validation[i], p.name); us > 0) others.push_back(us);
    ASSERT_FALSE(others.empty());
    std::sort(others.begin(), others.end());
    worst = std::max(worst, p.median_us / others[others.size() / 2]);
  }
  EXPECT_GT(worst, 1.3) << "the spinning threads did not slow the round: the test tested nothing";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fusetune
