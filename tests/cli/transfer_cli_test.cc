// Transfer on a miss end to end: the dynamic seed tuned at two sequence lengths with real
// kernels, then `query` and `run --plan tuned` at a length the store has never seen.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/cli/run_command.h"

namespace fusetune {
namespace {

using testing::kFast;
using testing::RunFusetune;
using testing::TempDb;

const std::string kDynSeed = std::string(FUSETUNE_SOURCE_DIR) + "/examples/bmm_where_dyn.relay";

int StoredPlans(const TempDb& db) {
  auto dump = RunFusetune("cache export --db " + db.path());
  int n = 0;
  for (size_t at = 0; (at = dump.out.find("\"kind\":\"best_plan\"", at)) != std::string::npos; ++at)
    ++n;
  return n;
}

TEST(TransferCli, QueryAndRunAnswerAnUntunedLengthFromTheNearestTunedOne) {
  TempDb db("transfer_cli");
  auto tune =
      RunFusetune("tune --json --db " + db.path() + kFast + kDynSeed + " --dim x.1,y.1=32,56");
  ASSERT_EQ(tune.exit_code, 0) << tune.err;
  const int stored = StoredPlans(db);
  ASSERT_EQ(stored, 2);

  // 48 is nearer 56 (ratio 1.17) than 32 (1.5). (Not 64: there S equals the hidden size 64,
  // one symbol, so S=64 is another family.)
  auto query = RunFusetune("query --json --db " + db.path() + " " + kDynSeed + " --dim x.1,y.1=48");
  ASSERT_EQ(query.exit_code, 0) << query.err;
  auto j = nlohmann::json::parse(query.out);
  ASSERT_EQ(j["regions"].size(), 1u);
  const auto& region = j["regions"][0];
  EXPECT_EQ(region["cached"], false);
  ASSERT_TRUE(region["transferred_from"].is_string()) << query.out;
  EXPECT_NE(region["transferred_from"].get<std::string>().find("=56 (here 48)"), std::string::npos)
      << region["transferred_from"];
  EXPECT_TRUE(region["tuned_us"].is_null()) << "not measured at this size";
  EXPECT_FALSE(region["plan"].empty());

  auto table = RunFusetune("query --db " + db.path() + " " + kDynSeed + " --dim x.1,y.1=48");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("transferred"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("transferred, not measured at this size"), std::string::npos)
      << table.out;

  auto exact =
      RunFusetune("query --exact --db " + db.path() + " " + kDynSeed + " --dim x.1,y.1=48");
  EXPECT_EQ(exact.exit_code, 3) << exact.err;
  EXPECT_NE(exact.err.find("no stored plan"), std::string::npos) << exact.err;

  // Another thread count has nothing to transfer from.
  auto threads =
      RunFusetune("query --threads 2 --db " + db.path() + " " + kDynSeed + " --dim x.1,y.1=48");
  EXPECT_EQ(threads.exit_code, 3) << threads.err;

  // `run --plan tuned` runs the transferred plan and checks it against the reference.
  auto run = RunFusetune("run --plan tuned --json --repeat 2 --db " + db.path() + " " + kDynSeed +
                         " --dim x.1,y.1=48");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto ran = nlohmann::json::parse(run.out);
  EXPECT_EQ(ran["groups"], region["plan"]);
  EXPECT_EQ(ran["transferred_from"][0], region["transferred_from"]);
  EXPECT_EQ(ran["checked_against_reference"], true);
  EXPECT_LT(ran["max_abs_error"].get<double>(), 1e-3);
  auto run_exact = RunFusetune("run --plan tuned --exact --db " + db.path() + " " + kDynSeed +
                               " --dim x.1,y.1=48");
  EXPECT_EQ(run_exact.exit_code, 2) << run_exact.err;

  // Nothing of the transfer was stored.
  EXPECT_EQ(StoredPlans(db), stored);
}

std::string Dims(int s) { return " " + kDynSeed + " --dim x.1,y.1=" + std::to_string(s); }

TEST(TransferCli, WarmOnlyTuneTimesTheFamilysPlanAndStoresItAsMeasuredHere) {
  TempDb db("warm_only");
  ASSERT_EQ(
      RunFusetune("tune --db " + db.path() + kFast + kDynSeed + " --dim x.1,y.1=32,56").exit_code,
      0);
  auto warm = RunFusetune("tune --json --warm-only --db " + db.path() + kFast + Dims(48));
  ASSERT_EQ(warm.exit_code, 0) << warm.err;
  auto j = nlohmann::json::parse(warm.out);
  const auto& region = j["regions"][0];
  ASSERT_TRUE(region["warm_start"].is_object()) << warm.out;
  EXPECT_NE(region["warm_start"]["from"].get<std::string>().find("=56 (here 48)"),
            std::string::npos);
  EXPECT_EQ(region["warm_start"]["searched"], false);
  EXPECT_GT(region["warm_start"]["transferred_us"].get<double>(), 0);
  // Against greedy only: unfused is not timed (null, not a failure). A transferred plan that is
  // greedy's grouping is greedy on its schedules, one plan: one round, its check and its figure.
  const std::string decision = region["decision"].get<std::string>();
  EXPECT_NE(decision.find("greedy on its schedules, unfused not timed (--warm-only)"),
            std::string::npos)
      << decision;
  EXPECT_TRUE(region["unfused_us"].is_null()) << warm.out;
  EXPECT_GT(region["greedy_us"].get<double>(), 0);
  EXPECT_EQ(region["warm_start"]["rounds"].get<int>(),
            decision.find("tuned = greedy") != std::string::npos ? 1 : 2)
      << decision;
  // Nothing of the search was measured; it would have measured something.
  EXPECT_EQ(j["candidates_measured"], 0);
  EXPECT_GT(region["warm_start"]["search_candidates"].get<int>(), 0);
  EXPECT_TRUE(region["transferred_from"].is_null()) << "a measured plan, not a transferred one";
  EXPECT_GT(region["tuned_us"].get<double>(), 0);
  EXPECT_NE(region["decision"].get<std::string>().find("warm start from "), std::string::npos);

  // Stored as measured at this size: an exact answer now, with the figures of the warm start.
  auto exact = RunFusetune("query --exact --json --db " + db.path() + Dims(48));
  ASSERT_EQ(exact.exit_code, 0) << exact.err;
  auto q = nlohmann::json::parse(exact.out)["regions"][0];
  EXPECT_EQ(q["cached"], true);
  EXPECT_EQ(q["plan"], region["plan"]);
  EXPECT_DOUBLE_EQ(q["tuned_us"].get<double>(), region["tuned_us"].get<double>());
  EXPECT_EQ(q["decision"], region["decision"]);
  EXPECT_TRUE(q["unfused_us"].is_null()) << "stored as not timed";
  EXPECT_EQ(q["rounds"], region["rounds"]);
  EXPECT_EQ(StoredPlans(db), 3);
  auto ls =
      RunFusetune("cache show --db " + db.path() + " " + region["signature"].get<std::string>());
  EXPECT_NE(ls.out.find(" / - us"), std::string::npos) << ls.out << ls.err;

  // The table says how the tune began. The plan the warm start stored at 48 is a member now,
  // and the nearest one to 40.
  auto table = RunFusetune("tune --warm-only --db " + db.path() + kFast + Dims(40));
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("warm start from s1=48 (here 40)"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("0 measurements instead of the search's"), std::string::npos)
      << table.out;
}

TEST(TransferCli, AWarmOnlyTuneMeasuresLessThanAColdOne) {
  TempDb db("warm_vs_cold");
  ASSERT_EQ(RunFusetune("tune --db " + db.path() + kFast + Dims(56)).exit_code, 0);
  auto cold = RunFusetune("tune --json --cold --no-cache --db " + db.path() + kFast + Dims(48));
  ASSERT_EQ(cold.exit_code, 0) << cold.err;
  auto c = nlohmann::json::parse(cold.out);
  EXPECT_TRUE(c["regions"][0]["warm_start"].is_null());
  // The cold tune stored measurements at 48: a second store keeps the comparison fair.
  TempDb other("warm_vs_cold_2");
  ASSERT_EQ(RunFusetune("tune --db " + other.path() + kFast + Dims(56)).exit_code, 0);
  auto warm = RunFusetune("tune --json --warm-only --db " + other.path() + kFast + Dims(48));
  ASSERT_EQ(warm.exit_code, 0) << warm.err;
  auto w = nlohmann::json::parse(warm.out);
  const int cold_measured = c["candidates_measured"].get<int>();
  EXPECT_GT(cold_measured, 0);
  EXPECT_EQ(w["candidates_measured"], 0);
  // What the warm start skipped: the search's planned measurements (the schedule search's rounds
  // after them depend on measured times, so the cold tune measured at least as many).
  const int skipped = w["regions"][0]["warm_start"]["search_candidates"].get<int>();
  EXPECT_GT(skipped, 0);
  EXPECT_LE(skipped, cold_measured);
  // Both validated the same way: the warm one measured only its validation's rounds.
  EXPECT_LE(w["regions"][0]["rounds"].get<int>(), 9);
}

TEST(TransferCli, AWarmSearchMeasuresTheFamilysGroupsFirst) {
  TempDb db("warm_search");
  ASSERT_EQ(RunFusetune("tune --db " + db.path() + kFast + Dims(56)).exit_code, 0);
  auto warm = RunFusetune("tune --json --log-level debug --db " + db.path() + kFast + Dims(48));
  ASSERT_EQ(warm.exit_code, 0) << warm.err;
  auto j = nlohmann::json::parse(warm.out);
  const auto& ws = j["regions"][0]["warm_start"];
  ASSERT_TRUE(ws.is_object()) << warm.out;
  EXPECT_EQ(ws["searched"], true);
  EXPECT_GT(j["candidates_measured"].get<int>(), 0);
  EXPECT_GT(ws["search_candidates"].get<int>(), 0);
  EXPECT_LE(ws["search_candidates"].get<int>(), j["candidates_measured"].get<int>());
  EXPECT_NE(warm.err.find("measured first"), std::string::npos) << warm.err;
}

TEST(TransferCli, WarmStartNeverCrossesTargetsOrThreadCounts) {
  TempDb db("warm_cross");
  ASSERT_EQ(RunFusetune("tune --db " + db.path() + kFast + Dims(56)).exit_code, 0);
  // Another thread count: a cold search.
  auto threads =
      RunFusetune("tune --json --warm-only --threads 2 --db " + db.path() + kFast + Dims(48));
  ASSERT_EQ(threads.exit_code, 0) << threads.err;
  auto t = nlohmann::json::parse(threads.out);
  EXPECT_TRUE(t["regions"][0]["warm_start"].is_null());
  EXPECT_GT(t["candidates_measured"].get<int>(), 0);
  // The same plan under another target's fingerprint: a cold search too.
  TempDb moved("warm_cross_target");
  auto dump = RunFusetune("cache export --db " + db.path());
  ASSERT_EQ(dump.exit_code, 0) << dump.err;
  std::string other = dump.out;
  auto tj = nlohmann::json::parse(RunFusetune("query --json --db " + db.path() + Dims(56)).out);
  const std::string fp = tj["target"];
  for (size_t at = 0; (at = other.find(fp, at)) != std::string::npos; at += 9)
    other.replace(at, fp.size(), "other-cpu");
  const std::string path = db.path() + ".jsonl";
  { std::ofstream(path) << other; }
  ASSERT_EQ(RunFusetune("cache import --db " + moved.path() + " " + path).exit_code, 0);
  std::filesystem::remove(path);
  auto target_run = RunFusetune("tune --json --warm-only --db " + moved.path() + kFast + Dims(48));
  ASSERT_EQ(target_run.exit_code, 0) << target_run.err;
  auto x = nlohmann::json::parse(target_run.out);
  EXPECT_TRUE(x["regions"][0]["warm_start"].is_null());
  EXPECT_GT(x["candidates_measured"].get<int>(), 0);
}

TEST(TransferCli, ASizeThatEqualsAnotherTakesThePlanOfItsLooseFamily) {
  // At S=64 the sequence length equals the head size: another family than S=96's, whose
  // equalities it keeps. query and run answer from 96.
  TempDb db("loose");
  ASSERT_EQ(RunFusetune("tune --db " + db.path() + kFast + Dims(96)).exit_code, 0);
  auto query = RunFusetune("query --json --db " + db.path() + Dims(64));
  ASSERT_EQ(query.exit_code, 0) << query.err;
  auto region = nlohmann::json::parse(query.out)["regions"][0];
  ASSERT_TRUE(region["transferred_from"].is_string()) << query.out;
  EXPECT_EQ(region["transferred_from"], "s1=96 (here 64)");
  auto run = RunFusetune("run --plan tuned --json --repeat 2 --db " + db.path() + Dims(64));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto ran = nlohmann::json::parse(run.out);
  EXPECT_EQ(ran["checked_against_reference"], true);
  EXPECT_EQ(ran["groups"], region["plan"]);
  // A warm start from it too.
  auto warm = RunFusetune("tune --json --warm-only --db " + db.path() + kFast + Dims(64));
  ASSERT_EQ(warm.exit_code, 0) << warm.err;
  auto w = nlohmann::json::parse(warm.out)["regions"][0];
  ASSERT_TRUE(w["warm_start"].is_object()) << warm.out;
  EXPECT_EQ(w["warm_start"]["from"], "s1=96 (here 64)");
  // Not the other way: 64's equality does not hold at 80, which is S=96's family.
  TempDb only64("loose_64");
  ASSERT_EQ(RunFusetune("tune --db " + only64.path() + kFast + Dims(64)).exit_code, 0);
  auto refused = RunFusetune("query --db " + only64.path() + Dims(80));
  EXPECT_EQ(refused.exit_code, 3);
  // The miss says which tuned size did not carry over, and why.
  EXPECT_NE(refused.err.find("where 64 is two sizes here (80 and 64), so its plan does not carry "
                             "over"),
            std::string::npos)
      << refused.err;
  auto refused_json = RunFusetune("query --json --db " + only64.path() + Dims(80));
  EXPECT_EQ(nlohmann::json::parse(refused_json.out)["regions"][0]["transfer_refused"],
            "tuned at s0=12 s1=64, where 64 is two sizes here (80 and 64)");
}

}  // namespace
}  // namespace fusetune
