// The tuner pipeline with a deterministic measurement backend: timings here follow a simple
// bytes-moved model so the search's decisions (what is measured, cached, shared, stored) can be
// asserted exactly. Real kernels and real timing are exercised by the CLI tests (tests/cli/).
#include "server/tuner.h"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "ir/fusion.h"
#include "ir/schedule_space.h"
#include "ir/text/relay_parser.h"
#include "model_backend.h"
#include "seed_graph.h"
#include "server/measurement_planning.h"
#include "server/request_policy.h"
#include "server/stage_log.h"
#include "server/validation.h"
#include "temp_store_test.h"

namespace fusetune {
namespace {

class TunerTest : public TempStoreTest {};

TEST_F(TunerTest, SecondRunAnswersFromTheCacheWithoutMeasuring) {
  Graph g = ParseRelay(kSeed, "seed.relay");
  db::Database database(path_.string());
  db::Cache store(database);
  ModelBackend backend;
  TuneReport first = Tune(g, {}, store, backend);
  ASSERT_EQ(first.regions.size(), 1u);
  EXPECT_FALSE(first.regions[0].cached);
  EXPECT_GT(first.candidates_measured, 0);
  // Under the bytes model, fusing all three saves the most traffic.
  ASSERT_EQ(first.regions[0].plan.size(), 1u);
  EXPECT_EQ(first.regions[0].plan[0].nodes.size(), 3u);
  EXPECT_LE(first.regions[0].tuned_us, first.regions[0].greedy_us);
  EXPECT_LE(first.regions[0].tuned_us, first.regions[0].unfused_us);
  EXPECT_TRUE(first.totals_measured);

  const int jobs_after_first = backend.jobs_run;
  TuneReport second = Tune(g, {}, store, backend);
  EXPECT_EQ(backend.jobs_run, jobs_after_first) << "a cached run must not measure";
  ASSERT_EQ(second.regions.size(), 1u);
  EXPECT_TRUE(second.regions[0].cached);
  EXPECT_EQ(second.candidates_measured, 0);
  EXPECT_EQ(second.regions[0].plan[0].nodes, first.regions[0].plan[0].nodes);
  EXPECT_DOUBLE_EQ(second.total_tuned_us, first.regions[0].tuned_us);
}

// Three identical element-wise blocks separated by reductions' opaque neighbours (softmax), so
// each block is its own region with the same canonical form.
const char* kThreeBlocks = R"(fn (%x: Tensor[(8, 64), float32]) {
  %0 = exp(%x);
  %1 = negative(%0);
  %2 = nn.softmax(%1);
  %3 = exp(%2);
  %4 = negative(%3);
  %5 = nn.softmax(%4);
  %6 = exp(%5);
  %7 = negative(%6);
  nn.softmax(%7)
})";

TEST_F(TunerTest, IdenticalLayersShareOneSignatureAndAreTunedOnce) {
  Graph g = ParseRelay(kThreeBlocks, "layers.relay");
  db::Database database(path_.string());
  db::Cache store(database);
  ModelBackend backend;
  SearchOptions o;
  o.never_fuse_ops = {"nn.softmax"};  // keep the blocks apart
  o.schedules_per_group = 1;          // count groups, whatever knobs the templates offer
  o.schedule_budget = 0;              // and no schedule search beyond them
  TuneOptions options;
  options.search = o;
  TuneReport r = Tune(g, options, store, backend);
  std::set<std::string> sigs;
  int blocks = 0;
  for (const auto& region : r.regions)
    if (region.ops == std::vector<std::string>{"exp", "negative"}) {
      ++blocks;
      sigs.insert(region.signature);
    }
  EXPECT_EQ(blocks, 3);
  EXPECT_EQ(sigs.size(), 1u);
  // Measured: exp, negative, {exp, negative}, softmax (each once), plus one validation per
  // distinct region (2 signatures) and the whole graph.
  EXPECT_EQ(r.candidates_measured, 4);
}

TEST_F(TunerTest, AFailingFusedKernelIsRecordedInvalidAndTheSearchCompletes) {
  Graph g = ParseRelay(kSeed, "seed.relay");
  db::Database database(path_.string());
  db::Cache store(database);
  ModelBackend backend;
  backend.broken = {{"nn.batch_matmul", "ones_like", "where"}};
  TuneReport r = Tune(g, {}, store, backend);
  ASSERT_EQ(r.regions.size(), 1u);
  for (const PlanGroup& pg : r.regions[0].plan)
    EXPECT_LT(pg.nodes.size(), 3u) << "a broken group was chosen";
  db::MeasurementFilter only_invalid;
  only_invalid.status = db::MeasurementStatus::kInvalid;
  auto invalid = store.ListMeasurements(only_invalid);
  ASSERT_FALSE(invalid.empty());
  EXPECT_EQ(invalid[0].reason, "crashed with signal 11");
}

TEST_F(TunerTest, NeverFuseKeepsAnOpAloneAndDoesNotOverwriteTheStoredPlan) {
  Graph g = ParseRelay(kSeed, "seed.relay");
  db::Database database(path_.string());
  db::Cache store(database);
  ModelBackend backend;
  Tune(g, {}, store, backend);
  TuneOptions options;
  options.search.never_fuse_ops = {"where"};
  TuneReport r = Tune(g, options, store, backend);
  // `where` can no longer join a group, so it is a region of its own beside {%0, %1}.
  ASSERT_EQ(r.regions.size(), 2u);
  int where_groups = 0;
  for (const RegionReport& region : r.regions) {
    EXPECT_FALSE(region.cached) << "no stored plan fits a region shape first seen now";
    for (const PlanGroup& pg : region.plan) {
      for (ValueId v : pg.nodes) {
        if (g.value(v).op->name != "where") continue;
        ++where_groups;
        EXPECT_EQ(pg.nodes.size(), 1u);
      }
    }
  }
  EXPECT_EQ(where_groups, 1);
  for (const PlanGroup& pg : r.tuned_plan.groups)
    if (pg.nodes.size() > 1) {
      EXPECT_EQ(g.value(pg.nodes.back()).op->name, "ones_like");
    }
  // The unrestricted plan is still the one stored.
  TuneReport again = Tune(g, {}, store, backend);
  EXPECT_TRUE(again.regions[0].cached);
  EXPECT_EQ(again.regions[0].plan.size(), 1u);
}

// A graph of several regions is timed whole at the end; when that one job fails (a 12-layer model
// passed the sandbox's time limit under load), the regions' plans are already stored and the tune
// reports the sums of their figures instead of failing.
TEST_F(TunerTest, AWholeGraphThatCannotBeTimedLeavesTheRegionsSums) {
  Graph g = ParseRelay(kSeed, "seed.relay");
  db::Database database(path_.string());
  db::Cache store(database);
  ModelBackend backend;
  backend.adjust = [&](const MeasureJob&, const Plan& plan, PlanResult& t) {
    size_t nodes = 0;
    for (const PlanGroup& pg : plan.groups) nodes += pg.nodes.size();
    if (nodes == 3) {  // only the whole graph has all three nodes outside one region
      t.ok = false;
      t.reason = "timed out after 120000 ms";
    }
  };
  TuneOptions options;
  options.search.never_fuse_ops = {"where"};
  TuneReport r = Tune(g, options, store, backend);
  ASSERT_EQ(r.regions.size(), 2u);
  EXPECT_FALSE(r.totals_measured);
  EXPECT_NE(r.total_decision.find("timed out after 120000 ms"), std::string::npos)
      << r.total_decision;
  double tuned_sum = 0;
  for (const RegionReport& region : r.regions) tuned_sum += region.tuned_us;
  EXPECT_DOUBLE_EQ(r.total_tuned_us, tuned_sum);
  EXPECT_GT(r.total_tuned_us, 0);
}

// Every per-request control, with the unrestricted plan (everything fused) already stored: the
// answer honours the control, comes from the stored measurements, and the stored plan stays.
// (A cached plan used to answer a request that forbade its group.)
TEST_F(TunerTest, EveryControlIsHonouredWithAWarmCacheAndLeavesTheStoredPlan) {
  Graph g = ParseRelay(kSeed, "seed.relay");
  db::Database database(path_.string());
  db::Cache store(database);
  ModelBackend backend;
  TuneReport cold = Tune(g, {}, store, backend);
  ASSERT_EQ(cold.regions.size(), 1u);
  ASSERT_EQ(cold.regions[0].plan.size(), 1u) << "the bytes model fuses the seed";
  const std::vector<PlanGroup> fused = cold.regions[0].plan;

  std::vector<std::pair<std::string, SearchOptions>> controls(5);
  controls[0].first = "--never-fuse where";
  controls[0].second.never_fuse_ops = {"where"};
  controls[1].first = "--never-fuse-node %1";
  controls[1].second.never_fuse_nodes = {"1"};
  controls[2].first = "--forbid %0,%1,%2";
  controls[2].second.forbidden_groups = {{"0", "1", "2"}};
  controls[3].first = "--max-group 2";
  controls[3].second.max_group_size = 2;
  controls[4].first = "--max-args 3";
  controls[4].second.max_kernel_args = 3;
  for (const auto& [name, search] : controls) {
    TuneOptions options;
    options.search = search;
    // Without the schedule search, whose budget a narrower request may spend on other schedules.
    options.search.schedule_budget = 0;
    TuneReport r = Tune(g, options, store, backend);
    const RequestPolicy policy(g, search);
    std::string why;
    EXPECT_TRUE(policy.Honours(r.tuned_plan.groups, &why)) << name << ": " << why;
    int fused_groups = 0;
    for (const RegionReport& region : r.regions) {
      EXPECT_FALSE(region.cached) << name << ": the stored plan does not honour it";
      EXPECT_TRUE(policy.Honours(region.plan, &why)) << name << ": " << why;
      for (const PlanGroup& pg : region.plan) fused_groups += pg.nodes.size() > 1;
    }
    EXPECT_EQ(r.candidates_measured, 0) << name << ": every allowed group was measured cold";
    EXPECT_GT(r.measurements_reused, 0) << name;
    // Pinning %1 leaves no convex group in the seed; every other control leaves one to fuse.
    if (name != "--never-fuse-node %1") {
      EXPECT_GE(fused_groups, 1) << name;
    }

    TuneReport after = Tune(g, {}, store, backend);
    ASSERT_EQ(after.regions.size(), 1u);
    EXPECT_TRUE(after.regions[0].cached) << name;
    EXPECT_EQ(after.regions[0].plan.size(), 1u) << name << ": the stored plan was overwritten";
    EXPECT_EQ(after.regions[0].plan[0].nodes, fused[0].nodes) << name;
    std::vector<std::string> missing;
    TuneReport looked = LookupCached(g, {}, store, backend.TargetFingerprint(), &missing);
    EXPECT_TRUE(missing.empty()) << name;
    EXPECT_EQ(looked.regions[0].plan[0].nodes, fused[0].nodes) << name;
    // A lookup under the control finds no plan it may use, rather than the forbidden one.
    missing.clear();
    LookupCached(g, search, store, backend.TargetFingerprint(), &missing);
    EXPECT_FALSE(missing.empty()) << name;
  }
}

TEST_F(TunerTest, AControlTheStoredPlanHonoursIsAnsweredFromTheCache) {
  Graph g = ParseRelay(kSeed, "seed.relay");
  db::Database database(path_.string());
  db::Cache store(database);
  ModelBackend backend;
  Tune(g, {}, store, backend);  // stores [%0 %1 %2]
  const int jobs = backend.jobs_run;
  TuneOptions options;
  options.search.forbidden_groups = {{"1", "2"}};  // a group the stored plan does not use
  TuneReport r = Tune(g, options, store, backend);
  EXPECT_EQ(backend.jobs_run, jobs) << "the stored plan is the best of the narrower space too";
  ASSERT_EQ(r.regions.size(), 1u);
  EXPECT_TRUE(r.regions[0].cached);
  ASSERT_EQ(r.regions[0].plan.size(), 1u);
  EXPECT_EQ(r.regions[0].plan[0].nodes.size(), 3u);
}

TEST_F(TunerTest, AWiderRequestSearchesInsteadOfReusingTheDefaultPlan) {
  Graph g = ParseRelay(kSeed, "seed.relay");
  db::Database database(path_.string());
  db::Cache store(database);
  ModelBackend backend;
  Tune(g, {}, store, backend);
  TuneOptions wider;
  wider.search.max_group_size = 16;
  TuneReport r = Tune(g, wider, store, backend);
  EXPECT_FALSE(r.regions[0].cached);
  EXPECT_EQ(r.candidates_measured, 0) << "the seed has no group of more than 8 ops";
  EXPECT_GT(r.measurements_reused, 0);
}

TEST_F(TunerTest, EveryJobCarriesTheRequestsThreadsAndTiming) {
  Graph g = ParseRelay(kSeed, "seed.relay");
  db::Database database(path_.string());
  db::Cache store(database);
  ModelBackend backend;
  TuneOptions options;
  options.search.threads = 3;
  options.search.budget = 1;  // so the target is calibrated too
  options.timing.repeat = 7;
  options.timing.min_repeat_ms = 1.5;
  Tune(g, options, store, backend);
  std::set<char> kinds;  // the first letter of the first plan's name
  for (const MeasureJob& job : backend.seen) {
    EXPECT_EQ(job.threads, 3);
    EXPECT_EQ(job.timing.repeat, 7);
    EXPECT_DOUBLE_EQ(job.timing.min_repeat_ms, 1.5);
    kinds.insert(job.plans.at(0).name.at(0));
  }
  // Calibration, candidate schedules ("s0", ...) and validation (plans named "greedy", "unfused"
  // and "tuned", rotated per round) all went through.
  EXPECT_TRUE(kinds.count('c') && kinds.count('s') && kinds.count('g') && kinds.count('u'));
}

TEST_F(TunerTest, BudgetPrunesByTheCostModelAndSaysHowMany) {
  const char* text = R"(fn (%x: Tensor[(64, 64), float32]) {
  %0 = exp(%x);
  %1 = negative(%0);
  %2 = abs(%1);
  %3 = sqrt(%2);
  %4 = exp(%3);
  negative(%4)
})";
  Graph g = ParseRelay(text, "chain.relay");
  db::Database database(path_.string());
  db::Cache store(database);
  ModelBackend backend;
  TuneOptions options;
  options.search.budget = 2;
  options.search.schedules_per_group = 1;  // count groups, whatever knobs the templates offer
  options.search.schedule_budget = 0;      // and no schedule search beyond them
  TuneReport r = Tune(g, options, store, backend);
  EXPECT_GT(r.pruned, 0);
  EXPECT_EQ(r.regions[0].pruned, r.pruned);
  // Baselines are always measured: 4 distinct single ops (exp and negative occur twice, with
  // one signature each) and the greedy group of all six. The budget allows 2 more.
  EXPECT_EQ(r.candidates_measured, 4 + 1 + 2);
}

// ---- decisions against noise (server/validation.h) ----

// Whether every group of `plan` is one op: the unfused plan.
bool EachOpAlone(const Plan& plan) {
  return std::all_of(plan.groups.begin(), plan.groups.end(),
                     [](const PlanGroup& pg) { return pg.nodes.size() == 1; });
}

// A validation's (or the whole graph's) round: the unfused slot is what a schedule duel
// (server/schedule_duels.h), which also names its plans tuned and greedy, never times.
bool IsValidationJob(const MeasureJob& job) {
  bool unfused = false;
  for (const JobPlan& p : job.plans) {
    if (p.name != "tuned" && p.name != "greedy" && p.name != "unfused") return false;
    unfused |= p.name == "unfused";
  }
  return unfused;
}

std::string StoredPlan(db::Cache& store) {
  const auto plans = store.ListBestPlans();
  return plans.size() == 1 ? plans[0].chosen + " " + db::GroupsToJson(plans[0].groups) : "none";
}

TEST_F(TunerTest, TheDecisionItsMarginAndRoundsAreReportedAndStored) {
  Graph g = ParseRelay(kSeed, "seed.relay");
  db::Database database(path_.string());
  db::Cache store(database);
  ModelBackend backend;
  const TuneReport r = Tune(g, {}, store, backend);
  ASSERT_EQ(r.regions.size(), 1u);
  EXPECT_GE(r.regions[0].rounds, kMinRounds);
  EXPECT_NE(r.regions[0].decision.find(r.regions[0].chosen), std::string::npos)
      << r.regions[0].decision;
  const auto stored = store.ListBestPlans();
  ASSERT_EQ(stored.size(), 1u);
  EXPECT_EQ(stored[0].decision, r.regions[0].decision);
  EXPECT_EQ(stored[0].rounds.value_or(0), r.regions[0].rounds);
  ASSERT_TRUE(stored[0].margin.has_value());
  EXPECT_GT(*stored[0].margin, 0);
  // The cached answer carries the stored decision.
  const TuneReport cached = Tune(g, {}, store, backend);
  EXPECT_EQ(cached.regions[0].decision, r.regions[0].decision);
}

TEST_F(TunerTest, APlanTrulyTwiceAsFastIsChosenBeyondNoise) {
  Graph g = ParseRelay(kSeed, "seed.relay");
  db::Database database(path_.string());
  db::Cache store(database);
  ModelBackend backend;
  // Kernels of one op run 4x faster than the model says: unfused is the fastest plan by far.
  backend.adjust = [](const MeasureJob&, const Plan& plan, PlanResult& t) {
    if (EachOpAlone(plan)) t.median_us *= 0.25;
  };
  const TuneReport r = Tune(g, {}, store, backend);
  ASSERT_EQ(r.regions.size(), 1u);
  EXPECT_EQ(r.regions[0].chosen, "unfused") << r.regions[0].decision;
  EXPECT_NE(r.regions[0].decision.find("beyond noise (5 of 5 rounds)"), std::string::npos)
      << r.regions[0].decision;
  EXPECT_EQ(r.regions[0].rounds, 5);
  EXPECT_EQ(store.ListBestPlans().at(0).chosen, "unfused");
}

TEST_F(TunerTest, ADisturbedValidationRoundDoesNotChangeTheStoredPlan) {
  Graph g = ParseRelay(kSeed, "seed.relay");
  std::string undisturbed;
  int undisturbed_rounds = 0;
  {
    db::Database database(path_.string() + ".base");
    db::Cache store(database);
    ModelBackend backend;
    undisturbed_rounds = Tune(g, {}, store, backend).regions.at(0).rounds;
    undisturbed = StoredPlan(store);
  }
  for (const char* suffix : {".base", ".base-wal", ".base-shm"})
    std::filesystem::remove(path_.string() + suffix);
  ASSERT_NE(undisturbed, "none");
  // Round 2 of validation: every plan of the job 3x slower but one, the plan named `spared`
  // (a burst of load hits all but one plan), or only `hit` 3x slower.
  for (const std::string name : {"greedy", "unfused", "tuned"}) {
    for (bool spare : {false, true}) {
      SCOPED_TRACE(fmt::format("{} {}", spare ? "all but" : "only", name));
      std::filesystem::remove(path_);
      db::Database database(path_.string());
      db::Cache store(database);
      ModelBackend backend;
      int validation_jobs = 0;
      backend.adjust = [&](const MeasureJob& job, const Plan& plan, PlanResult& t) {
        if (!IsValidationJob(job)) return;
        if (plan.name == job.plans.front().name)
          ++validation_jobs;  // counted once per job, at its first plan
        if (validation_jobs == 2 && ((plan.name == name) != spare)) t.median_us *= 3;
      };
      const TuneReport r = Tune(g, {}, store, backend);
      EXPECT_EQ(StoredPlan(store), undisturbed) << r.regions.at(0).decision;
      EXPECT_LE(r.regions.at(0).rounds, kMaxRounds);
      EXPECT_GE(r.regions.at(0).rounds, undisturbed_rounds);
    }
  }
}

// A region that stands for several of the graph's regions gets more rounds before its decision
// settles (kMaxRoundsRepeated): the unfused plan loses the first two rounds, then wins every
// round 4x. Alone, the block is settled after those two rounds (7 wins of 9 could not pass the
// sign test) and greedy's fused plan is kept; standing for three blocks it wins 9 of 11.
TEST_F(TunerTest, ARegionOfARepeatedSignatureGetsMoreRoundsBeforeItsDecision) {
  const char* one_block = R"(fn (%x: Tensor[(8, 64), float32]) {
  %0 = exp(%x);
  %1 = negative(%0);
  nn.softmax(%1)
})";
  TuneOptions options;
  options.search.never_fuse_ops = {"nn.softmax"};
  options.search.schedules_per_group = 1;
  options.search.schedule_budget = 0;
  for (const char* text : {one_block, kThreeBlocks}) {
    const bool repeated = text == kThreeBlocks;
    SCOPED_TRACE(repeated ? "three blocks" : "one block");
    std::filesystem::remove(path_);
    db::Database database(path_.string());
    db::Cache store(database);
    ModelBackend backend;
    int block_rounds = 0;
    backend.adjust = [&](const MeasureJob& job, const Plan& plan, PlanResult& t) {
      const bool block = job.graph_text.find("softmax") == std::string::npos;
      if (IsValidationJob(job) && block && plan.name == job.plans.front().name)
        ++block_rounds;  // once per job
      // The jobs after the blocks' rounds (the whole graph's) see the same: unfused 4x faster.
      if (EachOpAlone(plan) && block_rounds > 2) t.median_us *= 0.25;
    };
    const TuneReport r = Tune(ParseRelay(text, "blocks.relay"), options, store, backend);
    int blocks = 0;
    for (const RegionReport& region : r.regions) {
      if (region.ops != std::vector<std::string>{"exp", "negative"}) continue;
      ++blocks;
      EXPECT_EQ(region.chosen, repeated ? "unfused" : "greedy") << region.decision;
      EXPECT_EQ(region.rounds, repeated ? 11 : 2) << region.decision;
    }
    EXPECT_EQ(blocks, repeated ? 3 : 1);
    EXPECT_EQ(block_rounds, repeated ? 11 : 2) << "one block's rounds stand for all three";
  }
}

// ---- baselines on default schedules: searched schedules must win in sequence ----

// Whether every group of `plan` (over the job's graph) runs its template's default schedule.
bool OnDefaults(const MeasureJob& job, const Plan& plan) {
  const Graph g = ParseRelay(job.graph_text, "job");
  for (const PlanGroup& pg : plan.groups)
    if (pg.schedule != ScheduleSpace(g, *AnalyzeGroup(g, pg.nodes), job.threads).front())
      return false;
  return true;
}

// The nodes in `plan`'s groups.
size_t PlanNodes(const Plan& plan) {
  size_t n = 0;
  for (const PlanGroup& pg : plan.groups) n += pg.nodes.size();
  return n;
}

// Every non-default schedule measures 2x faster group by group (in its duel too), and runs 20%
// slower in the validation's plans (as the BERT layer's searched schedules did at 2 threads): the
// tuned plan is greedy's grouping on searched schedules, and greedy on the defaults beats it and
// is stored.
TEST_F(TunerTest, SearchedSchedulesThatWinAloneAndLoseInSequenceLeaveGreedyOnDefaults) {
  Graph g = ParseRelay(kSeed, "seed.relay");
  db::Database database(path_.string());
  db::Cache store(database);
  ModelBackend backend;
  backend.adjust = [](const MeasureJob& job, const Plan& plan, PlanResult& t) {
    if (OnDefaults(job, plan)) return;
    t.median_us *= IsValidationJob(job) ? 1.2 : 0.5;
  };
  const TuneReport r = Tune(g, {}, store, backend);
  ASSERT_EQ(r.regions.size(), 1u);
  const RegionReport& region = r.regions[0];
  EXPECT_EQ(region.chosen, "greedy") << region.decision;
  EXPECT_NE(region.decision.find("greedy on defaults 1.20× vs searched schedules, beyond noise"),
            std::string::npos)
      << region.decision;
  const Plan greedy = WithDefaultSchedules(g, GreedyPlan(g), 1);
  EXPECT_TRUE(SamePlan(Plan{"tuned", region.plan}, greedy)) << PlanText(g, region.plan);
  EXPECT_TRUE(SamePlan(r.tuned_plan, greedy));
  // The searched schedule was measured faster alone: the test exercised the comparison.
  EXPECT_GT(region.tuned_us, 0);
  EXPECT_LT(region.greedy_us, region.unfused_us);
  int validation_plans = 0;
  for (const MeasureJob& job : backend.seen)
    if (IsValidationJob(job)) validation_plans = std::max<int>(validation_plans, job.plans.size());
  EXPECT_EQ(validation_plans, 3) << "tuned, greedy on defaults and unfused are three plans";
  const auto stored = store.ListBestPlans();
  ASSERT_EQ(stored.size(), 1u);
  EXPECT_EQ(stored[0].chosen, "greedy");
  EXPECT_EQ(stored[0].groups.at(0).schedule, greedy.groups.at(0).schedule.ToString());
}

// Two regions each win on searched schedules timed alone (2x, and fused 4x), and the whole graph
// on those schedules runs 4x slower than greedy on the defaults: the stored plans fall back to
// greedy's, so the plan served for the graph is the one that won in sequence. Without the whole
// graph's loss, the regions' choices stay.
TEST_F(TunerTest, AWholeGraphThatLosesToGreedyOnDefaultsSendsTheRegionsBackToGreedy) {
  const char* text = R"(fn (%x: Tensor[(16, 64), float32]) {
  %0 = exp(%x);
  %1 = negative(%0);
  %2 = nn.softmax(%1);
  %3 = nn.softmax(%2);
  %4 = exp(%3);
  negative(%4)
})";
  Graph g = ParseRelay(text, "two.relay");
  const Plan greedy = WithDefaultSchedules(g, GreedyPlan(g), 1);
  for (bool whole_loses : {false, true}) {
    SCOPED_TRACE(whole_loses ? "the whole graph loses" : "the whole graph wins");
    std::filesystem::remove(path_);
    db::Database database(path_.string());
    db::Cache store(database);
    ModelBackend backend;
    backend.adjust = [&](const MeasureJob& job, const Plan& plan, PlanResult& t) {
      if (OnDefaults(job, plan)) return;
      const bool whole = PlanNodes(plan) == 6;  // only the whole graph's plans hold all six ops
      t.median_us *= whole && whole_loses ? 8.0 : 0.5;
    };
    const TuneReport r = Tune(g, {}, store, backend);
    ASSERT_EQ(r.regions.size(), 2u);
    ASSERT_TRUE(r.totals_measured) << r.total_decision;
    const auto stored = store.ListBestPlans();
    ASSERT_EQ(stored.size(), 2u);
    const auto replaced = store.ListReplacedPlans();
    if (!whole_loses) {
      EXPECT_EQ(r.total_chosen, "tuned") << r.total_decision;
      for (const RegionReport& region : r.regions) EXPECT_EQ(region.chosen, "tuned");
      EXPECT_FALSE(SamePlan(r.tuned_plan, greedy));
      EXPECT_TRUE(replaced.empty());
      continue;
    }
    EXPECT_EQ(r.total_chosen, "greedy") << r.total_decision;
    EXPECT_NE(r.total_decision.find("greedy 4.00× vs tuned, beyond noise (5 of 5 rounds)"),
              std::string::npos)
        << r.total_decision;
    EXPECT_NE(r.total_decision.find("2 region plan(s) fell back to greedy"), std::string::npos)
        << r.total_decision;
    EXPECT_EQ(r.total_decision.find("not all"), std::string::npos) << r.total_decision;
    EXPECT_TRUE(SamePlan(r.tuned_plan, greedy)) << PlanText(g, r.tuned_plan.groups);
    for (const RegionReport& region : r.regions) {
      EXPECT_EQ(region.chosen, "greedy");
      EXPECT_NE(region.decision.find("tuned chosen; in the whole graph: greedy 4.00× vs tuned"),
                std::string::npos)
          << region.decision;
      EXPECT_EQ(region.rounds, 5);
    }
    for (const db::BestPlanRecord& p : stored) EXPECT_EQ(p.chosen, "greedy");
    ASSERT_EQ(replaced.size(), 2u) << "each region's first choice is kept in the history";
    for (const db::ReplacedPlanRecord& p : replaced) {
      EXPECT_EQ(p.plan.chosen, "tuned");
      EXPECT_EQ(p.reason, "whole graph: greedy 4.00× faster in sequence");
    }
    // Served from the store: the plan that won in sequence, nothing measured.
    const int jobs = backend.jobs_run;
    const TuneReport again = Tune(g, {}, store, backend);
    EXPECT_EQ(backend.jobs_run, jobs);
    EXPECT_TRUE(SamePlan(again.tuned_plan, greedy)) << PlanText(g, again.tuned_plan.groups);
  }
}

// Q, K and V projections of one input with their bias adds, summed (a connected region either way).
const char* kQkv =
    R"(fn (%x: Tensor[(16, 32), float32], %wq: Tensor[(32, 32), float32], %bq: Tensor[(32,), float32],
    %wk: Tensor[(32, 32), float32], %bk: Tensor[(32,), float32], %wv: Tensor[(32, 32), float32],
    %bv: Tensor[(32,), float32]) {
  %0 = nn.dense(%x, %wq);
  %1 = add(%0, %bq);
  %2 = nn.dense(%x, %wk);
  %3 = add(%2, %bk);
  %4 = nn.dense(%x, %wv);
  %5 = add(%4, %bv);
  (%1, %3, %5)
})";

// A plan whose one group is of a kind no rule makes (`is_kind`) is searched, stored and served
// from a reopened file, its groups mapped back onto the graph; a request that switches the kind
// off (`off`) searches a space without it and leaves the stored plan alone.
void ExpectAKindStoredServedAndSwitchable(const std::filesystem::path& path, const Graph& g,
                                          size_t group_nodes, const TuneOptions& off,
                                          bool (*is_kind)(const FusedGroup&)) {
  auto any_of_kind = [&](const std::vector<PlanGroup>& plan) {
    for (const PlanGroup& pg : plan)
      if (is_kind(*AnalyzeGroup(g, pg.nodes))) return true;
    return false;
  };
  std::vector<PlanGroup> stored;
  {
    db::Database database(path.string());
    db::Cache store(database);
    ModelBackend backend;
    TuneReport r = Tune(g, {}, store, backend);
    ASSERT_EQ(r.regions.size(), 1u);
    ASSERT_EQ(r.regions[0].plan.size(), 1u);
    EXPECT_EQ(r.regions[0].plan[0].nodes.size(), group_nodes);
    EXPECT_TRUE(any_of_kind(r.regions[0].plan));
    stored = r.regions[0].plan;
  }
  db::Database database(path.string());
  db::Cache store(database);
  ModelBackend backend;
  TuneReport again = Tune(g, {}, store, backend);
  EXPECT_EQ(backend.jobs_run, 0);
  ASSERT_EQ(again.regions.size(), 1u);
  EXPECT_TRUE(again.regions[0].cached);
  ASSERT_EQ(again.regions[0].plan.size(), 1u);
  EXPECT_EQ(again.regions[0].plan[0].nodes, stored[0].nodes);
  EXPECT_EQ(again.regions[0].plan[0].schedule, stored[0].schedule);
  ValidatePlan(g, Plan{"tuned", again.regions[0].plan});

  TuneReport apart = Tune(g, off, store, backend);
  for (const RegionReport& region : apart.regions) {
    EXPECT_FALSE(region.cached);
    EXPECT_FALSE(any_of_kind(region.plan));
  }
  TuneReport after = Tune(g, {}, store, backend);
  ASSERT_EQ(after.regions.size(), 1u);
  EXPECT_TRUE(after.regions[0].cached);
  EXPECT_EQ(after.regions[0].plan[0].nodes, stored[0].nodes);
}

TEST_F(TunerTest, AHorizontalPlanIsStoredAndServedAndNoHorizontalAvoidsIt) {
  // Under the bytes model one kernel reading %x once beats three.
  TuneOptions off;
  off.search.horizontal = false;
  ExpectAKindStoredServedAndSwitchable(path_, ParseRelay(kQkv, "qkv.relay"), 6, off,
                                       [](const FusedGroup& g) { return g.Horizontal(); });
}

const char* kAttention =
    R"(fn (%q: Tensor[(4, 32, 16), float32], %k: Tensor[(4, 48, 16), float32],
    %vt: Tensor[(4, 16, 48), float32], %mask: Tensor[(1, 32, 48), float32]) {
  %0 = nn.batch_matmul(%q, %k);
  %1 = multiply(%0, 0.25f);
  %2 = add(%1, %mask);
  %3 = nn.softmax(%2, axis=-1);
  nn.batch_matmul(%3, %vt)
})";

TEST_F(TunerTest, AnAttentionPlanIsStoredAndServedAndNoAttentionAvoidsIt) {
  // Under the bytes model one kernel that never writes the scores beats every split.
  TuneOptions off;
  off.search.attention = false;
  ExpectAKindStoredServedAndSwitchable(path_, ParseRelay(kAttention, "attention.relay"), 5, off,
                                       [](const FusedGroup& g) { return g.Attention(); });
}

TEST_F(TunerTest, AFoldedNormPlanIsStoredAndServedAndNoNormFoldAvoidsIt) {
  // Under the bytes model one kernel that never writes the normalised rows beats two.
  const char* norm_dense =
      R"(fn (%x: Tensor[(64, 96), float32], %g: Tensor[(96), float32], %b: Tensor[(96), float32],
    %w: Tensor[(80, 96), float32]) {
  %0 = nn.layer_norm(%x, %g, %b);
  nn.dense(%0, %w)
})";
  TuneOptions off;
  off.search.norm_fold = false;
  ExpectAKindStoredServedAndSwitchable(path_, ParseRelay(norm_dense, "norm_dense.relay"), 2, off,
                                       [](const FusedGroup& g) { return g.norm >= 0; });
}

TEST_F(TunerTest, ARecomputingPlanIsStoredAndServedAndNoRecomputeAvoidsIt) {
  // A layer norm written op by op but for its variance, a sum times a constant that is not 1/n
  // (so no row kernel of ir/norm_pattern.h takes it): x - mean is read by the square and by the
  // division. Under the bytes model recomputing it in both kernels (never writing it) beats
  // storing it once.
  const Graph g = ParseRelay(
      R"(fn (%x: Tensor[(64, 96), float32], %g: Tensor[(96), float32], %b: Tensor[(96), float32]) {
  %0 = mean(%x, axis=[1], keepdims=True);
  %1 = subtract(%x, %0);
  %2 = multiply(%1, %1);
  %3 = sum(%2, axis=[1], keepdims=True);
  %4 = multiply(%3, 0.0105f);
  %5 = add(%4, 1e-05f);
  %6 = sqrt(%5);
  %7 = divide(%1, %6);
  %8 = multiply(%7, %g);
  add(%8, %b)
})",
      "layer_norm_ops.relay");
  const ValueId sub = *g.FindByName("1");
  auto recomputed = [](const std::vector<RegionReport>& regions) {
    std::vector<PlanGroup> all;
    for (const RegionReport& r : regions) all.insert(all.end(), r.plan.begin(), r.plan.end());
    std::vector<ValueId> out;
    for (const std::vector<ValueId>& nodes : RecomputedNodes(all))
      out.insert(out.end(), nodes.begin(), nodes.end());
    return out;
  };
  std::vector<RegionReport> stored;
  {
    db::Database database(path_.string());
    db::Cache store(database);
    ModelBackend backend;
    TuneReport r = Tune(g, {}, store, backend);
    EXPECT_EQ(recomputed(r.regions), (std::vector<ValueId>{sub, sub})) << "in both of its readers";
    bool named = false;
    for (const RegionReport& region : r.regions)
      for (const PlanChange& c : region.changes) named |= c.fusion == "recomputes %1";
    EXPECT_TRUE(named);
    stored = r.regions;
  }
  db::Database database(path_.string());
  db::Cache store(database);
  ModelBackend backend;
  TuneReport again = Tune(g, {}, store, backend);
  EXPECT_EQ(backend.jobs_run, 0);
  ASSERT_EQ(again.regions.size(), stored.size());
  for (size_t i = 0; i < stored.size(); ++i) {
    EXPECT_TRUE(again.regions[i].cached);
    ASSERT_EQ(again.regions[i].plan.size(), stored[i].plan.size());
    for (size_t gi = 0; gi < stored[i].plan.size(); ++gi)
      EXPECT_EQ(again.regions[i].plan[gi].nodes, stored[i].plan[gi].nodes);
  }
  std::vector<PlanGroup> whole;
  for (const RegionReport& r : again.regions)
    whole.insert(whole.end(), r.plan.begin(), r.plan.end());
  ValidatePlan(g, Plan{"tuned", whole});

  TuneOptions off;
  off.search.recompute = false;
  TuneReport apart = Tune(g, off, store, backend);
  EXPECT_TRUE(recomputed(apart.regions).empty());
  // The stored plan that recomputes is not served.
  for (const RegionReport& region : apart.regions) {
    if (region.nodes.size() > 1) {
      EXPECT_FALSE(region.cached);
    }
  }
  TuneReport after = Tune(g, {}, store, backend);
  for (const RegionReport& region : after.regions) EXPECT_TRUE(region.cached);
  EXPECT_EQ(recomputed(after.regions), (std::vector<ValueId>{sub, sub}));
}

}  // namespace
}  // namespace fusetune
