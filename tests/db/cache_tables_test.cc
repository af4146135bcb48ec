// Targets, measurements and best plans: every field round-trips, and the write rules hold.
#include "db/cache.h"
#include "db/database.h"
#include "db_test_util.h"
#include "ir/error.h"

namespace fusetune::db {
namespace {

using testing::Key;
using testing::TempDir;

void ExpectSameMeasurement(const MeasurementRecord& a, const MeasurementRecord& b) {
  EXPECT_EQ(a.key, b.key);
  EXPECT_EQ(a.status, b.status);
  EXPECT_EQ(a.reason, b.reason);
  EXPECT_EQ(a.median_us, b.median_us);
  EXPECT_EQ(a.min_us, b.min_us);
  EXPECT_EQ(a.stddev_us, b.stddev_us);
  EXPECT_EQ(a.number, b.number);
  EXPECT_EQ(a.repeat, b.repeat);
  EXPECT_EQ(a.max_abs_error, b.max_abs_error);
  EXPECT_EQ(a.compile_ms, b.compile_ms);
  EXPECT_EQ(a.group_text, b.group_text);
  EXPECT_EQ(a.created_at, b.created_at);
}

void ExpectSamePlan(const BestPlanRecord& a, const BestPlanRecord& b) {
  EXPECT_EQ(a.key, b.key);
  EXPECT_EQ(a.groups, b.groups);
  EXPECT_EQ(a.tuned_us, b.tuned_us);
  EXPECT_EQ(a.greedy_us, b.greedy_us);
  EXPECT_EQ(a.unfused_us, b.unfused_us);
  EXPECT_EQ(a.chosen, b.chosen);
  EXPECT_EQ(a.region_text, b.region_text);
  EXPECT_EQ(a.ops, b.ops);
  EXPECT_EQ(a.created_at, b.created_at);
  EXPECT_EQ(a.family_key, b.family_key);
  EXPECT_EQ(a.margin, b.margin);
  EXPECT_EQ(a.decision, b.decision);
  EXPECT_EQ(a.rounds, b.rounds);
}

TEST(Targets, RoundTripAndReplace) {
  TempDir dir;
  Database db(dir.File("c.db"));
  Cache cache(db);
  TargetRecord t = testing::SampleTarget();
  cache.PutTarget(t);
  std::optional<TargetRecord> got = cache.FindTarget(t.fingerprint);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->cpu, "generic");
  EXPECT_EQ(got->triple, "x86_64-pc-linux-gnu");
  EXPECT_EQ(got->features, "+avx2,+avx512f,+fma");
  EXPECT_EQ(got->cores, 2);
  EXPECT_EQ(got->peak_gflops, 201.5);
  EXPECT_EQ(got->bandwidth_gbs, 91.25);
  EXPECT_EQ(got->measured_at, 1700000000123);
  t.peak_gflops = 190;  // re-measured
  cache.PutTarget(t);
  EXPECT_EQ(cache.FindTarget(t.fingerprint)->peak_gflops, 190);
  cache.PutTarget(testing::SampleTarget("aarch64-neoverse"));
  EXPECT_EQ(cache.FindTarget("aarch64-neoverse")->fingerprint, "aarch64-neoverse");
  EXPECT_EQ(cache.Stats().targets, 2);
  EXPECT_FALSE(cache.FindTarget("nope"));
}

TEST(Measurements, EveryFieldRoundTrips) {
  TempDir dir;
  Database db(dir.File("c.db"));
  Cache cache(db);
  MeasurementRecord ok = testing::OkMeasurement(Key("g1", "tile_m=8,tile_n=32", "t", 4), 0.125);
  MeasurementRecord bad = testing::InvalidMeasurement(Key("g2"), "compile error: no template");
  EXPECT_EQ(cache.PutMeasurements({ok}), 1);
  EXPECT_EQ(cache.PutMeasurements({bad}), 1);
  ExpectSameMeasurement(*cache.FindMeasurement(ok.key), ok);
  ExpectSameMeasurement(*cache.FindMeasurement(bad.key), bad);
  // Each part of the key matters.
  EXPECT_FALSE(cache.FindMeasurement(Key("g1", "tile_m=8,tile_n=32", "t", 1)));
  EXPECT_FALSE(cache.FindMeasurement(Key("g1", "", "t", 4)));
  EXPECT_FALSE(cache.FindMeasurement(Key("g1", "tile_m=8,tile_n=32", "u", 4)));
}

TEST(Measurements, CreatedAtZeroMeansNow) {
  TempDir dir;
  Database db(dir.File("c.db"));
  Cache cache(db);
  MeasurementRecord m = testing::OkMeasurement(Key("g"), 1);
  m.created_at = 0;
  int64_t before = NowMs();
  cache.PutMeasurements({m});
  int64_t at = cache.FindMeasurement(m.key)->created_at;
  EXPECT_GE(at, before);
  EXPECT_LE(at, NowMs());
}

TEST(Measurements, AnOkResultIsNeverReplaced) {
  TempDir dir;
  Database db(dir.File("c.db"));
  Cache cache(db);
  MeasurementKey key = Key("g");
  EXPECT_EQ(cache.PutMeasurements({testing::OkMeasurement(key, 10)}), 1);
  EXPECT_EQ(cache.PutMeasurements({testing::OkMeasurement(key, 5)}), 0);
  EXPECT_EQ(cache.PutMeasurements({testing::InvalidMeasurement(key, "crash")}), 0);
  EXPECT_EQ(cache.FindMeasurement(key)->median_us, 10);
  EXPECT_EQ(cache.FindMeasurement(key)->status, MeasurementStatus::kOk);
}

TEST(Measurements, AnInvalidResultIsReplacedOnlyByAnOkOne) {
  TempDir dir;
  Database db(dir.File("c.db"));
  Cache cache(db);
  MeasurementKey key = Key("g");
  EXPECT_EQ(cache.PutMeasurements({testing::InvalidMeasurement(key, "timeout after 10 s")}), 1);
  EXPECT_EQ(cache.PutMeasurements({testing::InvalidMeasurement(key, "crash: SIGSEGV")}), 0);
  EXPECT_EQ(cache.FindMeasurement(key)->reason, "timeout after 10 s");
  EXPECT_EQ(cache.PutMeasurements({testing::OkMeasurement(key, 3)}), 1);
  EXPECT_EQ(cache.FindMeasurement(key)->status, MeasurementStatus::kOk);
  EXPECT_EQ(cache.FindMeasurement(key)->reason, "");
  EXPECT_EQ(cache.FindMeasurement(key)->median_us, 3);
}

TEST(Measurements, ConstraintsRejectNonsense) {
  TempDir dir;
  Database db(dir.File("c.db"));
  Cache cache(db);
  MeasurementRecord no_time = testing::OkMeasurement(Key("g"), 0);
  EXPECT_THROW(cache.PutMeasurements({no_time}), StoreError);
  MeasurementRecord no_reason = testing::InvalidMeasurement(Key("g"), "");
  EXPECT_THROW(cache.PutMeasurements({no_reason}), StoreError);
  EXPECT_THROW(cache.PutMeasurements({testing::OkMeasurement(Key(""), 1)}), StoreError);
  EXPECT_THROW(cache.PutMeasurements({testing::OkMeasurement(Key("g", "", "t", 0), 1)}),
               StoreError);
  EXPECT_EQ(cache.ListMeasurements().size(), 0u);
}

// A batch is one transaction: all written (an ok record never replaced), or none when one fails.
TEST(Measurements, PutMeasurementsIsAllOrNothing) {
  TempDir dir;
  Database db(dir.File("c.db"));
  Cache cache(db);
  cache.PutMeasurements({testing::OkMeasurement(Key("g", "s0"), 1)});
  EXPECT_EQ(cache.PutMeasurements({testing::OkMeasurement(Key("g", "s0"), 9),
                                   testing::OkMeasurement(Key("g", "s1"), 2),
                                   testing::InvalidMeasurement(Key("g", "s2"), "crash")}),
            2);
  EXPECT_EQ(cache.FindMeasurement(Key("g", "s0"))->median_us, 1);
  EXPECT_EQ(cache.ListMeasurements({.group_signature_prefix = "g"}).size(), 3u);
  EXPECT_THROW(cache.PutMeasurements({testing::OkMeasurement(Key("h", "s0"), 3),
                                      testing::OkMeasurement(Key("h", "s1"), 0)}),
               StoreError);
  EXPECT_FALSE(cache.FindMeasurement(Key("h", "s0"))) << "the batch left nothing behind";
}

TEST(Measurements, FilterAndDelete) {
  TempDir dir;
  Database db(dir.File("c.db"));
  Cache cache(db);
  cache.PutMeasurements({testing::OkMeasurement(Key("abc1", "v=8"), 2)});
  cache.PutMeasurements({testing::OkMeasurement(Key("abc1", ""), 3)});
  cache.PutMeasurements({testing::OkMeasurement(Key("abc1", "", "other"), 4)});
  cache.PutMeasurements({testing::OkMeasurement(Key("abd2", "", "x86_64-zen5-avx512", 2), 5)});
  cache.PutMeasurements({testing::InvalidMeasurement(Key("zzz"), "wrong")});

  std::vector<MeasurementRecord> group = cache.ListMeasurements(
      {.group_signature_prefix = "abc1", .target_fingerprint = "x86_64-zen5-avx512", .threads = 1});
  ASSERT_EQ(group.size(), 2u);
  EXPECT_EQ(group[0].key.schedule, "");
  EXPECT_EQ(group[1].key.schedule, "v=8");

  EXPECT_EQ(cache.ListMeasurements({.group_signature_prefix = "ab"}).size(), 4u);
  EXPECT_EQ(cache.ListMeasurements({.target_fingerprint = "other"}).size(), 1u);
  EXPECT_EQ(cache.ListMeasurements({.threads = 2}).size(), 1u);
  EXPECT_EQ(cache.ListMeasurements({.status = MeasurementStatus::kInvalid}).size(), 1u);
  EXPECT_EQ(cache.ListMeasurements({.limit = 2}).size(), 2u);

  EXPECT_EQ(cache.DeleteMeasurements({.group_signature_prefix = "abc"}), 3);
  EXPECT_EQ(cache.ListMeasurements().size(), 2u);
}

TEST(BestPlans, EveryFieldRoundTrips) {
  TempDir dir;
  Database db(dir.File("c.db"));
  Cache cache(db);
  BestPlanRecord plan = testing::SamplePlan("r1", 123.25);
  plan.key.threads = 2;
  plan.key.search_version = 3;
  plan.chosen = "greedy";
  plan.family_key = "fam-bmm-where";
  plan.margin = 0.93;
  plan.decision = "tuned 1.02x, within noise: greedy kept";
  plan.rounds = 7;
  cache.PutBestPlan(plan);
  ExpectSamePlan(*cache.FindBestPlan(plan.key), plan);
  // Without the validation's figures, they read back as absent (NULL), not as zeros.
  BestPlanRecord bare = testing::SamplePlan("r2", 5);
  cache.PutBestPlan(bare);
  BestPlanRecord got = *cache.FindBestPlan(bare.key);
  ExpectSamePlan(got, bare);
  EXPECT_FALSE(got.margin.has_value());
  EXPECT_FALSE(got.rounds.has_value());
  EXPECT_FALSE(cache.FindBestPlan({"r1", plan.key.target_fingerprint, 2, 1}));
  EXPECT_FALSE(cache.FindBestPlan({"r1", plan.key.target_fingerprint, 1, 3}));
}

TEST(BestPlans, PutReplacesAndChosenUsFollowsChoice) {
  TempDir dir;
  Database db(dir.File("c.db"));
  Cache cache(db);
  BestPlanRecord plan = testing::SamplePlan("r1", 100);
  cache.PutBestPlan(plan);
  plan.tuned_us = 150;  // a re-tune on purpose: newest wins even when slower
  plan.groups = {StoredGroup{{0, 1, 2}, "k=1"}};
  cache.PutBestPlan(plan);
  BestPlanRecord got = *cache.FindBestPlan(plan.key);
  EXPECT_EQ(got.tuned_us, 150);
  EXPECT_EQ(got.groups, plan.groups);
  EXPECT_EQ(got.ChosenUs(), 150);
  got.chosen = "unfused";
  EXPECT_EQ(got.ChosenUs(), got.unfused_us);
}

TEST(BestPlans, ConstraintsRejectNonsense) {
  TempDir dir;
  Database db(dir.File("c.db"));
  Cache cache(db);
  BestPlanRecord bad = testing::SamplePlan("r1", 1);
  bad.chosen = "fastest";
  EXPECT_THROW(cache.PutBestPlan(bad), StoreError);
  bad = testing::SamplePlan("r1", -1);
  EXPECT_THROW(cache.PutBestPlan(bad), StoreError);
  bad = testing::SamplePlan("r1", 1);
  bad.margin = 0;  // a time ratio is positive
  EXPECT_THROW(cache.PutBestPlan(bad), StoreError);
  bad = testing::SamplePlan("r1", 1);
  bad.rounds = -1;
  EXPECT_THROW(cache.PutBestPlan(bad), StoreError);
  EXPECT_EQ(cache.ListBestPlans().size(), 0u);
}

TEST(BestPlans, FiltersAndDelete) {
  TempDir dir;
  Database db(dir.File("c.db"));
  Cache cache(db);
  cache.PutBestPlan(testing::SamplePlan("aa11", 1));
  cache.PutBestPlan(testing::SamplePlan("aa22", 2, "other"));
  BestPlanRecord softmax = testing::SamplePlan("bb33", 3);
  softmax.ops = {"nn.softmax"};
  softmax.key.threads = 2;
  cache.PutBestPlan(softmax);
  BestPlanRecord v2 = testing::SamplePlan("cc44", 4);
  v2.key.search_version = 2;
  cache.PutBestPlan(v2);

  EXPECT_EQ(cache.ListBestPlans().size(), 4u);
  EXPECT_EQ(cache.ListBestPlans({.region_signature_prefix = "aa"}).size(), 2u);
  EXPECT_EQ(cache.ListBestPlans({.target_fingerprint = "other"}).size(), 1u);
  EXPECT_EQ(cache.ListBestPlans({.threads = 2}).size(), 1u);
  EXPECT_EQ(cache.ListBestPlans({.search_version = 2}).size(), 1u);
  std::vector<BestPlanRecord> with_softmax = cache.ListBestPlans({.op = "nn.softmax"});
  ASSERT_EQ(with_softmax.size(), 1u);
  EXPECT_EQ(with_softmax[0].key.region_signature, "bb33");
  EXPECT_EQ(cache.ListBestPlans({.op = "where"}).size(), 3u);
  EXPECT_EQ(cache.ListBestPlans({.op = "wher"}).size(), 0u);  // whole names only

  EXPECT_EQ(cache.DeleteBestPlans({.target_fingerprint = "other"}), 1);
  EXPECT_EQ(cache.DeleteBestPlans({.region_signature_prefix = "zz"}), 0);
  EXPECT_EQ(cache.ListBestPlans().size(), 3u);
  EXPECT_EQ(cache.DeleteBestPlans({}), 3);
  EXPECT_EQ(cache.ListBestPlans().size(), 0u);
}

// `cache ls` shows a target by its CPU name (the fingerprint's middle field), so the filters take
// that name as well as the whole fingerprint; a part of a name, or of the features, matches
// nothing.
TEST(BestPlans, TargetFilterTakesTheCpuNameAlone) {
  TempDir dir;
  Database db(dir.File("c.db"));
  Cache cache(db);
  const std::string turin = "x86_64-pc-linux-gnu;generic-AuthenticAMD-26-2;+avx512f,+fma";
  const std::string ryzen = "x86_64-pc-linux-gnu;generic-AuthenticAMD-26-68;+avx512f,+fma";
  const std::string zen4 = "x86_64-pc-linux-gnu;znver4;+avx512f,+fma";
  cache.PutBestPlan(testing::SamplePlan("aa11", 1, turin));
  cache.PutBestPlan(testing::SamplePlan("aa22", 2, ryzen));
  cache.PutBestPlan(testing::SamplePlan("aa33", 3, zen4));
  cache.PutMeasurements({testing::OkMeasurement(Key("g1", "", turin), 2)});
  cache.PutMeasurements({testing::OkMeasurement(Key("g1", "", zen4), 3)});

  std::vector<BestPlanRecord> by_name =
      cache.ListBestPlans({.target_fingerprint = "generic-AuthenticAMD-26-2"});
  ASSERT_EQ(by_name.size(), 1u);
  EXPECT_EQ(by_name[0].key.region_signature, "aa11");
  EXPECT_EQ(cache.ListBestPlans({.target_fingerprint = ryzen}).size(), 1u);
  EXPECT_EQ(cache.ListBestPlans({.target_fingerprint = "generic-AuthenticAMD-26"}).size(), 0u);
  EXPECT_EQ(cache.ListBestPlans({.target_fingerprint = "+fma"}).size(), 0u);
  std::vector<MeasurementRecord> zen4_rows =
      cache.ListMeasurements({.target_fingerprint = "znver4"});
  ASSERT_EQ(zen4_rows.size(), 1u);
  EXPECT_EQ(zen4_rows[0].key.target_fingerprint, zen4);

  EXPECT_EQ(cache.DeleteBestPlans({.target_fingerprint = "znver4"}), 1);
  EXPECT_EQ(cache.ListBestPlans().size(), 2u);
}

TEST(PlanJson, GroupsRoundTripAndBadJsonIsAUserError) {
  std::vector<StoredGroup> groups = {{{0, 3}, "tile_m=8"}, {{1}, ""}};
  std::string json = GroupsToJson(groups);
  EXPECT_EQ(json,
            R"({"groups":[{"nodes":[0,3],"schedule":"tile_m=8"},{"nodes":[1],"schedule":""}]})");
  EXPECT_EQ(GroupsFromJson(json), groups);
  EXPECT_THROW(GroupsFromJson("[]"), UserError);
  EXPECT_THROW(GroupsFromJson(R"({"groups":[{"nodes":[-1]}]})"), UserError);
  EXPECT_THROW(GroupsFromJson(R"({"groups":[{"nodes":"0"}]})"), UserError);
}

}  // namespace
}  // namespace fusetune::db
