// The warm start (server/warm_start.h) through Tune() under the bytes model of model_backend.h:
// what its validation times, with which schedules, and what a warm-only tune skips.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "db/cache.h"
#include "db/database.h"
#include "ir/fusion.h"
#include "ir/plan.h"
#include "ir/schedule_space.h"
#include "ir/text/relay_parser.h"
#include "model_backend.h"
#include "server/measurement_planning.h"
#include "server/region_formation.h"
#include "server/request_policy.h"
#include "server/tune_cache.h"
#include "server/tuner.h"
#include "server/validation.h"
#include "server/warm_start.h"

namespace fusetune {
namespace {

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

// Two regions, [%0 %1 %2] and [%3 %4 %5]: a softmax takes an element-wise prologue, and two
// softmaxes never share a kernel, so nothing joins the halves.
Graph TwoRegionsAt(int s) {
  return ParseRelay(fmt::format(R"(fn (%x: Tensor[(16, {0}), float32]) {{
  %0 = exp(%x);
  %1 = negative(%0);
  %2 = nn.softmax(%1);
  %3 = nn.softmax(%2);
  %4 = exp(%3);
  negative(%4)
}})",
                                s),
                    fmt::format("two{}.relay", s));
}

bool IsValidationJob(const MeasureJob& job) {
  for (const JobPlan& p : job.plans)
    if (p.name != "tuned" && p.name != "greedy" && p.name != "unfused") return false;
  return true;
}

class WarmStartTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = std::filesystem::temp_directory_path() /
            ("fusetune_warm_test_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".db");
    Remove();
    database_ = std::make_unique<db::Database>(path_.string());
    store_ = std::make_unique<db::Cache>(*database_);
  }
  void TearDown() override {
    store_.reset();
    database_.reset();
    Remove();
  }
  void Remove() {
    for (const char* suffix : {"", "-wal", "-shm"})
      std::filesystem::remove(path_.string() + suffix);
  }
  std::filesystem::path path_;
  std::unique_ptr<db::Database> database_;
  std::unique_ptr<db::Cache> store_;
};

TEST_F(WarmStartTest, BaselinesTakeTheFamilysSchedulesSoGreedysGroupingIsTimedOnce) {
  ModelBackend backend;
  ASSERT_EQ(Tune(SeedAt(256), {}, *store_, backend).regions.size(), 1u);
  // The member's plan gets a schedule that is not the first of its space (as a schedule search
  // that found a faster one would store), so the test can tell it from a default.
  std::vector<db::BestPlanRecord> stored = store_->ListBestPlans();
  ASSERT_EQ(stored.size(), 1u);
  ASSERT_EQ(stored[0].groups.size(), 1u) << "the seed's greedy grouping: all three fused";
  const Graph g256 = SeedAt(256);
  const std::vector<ValueId> fused = GreedyPlan(g256).groups.at(0).nodes;
  ASSERT_EQ(fused.size(), 3u);
  const std::vector<Schedule> space = ScheduleSpace(g256, *AnalyzeGroup(g256, fused), 1);
  ASSERT_GE(space.size(), 2u);
  stored[0].groups[0].schedule = space.back().ToString();
  ASSERT_NE(stored[0].groups[0].schedule, space.front().ToString());
  store_->PutBestPlan(stored[0]);

  // What `query` would answer at 192: the member's plan with its schedule adapted.
  std::vector<std::string> missing;
  const TuneReport transferred =
      LookupCached(SeedAt(192), {}, *store_, backend.TargetFingerprint(), &missing);
  ASSERT_TRUE(missing.empty());
  ASSERT_EQ(transferred.regions[0].plan.size(), 1u);
  const std::string adapted = transferred.regions[0].plan[0].schedule.ToString();

  backend.seen.clear();
  TuneOptions options;
  options.warm_start = WarmStart::kOnly;
  const TuneReport r = Tune(SeedAt(192), options, *store_, backend);
  ASSERT_EQ(r.regions.size(), 1u);
  const RegionReport& region = r.regions[0];
  ASSERT_TRUE(region.warm_start.has_value());
  EXPECT_EQ(r.candidates_measured, 0);
  EXPECT_EQ(region.decision,
            "warm start from s1=256 (here 192), greedy on its schedules, unfused not timed "
            "(--warm-only): tuned = greedy: greedy kept");
  // A warm-only tune times greedy (which is the transferred plan) alone: unfused is not timed, so
  // there is nothing to compare and one round is its check and its figure.
  int validation_jobs = 0;
  for (const MeasureJob& job : backend.seen) {
    if (!IsValidationJob(job)) continue;
    ++validation_jobs;
    ASSERT_EQ(job.plans.size(), 1u);
    EXPECT_EQ(job.plans[0].name, "greedy");
    EXPECT_NE(job.plans[0].json.find(adapted), std::string::npos)
        << job.plans[0].json << " lacks " << adapted;
  }
  EXPECT_EQ(validation_jobs, 1);
  EXPECT_EQ(region.rounds, 1);
  EXPECT_TRUE(std::isnan(region.unfused_us)) << "not timed, not failed: " << region.unfused_us;
  EXPECT_TRUE(std::isnan(r.total_unfused_us));
  // The stored answer is greedy's grouping on the family's schedule.
  ASSERT_EQ(region.plan.size(), 1u);
  EXPECT_EQ(region.chosen, "greedy");
  EXPECT_EQ(region.plan[0].schedule.ToString(), adapted);
  EXPECT_DOUBLE_EQ(region.warm_start->transferred_us, region.greedy_us);
  // Stored as measured here, its unfused figure as not timed (NULL), the decision saying why.
  std::optional<db::BestPlanRecord> kept =
      TuneCache(*store_, backend.TargetFingerprint(), 1).FindBestPlan(region.signature);
  ASSERT_TRUE(kept.has_value());
  EXPECT_EQ(kept->chosen, "greedy");
  EXPECT_TRUE(std::isnan(kept->unfused_us));
  EXPECT_GT(kept->greedy_us, 0);
  EXPECT_EQ(kept->decision, region.decision);
  EXPECT_EQ(kept->rounds, 1);
}

// A warm start that goes on to search validates the transferred plan against both baselines, as
// before: only --warm-only leaves unfused out.
TEST_F(WarmStartTest, AWarmStartThatSearchesStillTimesUnfused) {
  ModelBackend backend;
  Tune(SeedAt(256), {}, *store_, backend);
  backend.seen.clear();
  const TuneReport r = Tune(SeedAt(192), {}, *store_, backend);
  ASSERT_TRUE(r.regions.at(0).warm_start.has_value());
  ASSERT_TRUE(r.regions[0].warm_start->searched);
  ASSERT_FALSE(backend.seen.empty());
  // The warm start's validation comes first, before any of the search's jobs.
  int warm_rounds = 0;
  for (const MeasureJob& job : backend.seen) {
    if (!IsValidationJob(job)) break;
    ++warm_rounds;
    std::set<std::string> names;
    for (const JobPlan& p : job.plans) names.insert(p.name);
    EXPECT_EQ(names, (std::set<std::string>{"greedy", "unfused"}));
  }
  EXPECT_EQ(warm_rounds, kMinRounds) << "unfused loses both rounds under the bytes model";
  EXPECT_EQ(r.regions[0].warm_start->rounds, kMinRounds);
  EXPECT_TRUE(std::isfinite(r.regions[0].unfused_us));
}

TEST_F(WarmStartTest, ATransferredScheduleThatFailsHereLeavesTheBaselinesOnTheirOwn) {
  ModelBackend backend;
  Tune(SeedAt(256), {}, *store_, backend);
  // The member's schedule is not the default (which the baselines run, and which failing would
  // leave nothing to run).
  std::vector<db::BestPlanRecord> stored = store_->ListBestPlans();
  ASSERT_EQ(stored.size(), 1u);
  const Graph g256 = SeedAt(256);
  const std::vector<ValueId> fused = GreedyPlan(g256).groups.at(0).nodes;
  stored[0].groups.at(0).schedule =
      ScheduleSpace(g256, *AnalyzeGroup(g256, fused), 1).back().ToString();
  store_->PutBestPlan(stored[0]);
  std::vector<std::string> missing;
  const std::string adapted =
      LookupCached(SeedAt(192), {}, *store_, backend.TargetFingerprint(), &missing)
          .regions.at(0)
          .plan.at(0)
          .schedule.ToString();
  ASSERT_FALSE(adapted.empty());
  const Graph g192 = SeedAt(192);
  ASSERT_NE(adapted,
            WithDefaultSchedules(g192, GreedyPlan(g192), 1).groups.at(0).schedule.ToString());
  // Every kernel on the transferred schedule crashes at 192 (a wrong tile for these sizes, say).
  backend.adjust = [&](const MeasureJob&, const Plan& plan, PlanResult& t) {
    for (const PlanGroup& pg : plan.groups)
      if (pg.schedule.ToString() == adapted) {
        t.ok = false;
        t.reason = "crashed with signal 11";
      }
  };
  TuneOptions options;
  options.warm_start = WarmStart::kOnly;
  const TuneReport r = Tune(SeedAt(192), options, *store_, backend);  // does not throw
  ASSERT_EQ(r.regions.size(), 1u);
  const RegionReport& region = r.regions[0];
  EXPECT_EQ(region.chosen, "greedy") << region.decision;
  // The transferred plan is greedy's grouping on the family's schedule.
  EXPECT_NE(region.decision.find("searched schedules failed"), std::string::npos)
      << region.decision;
  ASSERT_EQ(region.plan.size(), 1u);
  EXPECT_NE(region.plan[0].schedule.ToString(), adapted) << "greedy on the default schedule";
  EXPECT_GT(region.greedy_us, 0);
}

// A warm-only tune does not time unfused, unless nothing else ran: then unfused is the answer,
// timed, rather than a failed tune.
TEST_F(WarmStartTest, AWarmOnlyTuneWhoseFusedPlansAllFailTimesUnfused) {
  ModelBackend backend;
  Tune(SeedAt(256), {}, *store_, backend);
  // Every kernel of more than one op crashes at 192, whatever its schedule.
  backend.adjust = [&](const MeasureJob&, const Plan& plan, PlanResult& t) {
    for (const PlanGroup& pg : plan.groups)
      if (pg.nodes.size() > 1) {
        t.ok = false;
        t.reason = "crashed with signal 11";
      }
  };
  TuneOptions options;
  options.warm_start = WarmStart::kOnly;
  const TuneReport r = Tune(SeedAt(192), options, *store_, backend);  // does not throw
  const RegionReport& region = r.regions.at(0);
  EXPECT_EQ(region.chosen, "unfused") << region.decision;
  EXPECT_GT(region.unfused_us, 0);
  EXPECT_TRUE(std::isfinite(region.unfused_us));
  EXPECT_EQ(region.decision.find("unfused not timed"), std::string::npos) << region.decision;
}

TEST_F(WarmStartTest, AWarmOnlyTuneSumsTheRegionsInsteadOfTimingTheWholeGraph) {
  ModelBackend backend;
  for (int s : {64, 128}) {
    const TuneReport cold = Tune(TwoRegionsAt(s), {}, *store_, backend);
    ASSERT_GE(cold.regions.size(), 2u) << "the test needs a graph of several regions";
    EXPECT_TRUE(cold.totals_measured) << "a searched graph of several regions is timed whole";
  }
  TuneOptions options;
  options.warm_start = WarmStart::kOnly;
  const TuneReport r = Tune(TwoRegionsAt(96), options, *store_, backend);
  double sum = 0;
  for (const RegionReport& region : r.regions) {
    EXPECT_TRUE(region.warm_start.has_value() || region.cached) << region.signature;
    sum += region.tuned_us;
  }
  EXPECT_FALSE(r.totals_measured);
  EXPECT_EQ(r.total_decision, kWarmOnlyTotals);
  EXPECT_DOUBLE_EQ(r.total_tuned_us, sum);
  for (const auto& [stage, seconds] : r.stage_seconds)
    EXPECT_NE(stage, "timing") << "the whole graph was timed";

  // A warm start that goes on to search (the default) times the whole graph as a cold tune does.
  const TuneReport searched = Tune(TwoRegionsAt(80), {}, *store_, backend);
  EXPECT_TRUE(searched.totals_measured);
  EXPECT_NE(searched.total_decision, kWarmOnlyTotals);
}

// What PlanMeasurements gives a group, by the figures validation and the report read from it.
struct GroupFigures {
  std::string first;  // the default, planned first
  size_t planned = 0;
  int known = 0;
  double best_us = 0;
  bool operator==(const GroupFigures&) const = default;
};

std::map<std::string, GroupFigures> FiguresOf(const MeasurementPlan& plan) {
  std::map<std::string, GroupFigures> out;
  for (const auto& [sig, gw] : plan.groups)
    out[sig] = {gw.schedules.front().ToString(), gw.schedules.size(),
                static_cast<int>(std::count(gw.known.begin(), gw.known.end(), true)), gw.best_us()};
  return out;
}

TEST_F(WarmStartTest, AWarmOnlyTuneRanksNoScheduleSoTrainsNoModel) {
  ModelBackend backend;
  for (int s : {128, 256}) {
    const TuneReport cold = Tune(SeedAt(s), {}, *store_, backend);
    EXPECT_TRUE(cold.schedule_ranking == "learned" || cold.schedule_ranking == "roofline")
        << "a searched tune ranks its schedules: " << cold.schedule_ranking;
  }
  TuneOptions warm_only;
  warm_only.warm_start = WarmStart::kOnly;
  const TuneReport warm = Tune(SeedAt(192), warm_only, *store_, backend);
  ASSERT_TRUE(warm.regions.at(0).warm_start.has_value());
  EXPECT_EQ(warm.schedule_ranking, "none") << "nothing it measures needs an order";
  // A warm start that goes on to search ranks (and trains) as a cold tune does.
  const TuneReport searched = Tune(SeedAt(96), {}, *store_, backend);
  ASSERT_TRUE(searched.regions.at(0).warm_start.has_value());
  EXPECT_NE(searched.schedule_ranking, "none");
  EXPECT_FALSE(searched.schedule_ranking.empty());
}

TEST_F(WarmStartTest, PlanningARegionOnlyToValidateItChangesNoFigureAndRanksWhatTheStoreKnows) {
  ModelBackend backend;
  for (int s : {128, 256}) Tune(SeedAt(s), {}, *store_, backend);
  const Graph g = SeedAt(192);
  const RequestPolicy policy(g, SearchOptions{});
  const std::vector<TuneRegion> regions = FormRegions(policy);
  ASSERT_EQ(regions.size(), 1u);
  TuneCache cache(*store_, backend.TargetFingerprint(), policy.options().threads);
  const std::vector<size_t> to_search = {0};
  auto plan = [&](std::set<size_t> unsearched) {
    return PlanMeasurements(policy, regions, to_search, cache, RooflineTarget{}, unsearched);
  };

  const MeasurementPlan searched = plan({});
  const MeasurementPlan validated_only = plan({0});
  EXPECT_NE(searched.ranking, "none");
  EXPECT_EQ(validated_only.ranking, "none");
  // Some group has more schedules than are planned, so an order could have mattered.
  const GroupWork* ordered = nullptr;
  for (const auto& [sig, gw] : searched.groups)
    if (!gw.candidates.empty() && gw.schedules.size() >= 2) ordered = &gw;
  ASSERT_NE(ordered, nullptr) << "the test needs a group whose space is larger than planned";
  EXPECT_EQ(FiguresOf(searched), FiguresOf(validated_only));
  ASSERT_EQ(searched.jobs.size(), validated_only.jobs.size());
  for (size_t j = 0; j < searched.jobs.size(); ++j)
    EXPECT_EQ(searched.jobs[j].schedules.size(), validated_only.jobs[j].schedules.size());
  EXPECT_EQ(searched.regions.at(0).candidates, validated_only.regions.at(0).candidates);

  // The store knows one of that group's unplanned schedules at this size: which schedules are
  // planned now decides whether it is known, so the region validated only is ranked too.
  db::MeasurementRecord known;
  known.key.group_signature = ordered->signature;
  known.key.schedule = ordered->candidates.back().ToString();
  known.median_us = 1;
  known.min_us = 0.9;
  known.stddev_us = 0.01;
  known.number = 1;
  known.repeat = 5;
  cache.PutMeasurements({known});
  const MeasurementPlan searched2 = plan({});
  const MeasurementPlan validated_only2 = plan({0});
  EXPECT_NE(validated_only2.ranking, "none");
  EXPECT_EQ(FiguresOf(searched2), FiguresOf(validated_only2));
  std::vector<std::string> a, b;
  for (const Schedule& s : searched2.groups.at(ordered->signature).schedules)
    a.push_back(s.ToString());
  for (const Schedule& s : validated_only2.groups.at(ordered->signature).schedules)
    b.push_back(s.ToString());
  EXPECT_EQ(a, b);
}

bool RanCalibration(const ModelBackend& backend) {
  for (const MeasureJob& job : backend.seen)
    for (const JobPlan& p : job.plans)
      if (p.name == "calibration") return true;
  return false;
}

TEST_F(WarmStartTest, AWarmOnlyTuneUnderABudgetTimesNoCalibration) {
  ModelBackend backend;
  for (int s : {128, 256}) Tune(SeedAt(s), {}, *store_, backend);  // no budget: no roofline
  ASSERT_FALSE(RanCalibration(backend));
  TuneOptions options;
  options.search.budget = 4;
  options.warm_start = WarmStart::kOnly;
  const TuneReport warm = Tune(SeedAt(192), options, *store_, backend);
  ASSERT_TRUE(warm.regions.at(0).warm_start.has_value());
  EXPECT_FALSE(RanCalibration(backend)) << "nothing is searched, so nothing is pruned";
  // A warm start that searches under the budget calibrates, as a cold tune does.
  options.warm_start = WarmStart::kSearch;
  Tune(SeedAt(96), options, *store_, backend);
  EXPECT_TRUE(RanCalibration(backend));
}

}  // namespace
}  // namespace fusetune
