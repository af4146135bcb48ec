// `serve --verify-idle`: an idle farm's worker re-checks stored plans. A plan planted slower than
// its greedy baseline is replaced and archived; a good plan is left as stored, marked verified.
// Real serve and worker processes, real kernels, the store read back through db::Cache.
#include <fmt/format.h>

#include "db/cache.h"
#include "db/database.h"
#include "db/job_queue.h"
#include "service_test_util.h"

namespace fusetune::testing {
namespace {

// A memory-bound chain of four element-wise ops over 16 MiB (as tests/cli/cache_verify_cli_test):
// fused, one pass over memory; unfused, four. The gap stays beyond the noise rule under load.
const char* kChain16MiB =
    "fn (%x: Tensor[(4194304,), float32]) {\n"
    "  %0 = negative(%x);\n  %1 = abs(%0);\n  %2 = negative(%1);\n  abs(%2)\n}\n";

std::vector<db::BestPlanRecord> Plans(const std::string& path) {
  db::Database database(path);
  db::Cache cache(database);
  return cache.ListBestPlans();
}

std::vector<db::ReplacedPlanRecord> Replaced(const std::string& path) {
  db::Database database(path);
  db::Cache cache(database);
  return cache.ListReplacedPlans();
}

// Tunes the chain locally into `db` (same machine: the worker's target) and returns its plan. On
// default schedules only: the fused chain is then greedy's own plan, not a schedule of the same
// speed that a loaded machine could time either side of greedy in the tune or in the re-check.
db::BestPlanRecord TuneChain(const TestDir& dir, const std::string& db) {
  const std::string graph = dir.Write("chain16.relay", kChain16MiB);
  CommandResult tune =
      RunFusetune(dir,
                  {"tune", "--local", "--db", db, "--repeat", "3", "--min-repeat-ms", "5",
                   "--schedules", "1", "--schedule-budget", "0", graph},
                  {}, std::chrono::seconds(180));
  EXPECT_EQ(tune.exit_code, 0) << tune.err;
  std::vector<db::BestPlanRecord> plans = Plans(db);
  EXPECT_EQ(plans.size(), 1u);
  return plans.empty() ? db::BestPlanRecord{} : plans[0];
}

std::vector<std::string> VerifyingServe() {
  return {"--verify-idle", "--verify-idle-quiet-ms", "200"};
}

TEST(IdleVerification, APlantedSlowerPlanIsReplacedByTheBaselineAndArchived) {
  TestDir dir;
  const std::string db = dir.File("farm.db");
  const db::BestPlanRecord good = TuneChain(dir, db);
  ASSERT_LT(good.groups.size(), 4u) << "expected a fused plan for this region";
  ASSERT_FALSE(good.verified_at.has_value());

  // Plant the unfused plan as if it had won.
  db::BestPlanRecord planted = good;
  planted.groups = {{{0}, ""}, {{1}, ""}, {{2}, ""}, {{3}, ""}};
  planted.chosen = "unfused";
  planted.tuned_us = planted.unfused_us = 1.0;
  planted.decision = "planted by the test";
  {
    db::Database database(db);
    db::Cache cache(database);
    cache.PutBestPlan(planted, "test: planted");
  }

  ServerProcess server(dir, db, VerifyingServe());
  Process worker({"worker", "--server", server.address(), "--id", "w1"}, dir.File("w1"));
  const bool replaced = Eventually(
      [&] {
        std::vector<db::BestPlanRecord> plans = Plans(db);
        return plans.size() == 1 && plans[0].chosen != "unfused";
      },
      std::chrono::seconds(240));
  ASSERT_TRUE(replaced) << server.process().Err() << worker.Err();

  const db::BestPlanRecord now = Plans(db).at(0);
  EXPECT_EQ(now.chosen, "greedy");
  EXPECT_LT(now.groups.size(), 4u);
  EXPECT_EQ(now.decision.rfind("verify: ", 0), 0u) << now.decision;
  EXPECT_NE(now.decision.find("beyond noise"), std::string::npos) << now.decision;
  ASSERT_TRUE(now.verified_at.has_value()) << "a replacement records when it was verified";
  EXPECT_GT(now.rounds.value_or(0), 0);
  const std::vector<db::ReplacedPlanRecord> replaced_rows = Replaced(db);
  ASSERT_GE(replaced_rows.size(), 2u);  // the tuned plan by the planted one, then the planted one
  EXPECT_EQ(replaced_rows[0].plan.chosen, "unfused");
  EXPECT_DOUBLE_EQ(replaced_rows[0].plan.tuned_us, 1.0) << "the old figures are kept";
  EXPECT_EQ(replaced_rows[0].plan.decision, "planted by the test");
  EXPECT_EQ(replaced_rows[0].reason.rfind("verify: greedy ", 0), 0u) << replaced_rows[0].reason;

  // The worker measured it, through ordinary jobs of no task: no task row was made.
  EXPECT_FALSE(JobsRun(worker.Err()).empty()) << worker.Err();
  db::Database database(db);
  db::JobQueue queue(database);
  EXPECT_EQ(queue.CountTasks().total(), 0);
  EXPECT_NE(server.process().Err().find("idle verification: region "), std::string::npos);
}

TEST(IdleVerification, APlanThatHoldsIsLeftAsStoredAndMarkedVerified) {
  TestDir dir;
  const std::string db = dir.File("farm.db");
  db::BestPlanRecord good = TuneChain(dir, db);
  // The plan to hold is greedy's own, the four ops in one kernel. A tune under the suite's load can
  // keep another grouping within noise of it; the verifier is under test here, not the tune, so
  // greedy's plan is then stored in its place.
  if (good.chosen != "greedy") {
    good.groups = {{{0, 1, 2, 3}, ""}};
    good.chosen = "greedy";
    db::Database database(db);
    db::Cache cache(database);
    cache.PutBestPlan(good, "test: greedy's plan");
    good = cache.ListBestPlans().at(0);
  }
  ASSERT_EQ(good.chosen, "greedy");
  const size_t archived = Replaced(db).size();

  ServerProcess server(dir, db, VerifyingServe());
  Process worker({"worker", "--server", server.address(), "--id", "w1"}, dir.File("w1"));
  const bool verified = Eventually(
      [&] {
        std::vector<db::BestPlanRecord> plans = Plans(db);
        return plans.size() == 1 && plans[0].verified_at.has_value();
      },
      std::chrono::seconds(240));
  ASSERT_TRUE(verified) << server.process().Err() << worker.Err();
  EXPECT_NE(server.process().Err().find("kept"), std::string::npos) << server.process().Err();

  const db::BestPlanRecord now = Plans(db).at(0);
  EXPECT_EQ(db::GroupsToJson(now.groups), db::GroupsToJson(good.groups));
  EXPECT_EQ(now.chosen, good.chosen);
  EXPECT_EQ(now.created_at, good.created_at);
  EXPECT_EQ(now.decision, good.decision);
  EXPECT_EQ(now.tuned_us, good.tuned_us) << "a plan kept keeps its figures";
  EXPECT_EQ(Replaced(db).size(), archived);

  // Verified once: not again within --verify-idle-every (24 h), however long the farm idles.
  const int64_t when = *now.verified_at;
  std::this_thread::sleep_for(std::chrono::seconds(2));
  EXPECT_EQ(Plans(db).at(0).verified_at, when);
}

}  // namespace
}  // namespace fusetune::testing
