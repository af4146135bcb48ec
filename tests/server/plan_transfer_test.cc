// Transfer on a miss (server/plan_transfer.h) through LookupCached: the seed tuned at S=128 and
// S=256 under a deterministic bytes model, then looked up at sizes the store has never seen.
#include <cmath>
#include <filesystem>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "ir/fusion.h"
#include "ir/text/relay_parser.h"
#include "server/tuner.h"

namespace fusetune {
namespace {

// Each kernel costs 1 µs plus 1 µs per KiB it moves (as tuner_test.cc's model): fusion wins.
class BytesBackend : public MeasurementBackend {
 public:
  explicit BytesBackend(std::string target = "test-triple;test-cpu;+f") : target_(target) {}
  std::string TargetFingerprint() override { return target_; }
  std::vector<JobResult> RunJobs(const std::vector<MeasureJob>& jobs,
                                 const std::function<void(size_t)>& on_done) override {
    std::vector<JobResult> out;
    for (const MeasureJob& job : jobs) {
      Graph g = ParseRelay(job.graph_text, "job");
      JobResult r;
      r.id = job.id;
      r.target = target_;
      for (const JobPlan& jp : job.plans) {
        Plan plan = PlanFromJson(g, jp.json, jp.name);
        PlanResult t;
        t.name = jp.name;
        t.ok = true;
        for (const PlanGroup& pg : plan.groups) {
          auto group = AnalyzeGroup(g, pg.nodes);
          double bytes = 0;
          for (ValueId v : group->inputs) bytes += g.value(v).type.NumBytes();
          for (ValueId v : group->outputs) bytes += g.value(v).type.NumBytes();
          t.kernel_us.push_back(1.0 + bytes / 1024.0);
          t.median_us += t.kernel_us.back();
        }
        t.min_us = t.median_us;
        t.number = t.repeat = 1;
        r.plans.push_back(t);
      }
      out.push_back(r);
      if (on_done) on_done(out.size());
    }
    return out;
  }

 private:
  std::string target_;
};

Graph SeedAt(int s) {
  return ParseRelay(
      fmt::format(
          R"(fn (%x: Tensor[(12, {0}, 64), float32], %y: Tensor[(12, {0}, 64), float32], %z: Tensor[(12, {0}, {0}), float32]) {{
  %0 = nn.batch_matmul(%x, %y);
  %1 = ones_like(%0);
  where(%z, %0, %1)
}})",
          s),
      fmt::format("seed{}.relay", s));
}

class PlanTransferTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = std::filesystem::temp_directory_path() /
            ("fusetune_transfer_test_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".db");
    std::filesystem::remove(path_);
    database_ = std::make_unique<db::Database>(path_.string());
    store_ = std::make_unique<db::Cache>(*database_);
  }
  void TearDown() override {
    store_.reset();
    database_.reset();
    for (const char* suffix : {"", "-wal", "-shm"})
      std::filesystem::remove(path_.string() + suffix);
  }
  // The seed tuned at 128 and 256 for `backend`'s target at `threads`.
  void TuneSeeds(BytesBackend& backend, int threads = 1) {
    TuneOptions options;
    options.search.threads = threads;
    for (int s : {128, 256}) {
      TuneReport r = Tune(SeedAt(s), options, *store_, backend);
      ASSERT_EQ(r.regions.size(), 1u);
      ASSERT_FALSE(r.regions[0].cached);
    }
  }
  TuneReport Lookup(int s, const std::string& target, std::vector<std::string>* missing,
                    int threads = 1, bool exact_only = false) {
    Graph g = SeedAt(s);
    SearchOptions search;
    search.threads = threads;
    return LookupCached(g, search, *store_, target, missing, exact_only);
  }
  std::filesystem::path path_;
  std::unique_ptr<db::Database> database_;
  std::unique_ptr<db::Cache> store_;
};

TEST_F(PlanTransferTest, AMissIsAnsweredByTheNearestTunedSizeAndSaysSo) {
  BytesBackend backend;
  TuneSeeds(backend);
  std::vector<std::string> none;
  const TuneReport tuned256 = Lookup(256, backend.TargetFingerprint(), &none);
  ASSERT_TRUE(tuned256.regions[0].cached);

  // 192 is nearer 256 (ratio 1.33) than 128 (1.5); 160 is nearer 128 (1.25 against 1.6).
  for (auto [s, from] : {std::pair{192, std::string("256 (here 192)")},
                         std::pair{160, std::string("128 (here 160)")}}) {
    std::vector<std::string> missing;
    TuneReport r = Lookup(s, backend.TargetFingerprint(), &missing);
    EXPECT_TRUE(missing.empty()) << s;
    ASSERT_EQ(r.regions.size(), 1u);
    const RegionReport& region = r.regions[0];
    EXPECT_FALSE(region.cached) << s;
    EXPECT_NE(region.transferred_from.find(from), std::string::npos)
        << s << ": " << region.transferred_from;
    // The plan covers this graph's three nodes, as the member's did, and honours the request.
    size_t nodes = 0;
    for (const PlanGroup& g : region.plan) nodes += g.nodes.size();
    EXPECT_EQ(nodes, 3u) << s;
    EXPECT_EQ(region.plan.size(), tuned256.regions[0].plan.size()) << s;
    EXPECT_FALSE(r.tuned_plan.groups.empty()) << s;
    // Not measured at this size: no figure pretends it was.
    EXPECT_TRUE(std::isnan(region.tuned_us)) << s;
    EXPECT_TRUE(std::isnan(r.total_tuned_us)) << s;
  }
}

TEST_F(PlanTransferTest, ExactOnlyReportsTheMiss) {
  BytesBackend backend;
  TuneSeeds(backend);
  std::vector<std::string> missing;
  TuneReport r = Lookup(192, backend.TargetFingerprint(), &missing, 1, /*exact_only=*/true);
  EXPECT_EQ(missing.size(), 1u);
  EXPECT_TRUE(r.regions[0].transferred_from.empty());
  EXPECT_TRUE(r.regions[0].plan.empty());
}

TEST_F(PlanTransferTest, NeverCrossesTargetsOrThreadCounts) {
  BytesBackend other("other-triple;other-cpu;+g");
  TuneSeeds(other, /*threads=*/2);
  BytesBackend backend;
  std::vector<std::string> missing;
  // Same target, other thread count; other target, same thread count: both misses.
  Lookup(192, other.TargetFingerprint(), &missing, /*threads=*/1);
  EXPECT_EQ(missing.size(), 1u) << "transferred across thread counts";
  missing.clear();
  Lookup(192, backend.TargetFingerprint(), &missing, /*threads=*/2);
  EXPECT_EQ(missing.size(), 1u) << "transferred across targets";
  missing.clear();
  TuneReport r = Lookup(192, other.TargetFingerprint(), &missing, /*threads=*/2);
  EXPECT_TRUE(missing.empty()) << "the matching target and thread count transfers";
  EXPECT_FALSE(r.regions[0].transferred_from.empty());
}

TEST_F(PlanTransferTest, ATransferredPlanIsNeverStored) {
  BytesBackend backend;
  TuneSeeds(backend);
  const size_t before = store_->ListBestPlans().size();
  EXPECT_EQ(before, 2u);
  std::vector<std::string> missing;
  Lookup(192, backend.TargetFingerprint(), &missing);
  ASSERT_TRUE(missing.empty());
  EXPECT_EQ(store_->ListBestPlans().size(), before);
  // A later exact lookup still misses: the transfer left nothing behind that looks measured.
  Lookup(192, backend.TargetFingerprint(), &missing, 1, /*exact_only=*/true);
  EXPECT_EQ(missing.size(), 1u);
  // Every stored plan carries its family key, which is what makes the transfer possible.
  for (const db::BestPlanRecord& rec : store_->ListBestPlans())
    EXPECT_EQ(rec.family_key.size(), 32u);
}

TEST_F(PlanTransferTest, ATransferredPlanHonoursTheRequest) {
  BytesBackend backend;
  TuneSeeds(backend);
  SearchOptions search;
  search.forbidden_groups = {{"0", "1", "2"}};  // the region stays whole, its fused plan may not
  std::vector<std::string> missing;
  TuneReport r = LookupCached(SeedAt(192), search, *store_, backend.TargetFingerprint(), &missing);
  // The members fused all three (the bytes model's best): that plan may not answer.
  EXPECT_EQ(missing.size(), 1u);
  EXPECT_TRUE(r.regions[0].transferred_from.empty());
}

}  // namespace
}  // namespace fusetune
