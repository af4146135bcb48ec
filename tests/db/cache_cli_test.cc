// `fusetune cache ...` against files written through the Cache: the built binary is run as a user
// would run it.
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "db/schema.h"
#include "db_test_util.h"

namespace fusetune::db {
namespace {

using testing::Key;
using testing::TempDir;

struct CliRun {
  int exit_code;
  std::string out, err;
};

CliRun Fusetune(const TempDir& dir, const std::string& args) {
  std::string out = dir.File("out.txt"), err = dir.File("err.txt");
  std::string cmd = std::string(FUSETUNE_BINARY) + " " + args + " >" + out + " 2>" + err;
  int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, testing::ReadBytes(out),
          testing::ReadBytes(err)};
}

CacheStats StatsOf(const std::string& path) {
  Database database(path);
  return Cache(database).Stats();
}

void Fill(Cache& store) {
  store.PutTarget(testing::SampleTarget());
  store.PutMeasurements({testing::OkMeasurement(Key("g1"), 5)});
  store.PutMeasurements({testing::InvalidMeasurement(Key("g2"), "crash")});
  BestPlanRecord a = testing::SamplePlan("aaaa1111bbbb2222cccc3333dddd4444", 100);
  a.region_text = "in p0: Tensor[(4,), float32]\nn0 = exp(p0)\nout n0";
  store.PutBestPlan(a);
  BestPlanRecord b = testing::SamplePlan("ffff0000", 30);
  b.ops = {"nn.softmax"};
  b.chosen = "greedy";
  b.greedy_us = 25;
  store.PutBestPlan(b);
}

TEST(CacheCli, LsOnAMissingFileCreatesNothing) {
  TempDir dir;
  std::string db = dir.File("none.db");
  CliRun r = Fusetune(dir, "cache ls --db " + db);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("no cache at " + db), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(db));
}

TEST(CacheCli, LsTableJsonAndFilters) {
  TempDir dir;
  std::string db = dir.File("c.db");
  {
    Database database(db);
    Cache store(database);
    Fill(store);
  }
  CliRun r = Fusetune(dir, "cache ls --db " + db);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("aaaa1111bbbb2222 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1.50x"), std::string::npos) << r.out;  // min(greedy, unfused) / tuned
  EXPECT_NE(r.out.find("nn.batch_matmul,ones_like,where"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2 plans shown; the cache holds 2 best plans, 2 measurements (1 invalid), "
                       "1 target with a calibrated roofline"),
            std::string::npos)
      << r.out;

  r = Fusetune(dir, "cache ls --json --op nn.softmax --db " + db);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["plans"].size(), 1u);
  EXPECT_EQ(j["plans"][0]["signature"], "ffff0000");
  EXPECT_EQ(j["plans"][0]["chosen"], "greedy");
  EXPECT_EQ(j["plans"][0]["greedy_us"], 25.0);
  EXPECT_EQ(j["plans"][0]["groups"][1]["positions"], nlohmann::json::array({1, 2}));
  EXPECT_EQ(j["measurements"]["invalid"], 1);
  EXPECT_EQ(j["schema"], kLatestSchemaVersion);
}

// The TARGET column names the CPU (the triple is the same on every x86 Linux host), and what it
// shows is what --target takes.
TEST(CacheCli, LsShowsTheTargetsCpuAndFiltersByIt) {
  TempDir dir;
  std::string db = dir.File("c.db");
  {
    Database database(db);
    Cache store(database);
    store.PutBestPlan(testing::SamplePlan(
        "aaaa0001", 10, "x86_64-pc-linux-gnu;generic-AuthenticAMD-26-2;+avx512f,+fma"));
    store.PutBestPlan(testing::SamplePlan("bbbb0002", 20, "x86_64-pc-linux-gnu;znver4;+avx512f"));
  }
  CliRun r = Fusetune(dir, "cache ls --db " + db);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("aaaa0001         generic-AuthenticAMD-26-2    1"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("bbbb0002         znver4                       1"), std::string::npos)
      << r.out;

  r = Fusetune(dir, "cache ls --target generic-AuthenticAMD-26-2 --db " + db);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("aaaa0001"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("bbbb0002"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 plan shown"), std::string::npos) << r.out;
}

TEST(CacheCli, ShowByPrefixAndNothingFound) {
  TempDir dir;
  std::string db = dir.File("c.db");
  {
    Database database(db);
    Cache store(database);
    Fill(store);
  }
  CliRun r = Fusetune(dir, "cache show aaaa --db " + db);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("region aaaa1111bbbb2222cccc3333dddd4444\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("    [n1, n2]\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("    [n0]  tile_m=8,tile_n=32\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("    n0 = exp(p0)\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("100.00 / 150.00 / 200.00 us"), std::string::npos) << r.out;

  r = Fusetune(dir, "cache show 9999 --db " + db);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("no stored plan has a region signature starting with 9999"),
            std::string::npos)
      << r.err;
}

TEST(CacheCli, LsMeasurementsListsWhyCandidatesFailed) {
  TempDir dir;
  std::string db = dir.File("c.db");
  {
    Database database(db);
    Cache store(database);
    Fill(store);
  }
  CliRun r = Fusetune(dir, "cache ls --measurements --invalid --db " + db);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("g2 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("invalid"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("crash"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("g1 "), std::string::npos) << "--invalid shows only failures:\n" << r.out;
  EXPECT_NE(r.out.find("1 measurement shown"), std::string::npos) << r.out;

  r = Fusetune(dir, "cache ls --measurements --json --db " + db);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["measurements"].size(), 2u);
  EXPECT_EQ(j["measurements"][0]["group_signature"], "g1");
  EXPECT_EQ(j["measurements"][0]["median_us"], 5.0);
  EXPECT_EQ(j["measurements"][1]["reason"], "crash");

  r = Fusetune(dir, "cache ls --measurements --op exp --db " + db);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--measurements filters by --signature, --target and --threads only"),
            std::string::npos)
      << r.err;
  r = Fusetune(dir, "cache ls --invalid --db " + db);
  EXPECT_EQ(r.exit_code, 2);
}

TEST(CacheCli, ShowTellsTheDecisionAndThePlansReplaced) {
  TempDir dir;
  std::string db = dir.File("c.db");
  {
    Database database(db);
    Cache store(database);
    BestPlanRecord old = testing::SamplePlan("abcd", 100);
    store.PutBestPlan(old);
    BestPlanRecord now = testing::SamplePlan("abcd", 120);
    now.chosen = "greedy";
    now.greedy_us = 110;
    now.margin = 0.98;
    now.rounds = 7;
    now.decision = "tuned 1.02x, within noise: greedy kept";
    now.family_key = "fam1";
    store.PutBestPlan(now, "re-validated: slower than greedy");
  }
  CliRun r = Fusetune(dir, "cache show abcd --db " + db);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("  decision        tuned 1.02x, within noise: greedy kept\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  margin          0.980 over 7 paired rounds\n"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  family          fam1\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("replaced plans (newest first)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("re-validated: slower than greedy: tuned at 100.00 us"), std::string::npos)
      << r.out;

  r = Fusetune(dir, "cache show abcd --json --db " + db);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["margin"], 0.98);
  EXPECT_EQ(j[0]["rounds"], 7);
  ASSERT_EQ(j[0]["replaced"].size(), 1u);
  EXPECT_EQ(j[0]["replaced"][0]["tuned_us"], 100.0);
  EXPECT_EQ(j[0]["replaced"][0]["reason"], "re-validated: slower than greedy");
}

TEST(CacheCli, ExportImportAndABadFile) {
  TempDir dir;
  std::string a = dir.File("a.db"), b = dir.File("b.db"), lines = dir.File("cache.jsonl");
  {
    Database database(a);
    Cache store(database);
    Fill(store);
  }
  CliRun r = Fusetune(dir, "cache export " + lines + " --db " + a);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("exported 5 records"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(lines + ".partial"));

  r = Fusetune(dir, "cache import " + lines + " --json --db " + b);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out),
            (nlohmann::json{{"added", 5}, {"replaced", 0}, {"kept", 0}}));
  r = Fusetune(dir, "cache import " + lines + " --db " + b);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("0 added, 0 replaced by better records, 5 kept"), std::string::npos)
      << r.out;

  // A bad line: exit 2, the file and line named, nothing imported.
  std::string bad = dir.File("bad.jsonl");
  testing::WriteBytes(bad, testing::ReadBytes(lines) + "{\"kind\":\"planet\"}\n");
  std::string c = dir.File("c.db");
  r = Fusetune(dir, "cache import " + bad + " --db " + c);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(bad + ":line 7: unknown record kind \"planet\""), std::string::npos)
      << r.err;
  EXPECT_EQ(StatsOf(c).best_plans, 0);
}

TEST(CacheCli, RmNeedsAFilterAndRemovesWhatMatches) {
  TempDir dir;
  std::string db = dir.File("c.db");
  {
    Database database(db);
    Cache store(database);
    Fill(store);
  }
  CliRun r = Fusetune(dir, "cache rm --db " + db);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("cache rm needs a filter"), std::string::npos) << r.err;

  r = Fusetune(dir, "cache rm --signature ffff --db " + db);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("removed 1 best plan from"), std::string::npos) << r.out;
  EXPECT_EQ(StatsOf(db).best_plans, 1);

  r = Fusetune(dir, "cache rm --all --measurements --json --db " + db);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out), (nlohmann::json{{"plans", 1}, {"measurements", 2}}));
  CacheStats stats = StatsOf(db);
  EXPECT_EQ(stats.best_plans + stats.measurements_ok + stats.measurements_invalid, 0);
  EXPECT_EQ(stats.targets, 1);  // targets are not cache entries
}

TEST(CacheCli, ANewerFileIsRefusedWithTheUpgradeMessage) {
  TempDir dir;
  std::string db = dir.File("future.db");
  { Database database(db); }
  // Bump the version the way a newer fusetune would have.
  const std::string newer = std::to_string(kLatestSchemaVersion + 1);
  std::string cmd = "sqlite3 " + db + " 'PRAGMA user_version = " + newer + "' 2>/dev/null";
  if (std::system(cmd.c_str()) != 0) GTEST_SKIP() << "no sqlite3 shell";
  std::string before = testing::ReadBytes(db);
  CliRun r = Fusetune(dir, "cache ls --db " + db);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("this database was written by fusetune schema v" + newer +
                       ", this binary knows up to v" + std::to_string(kLatestSchemaVersion) +
                       "; upgrade fusetune"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(testing::ReadBytes(db), before);
}

}  // namespace
}  // namespace fusetune::db
