// What the noise and shape issues build on: a replaced plan's figures are archived with when and
// why, plans are found by family, the newest plans come first, and the write-transaction helper
// leaves nothing of a call that throws. Each test reopens the file and finds everything there.
#include <stdexcept>

#include "db/cache.h"
#include "db/database.h"
#include "db/sqlite.h"
#include "db_test_util.h"

namespace fusetune::db {
namespace {

using testing::TempDir;

constexpr const char* kZen = "x86_64-zen5-avx512";

TEST(ReplacedPlans, PutBestPlanArchivesTheOldFiguresWithTheReason) {
  TempDir dir;
  std::string path = dir.File("c.db");
  BestPlanRecord first = testing::SamplePlan("r1", 100);
  first.margin = 0.95;
  first.decision = "tuned 1.05x over greedy";
  first.rounds = 5;
  BestPlanRecord second = testing::SamplePlan("r1", 120);
  second.chosen = "greedy";
  second.greedy_us = 110;
  second.created_at = first.created_at + 1000;
  int64_t before = NowMs();
  {
    Database db(path);
    Cache cache(db);
    cache.PutBestPlan(first);
    EXPECT_TRUE(cache.ListReplacedPlans().empty()) << "a first plan replaces nothing";
    cache.PutBestPlan(second, "re-validated: slower than greedy");
    cache.PutBestPlan(testing::SamplePlan("r2", 7));  // another key: nothing archived
  }
  Database db(path);
  Cache cache(db);
  EXPECT_EQ(cache.FindBestPlan(second.key)->chosen, "greedy");
  std::vector<ReplacedPlanRecord> replaced = cache.ListReplacedPlans();
  ASSERT_EQ(replaced.size(), 1u);
  const ReplacedPlanRecord& r = replaced[0];
  EXPECT_EQ(r.reason, "re-validated: slower than greedy");
  EXPECT_GE(r.replaced_at, before);
  EXPECT_EQ(r.plan.key, first.key);
  EXPECT_EQ(r.plan.groups, first.groups);
  EXPECT_EQ(r.plan.chosen, "tuned");
  EXPECT_EQ(r.plan.tuned_us, 100);
  EXPECT_EQ(r.plan.greedy_us, first.greedy_us);
  EXPECT_EQ(r.plan.unfused_us, first.unfused_us);
  EXPECT_EQ(r.plan.created_at, first.created_at);
  EXPECT_EQ(r.plan.margin, 0.95);
  EXPECT_EQ(r.plan.decision, "tuned 1.05x over greedy");
  EXPECT_EQ(r.plan.rounds, 5);
  EXPECT_EQ(cache.Stats().replaced_plans, 1);

  // A third plan: two archived, newest replacement first, with the default reason.
  cache.PutBestPlan(testing::SamplePlan("r1", 90));
  replaced = cache.ListReplacedPlans({.region_signature_prefix = "r1"});
  ASSERT_EQ(replaced.size(), 2u);
  EXPECT_EQ(replaced[0].reason, kReplacedByRetune);
  EXPECT_EQ(replaced[0].plan.chosen, "greedy");
  EXPECT_EQ(replaced[1].plan.tuned_us, 100);
  EXPECT_EQ(cache.ListReplacedPlans({.target_fingerprint = "other"}).size(), 0u);
  EXPECT_EQ(cache.ListReplacedPlans({.threads = 1, .search_version = 1, .limit = 1}).size(), 1u);

  // Deleting the plans keeps their history.
  EXPECT_EQ(cache.DeleteBestPlans({}), 2);
  EXPECT_EQ(cache.ListReplacedPlans().size(), 2u);
}

TEST(ReplacedPlans, AFailedPutArchivesNothing) {
  TempDir dir;
  Database db(dir.File("c.db"));
  Cache cache(db);
  cache.PutBestPlan(testing::SamplePlan("r1", 100));
  BestPlanRecord bad = testing::SamplePlan("r1", 50);
  bad.chosen = "fastest";  // fails its CHECK after the archive row was written
  EXPECT_THROW(cache.PutBestPlan(bad), StoreError);
  EXPECT_TRUE(cache.ListReplacedPlans().empty());
  EXPECT_EQ(cache.FindBestPlan(bad.key)->tuned_us, 100);
}

TEST(Families, FoundByFamilyTargetThreadsAndVersionOnly) {
  TempDir dir;
  std::string path = dir.File("c.db");
  {
    Database db(path);
    Cache cache(db);
    auto put = [&](const std::string& sig, const std::string& family, const std::string& target,
                   int threads, int version) {
      BestPlanRecord p = testing::SamplePlan(sig, 10, target);
      p.family_key = family;
      p.key.threads = threads;
      p.key.search_version = version;
      cache.PutBestPlan(p);
    };
    put("s256", "fam", kZen, 1, 1);
    put("s128", "fam", kZen, 1, 1);
    put("s512", "fam", kZen, 2, 1);    // another thread count
    put("s384", "fam", "arm", 1, 1);   // another target
    put("s192", "fam", kZen, 1, 2);    // another search version
    put("other", "fam2", kZen, 1, 1);  // another family
    put("nofamily", "", kZen, 1, 1);   // none known
  }
  Database db(path);
  Cache cache(db);
  std::vector<BestPlanRecord> family = cache.FindBestPlansByFamily("fam", kZen, 1, 1);
  ASSERT_EQ(family.size(), 2u);
  EXPECT_EQ(family[0].key.region_signature, "s128");
  EXPECT_EQ(family[1].key.region_signature, "s256");
  EXPECT_EQ(family[0].family_key, "fam");
  EXPECT_EQ(cache.FindBestPlansByFamily("fam", kZen, 2, 1).size(), 1u);
  EXPECT_EQ(cache.FindBestPlansByFamily("fam", "arm", 1, 1).size(), 1u);
  EXPECT_EQ(cache.FindBestPlansByFamily("fam", kZen, 1, 2).size(), 1u);
  EXPECT_TRUE(cache.FindBestPlansByFamily("fa", kZen, 1, 1).empty()) << "whole keys only";
  EXPECT_TRUE(cache.FindBestPlansByFamily("", kZen, 1, 1).empty()) << "'' names no family";
}

TEST(BestPlans, NewestFirstByCreationTime) {
  TempDir dir;
  Database db(dir.File("c.db"));
  Cache cache(db);
  for (int i = 0; i < 5; ++i) {
    BestPlanRecord p = testing::SamplePlan("r" + std::to_string(i), 1);
    p.created_at = 1000 + (i * 7) % 5;  // 1000, 1002, 1004, 1001, 1003
    cache.PutBestPlan(p);
  }
  std::vector<BestPlanRecord> newest = cache.ListBestPlans({.limit = 3, .newest_first = true});
  ASSERT_EQ(newest.size(), 3u);
  EXPECT_EQ(newest[0].key.region_signature, "r2");
  EXPECT_EQ(newest[1].key.region_signature, "r4");
  EXPECT_EQ(newest[2].key.region_signature, "r1");
}

// The helper every write of the cache and the job queue goes through.
TEST(WriteTransaction, AThrowingCallLeavesNothingAndTheNextOneCommits) {
  TempDir dir;
  std::string path = dir.File("c.db");
  {
    Database db(path);
    EXPECT_THROW(db.WriteTransaction([](Connection& conn) {
      conn.Exec(
          "INSERT INTO targets (fingerprint, cpu, triple, features, cores, peak_gflops, "
          "bandwidth_gbs, measured_at) VALUES ('half', '', '', '', 1, 1, 1, 1)");
      throw std::runtime_error("failed after the first statement");
    }),
                 std::runtime_error);
    int64_t written = db.WriteTransaction([](Connection& conn) {
      conn.Exec(
          "INSERT INTO targets (fingerprint, cpu, triple, features, cores, peak_gflops, "
          "bandwidth_gbs, measured_at) VALUES ('whole', '', '', '', 1, 1, 1, 1)");
      return conn.Changes();
    });
    EXPECT_EQ(written, 1);
    // The connection is not left inside a transaction: a read sees the committed row.
    Cache cache(db);
    EXPECT_TRUE(cache.FindTarget("whole"));
  }
  Database db(path);
  Cache cache(db);
  EXPECT_FALSE(cache.FindTarget("half"));
  EXPECT_TRUE(cache.FindTarget("whole"));
  EXPECT_EQ(cache.Stats().targets, 1);
}

}  // namespace
}  // namespace fusetune::db
