// `fusetune cache verify` end to end: a real tune into a real SQLite file, a plan planted in it
// through db::Cache, real kernels re-timed.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "db/cache.h"
#include "db/database.h"
#include "tests/cli/run_command.h"

namespace fusetune {
namespace {

using testing::RunFusetune;
using testing::TempDb;

const std::string kFast = " --repeat 3 --min-repeat-ms 5 ";

// A memory-bound chain of four element-wise ops over 16 MiB: fused, one pass over memory; unfused,
// four passes with three intermediate tensors written and read back. The gap (several times, not
// the seed's 1.6x) stays beyond the noise rule even when the test shares a loaded machine.
std::string Chain16MiB() {
  const std::string path =
      (std::filesystem::temp_directory_path() / "fusetune_cache_verify_chain.relay").string();
  std::ofstream(path) << "fn (%x: Tensor[(4194304,), float32]) {\n"
                         "  %0 = negative(%x);\n  %1 = abs(%0);\n  %2 = negative(%1);\n"
                         "  abs(%2)\n}\n";
  return path;
}

db::BestPlanRecord OnlyPlan(const std::string& path) {
  db::Database database(path);
  db::Cache store(database);
  auto plans = store.ListBestPlans();
  EXPECT_EQ(plans.size(), 1u);
  return plans.empty() ? db::BestPlanRecord{} : plans[0];
}

TEST(CacheVerifyCli, ReplacesAPlantedSlowerPlanAndKeepsAGoodOne) {
  TempDb db("cache_verify");
  const std::string graph = Chain16MiB();
  auto tune = RunFusetune("tune --local --json --db " + db.path() + kFast + graph);
  ASSERT_EQ(tune.exit_code, 0) << tune.err;
  const db::BestPlanRecord good = OnlyPlan(db.path());
  ASSERT_LT(good.groups.size(), 4u) << "expected a fused plan for this region";

  // Plant the unfused plan as if it had been the fastest.
  db::BestPlanRecord planted = good;
  planted.groups = {{{0}, ""}, {{1}, ""}, {{2}, ""}, {{3}, ""}};
  planted.chosen = "unfused";
  planted.tuned_us = planted.unfused_us = 1.0;
  planted.decision = "planted by the test";
  {
    db::Database database(db.path());
    db::Cache store(database);
    store.PutBestPlan(planted, "test: planted");
  }

  // Default timing: repeats long enough that their spread does not hide the difference.
  auto verify = RunFusetune("cache verify --json --db " + db.path() + " " + graph);
  ASSERT_EQ(verify.exit_code, 0) << verify.err;
  auto j = nlohmann::json::parse(verify.out);
  ASSERT_EQ(j.size(), 1u) << verify.out;
  EXPECT_EQ(j[0]["stored_chosen"], "unfused");
  EXPECT_EQ(j[0]["replaced"], true) << j[0].dump();
  EXPECT_EQ(j[0]["kept"], "greedy") << j[0]["decision"];
  EXPECT_NE(j[0]["decision"].get<std::string>().find("beyond noise"), std::string::npos);

  const db::BestPlanRecord now = OnlyPlan(db.path());
  EXPECT_EQ(now.chosen, "greedy");
  EXPECT_LT(now.groups.size(), 4u);
  EXPECT_EQ(now.decision.rfind("verify: ", 0), 0u) << now.decision;
  {
    db::Database database(db.path());
    db::Cache store(database);
    const auto replaced = store.ListReplacedPlans();
    ASSERT_GE(replaced.size(), 2u);  // the tuned plan by the planted one, then the planted one
    EXPECT_EQ(replaced[0].plan.chosen, "unfused");
    EXPECT_DOUBLE_EQ(replaced[0].plan.tuned_us, 1.0) << "the old figures are kept";
    EXPECT_EQ(replaced[0].plan.decision, "planted by the test");
    EXPECT_EQ(replaced[0].reason.rfind("verify: greedy ", 0), 0u) << replaced[0].reason;
  }

  // The plan now stored is the greedy one: verified again, it is kept and nothing is written.
  auto again = RunFusetune("cache verify --db " + db.path() + kFast + "--signature " +
                           good.key.region_signature.substr(0, 8));
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("kept"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("1 verified, 0 replaced"), std::string::npos) << again.out;
  const db::BestPlanRecord after = OnlyPlan(db.path());
  EXPECT_EQ(after.created_at, now.created_at);
  EXPECT_EQ(db::GroupsToJson(after.groups), db::GroupsToJson(now.groups));
}

TEST(CacheVerifyCli, NothingMatchingExitsThreeAndBadInputTwo) {
  TempDb db("cache_verify_none");
  const std::string graph = Chain16MiB();
  ASSERT_EQ(RunFusetune("tune --local --db " + db.path() + kFast + graph).exit_code, 0);
  auto none = RunFusetune("cache verify --signature zzzz --db " + db.path());
  EXPECT_EQ(none.exit_code, 3);
  EXPECT_NE(none.err.find("no stored plan matches"), std::string::npos) << none.err;
  auto both = RunFusetune("cache verify --signature ab --db " + db.path() + " " + graph);
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.err.find("not both"), std::string::npos) << both.err;
}

}  // namespace
}  // namespace fusetune
