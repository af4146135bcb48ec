// Schedule duels (server/schedule_duels.h): a group's fastest schedule that the unpaired rule
// left out is timed against the default in paired rounds, and kept only if it wins them. The
// backend times kernels by a bytes model in which one schedule is made faster, in the candidate
// jobs, in the duel's rounds, or in both, so every outcome can be asserted.
#include <array>
#include <filesystem>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "db/cache.h"
#include "db/database.h"
#include "ir/bind_params.h"
#include "ir/fusion.h"
#include "ir/matmul_schedule.h"
#include "ir/schedule_space.h"
#include "ir/text/relay_parser.h"
#include "model_backend.h"
#include "server/tuner.h"
#include "temp_store_test.h"

namespace fusetune {
namespace {

const char* kChain = R"(fn (%x: Tensor[(64, 64), float32]) {
  %0 = exp(%x);
  negative(%0)
})";

bool IsDuel(const MeasureJob& job) {
  bool tuned = false, unfused = false;
  for (const JobPlan& p : job.plans) {
    tuned |= p.name == "tuned";
    unfused |= p.name == "unfused";
  }
  return tuned && !unfused;
}

bool IsValidation(const MeasureJob& job) {
  for (const JobPlan& p : job.plans)
    if (p.name == "unfused") return true;
  return false;
}

// vector=8 (the schedule ranked right after the default) runs `candidate` times the default's
// time in the candidate jobs, `paired` times it in the duel's rounds and `validation` times it
// in the region's validation.
struct VectorBackend : ModelBackend {
  VectorBackend(double candidate, double paired, double validation) {
    adjust = [=](const MeasureJob& job, const Plan& plan, PlanResult& t) {
      const double factor = IsDuel(job) ? paired : IsValidation(job) ? validation : candidate;
      t.median_us = 0;
      for (size_t i = 0; i < plan.groups.size(); ++i) {
        if (plan.groups[i].schedule.Get("vector", 16) == 8) t.kernel_us[i] *= factor;
        t.median_us += t.kernel_us[i];
      }
      t.repeat = 5;
    };
  }
  int duel_jobs() const {
    int n = 0;
    for (const MeasureJob& job : seen) n += IsDuel(job);
    return n;
  }
};

class ScheduleDuels : public TempStoreTest {
 protected:
  // With 2 schedules per group: the default and vector=8, nothing else.
  TuneReport TuneChain(ModelBackend& backend, int schedules_per_group = 2) {
    db::Database database(path_.string());
    db::Cache store(database);
    TuneOptions options;
    options.search.schedule_budget = 0;
    options.search.schedules_per_group = schedules_per_group;
    return Tune(graph_, options, store, backend);
  }
  Graph graph_ = ParseRelay(kChain, "chain.relay");
};

TEST_F(ScheduleDuels, AScheduleTwoPercentFasterWinsItsDuelAndEntersThePlan) {
  VectorBackend backend(0.98, 0.98, 0.98);  // inside the unpaired rule's 3%, outside a round's 1%
  const TuneReport report = TuneChain(backend);
  ASSERT_EQ(report.duels.size(), 1u);
  const ScheduleDuel& duel = report.duels[0];
  EXPECT_TRUE(duel.won) << duel.decision;
  EXPECT_EQ(duel.schedule, "vector=8");
  EXPECT_EQ(duel.ops, (std::vector<std::string>{"exp", "negative"}));
  EXPECT_EQ(duel.rounds, 5) << "5 of 5 rounds: the fewest the sign test calls a win";
  EXPECT_NE(duel.decision.find("beyond noise (5 of 5 rounds)"), std::string::npos) << duel.decision;
  EXPECT_EQ(backend.duel_jobs(), 5);
  for (const MeasureJob& job : backend.seen)
    if (IsDuel(job)) {
      EXPECT_TRUE(job.alone) << "a decision's figures are timed alone";
      EXPECT_EQ(job.plans.size(), 2u);
    }
  ASSERT_EQ(report.regions.size(), 1u);
  ASSERT_EQ(report.regions[0].plan.size(), 1u);
  EXPECT_EQ(report.regions[0].plan[0].schedule.ToString(), "vector=8");
  EXPECT_EQ(report.regions[0].chosen, "tuned") << report.regions[0].decision;

  const auto json = nlohmann::json::parse(TuneReportToJson(graph_, "chain.relay", report));
  const auto& duels = json.at("breakdown").at("schedule_duels");
  ASSERT_EQ(duels.size(), 1u);
  EXPECT_EQ(duels[0].at("group"), duel.group);
  EXPECT_EQ(duels[0].at("schedule"), "vector=8");
  EXPECT_EQ(duels[0].at("rounds"), 5);
  EXPECT_EQ(duels[0].at("won"), true);
}

TEST_F(ScheduleDuels, ADueledScheduleIsKeptUnlessTheRegionLosesItBeyondNoise) {
  // The region's rounds see no difference (the group's gain diluted): the duel's winner stays.
  VectorBackend even(0.98, 0.98, 1.0);
  TuneReport report = TuneChain(even);
  ASSERT_EQ(report.duels.size(), 1u);
  EXPECT_TRUE(report.duels[0].won);
  EXPECT_EQ(report.regions[0].plan[0].schedule.ToString(), "vector=8");
  EXPECT_EQ(report.regions[0].chosen, "tuned");
  EXPECT_EQ(report.regions[0].decision.rfind("schedules that won their duels", 0), 0u)
      << report.regions[0].decision;
  EXPECT_NE(report.regions[0].decision.find("tuned kept"), std::string::npos);

  // In sequence the schedule loses 5%: greedy on the defaults beats it and is kept.
  std::filesystem::remove(path_);
  VectorBackend slower(0.98, 0.98, 1.05);
  report = TuneChain(slower);
  EXPECT_TRUE(report.duels[0].won);
  EXPECT_EQ(report.regions[0].chosen, "greedy") << report.regions[0].decision;
  EXPECT_EQ(report.regions[0].plan[0].schedule.ToString(), "");
}

TEST_F(ScheduleDuels, AScheduleFasterOnlyInItsCandidateJobLosesItsDuel) {
  VectorBackend backend(0.98, 1.0, 1.0);  // a lucky candidate job; the same speed when paired
  const TuneReport report = TuneChain(backend);
  ASSERT_EQ(report.duels.size(), 1u);
  EXPECT_FALSE(report.duels[0].won) << report.duels[0].decision;
  EXPECT_EQ(report.duels[0].rounds, 2) << "no win in 2 rounds: 7 more could not make one";
  EXPECT_NE(report.duels[0].decision.find("greedy kept"), std::string::npos);
  ASSERT_EQ(report.regions[0].plan.size(), 1u);
  EXPECT_EQ(report.regions[0].plan[0].schedule.ToString(), "") << "the default";
}

TEST_F(ScheduleDuels, AScheduleWithinTheRoundFloorLosesInTwoRounds) {
  VectorBackend backend(1.01, 0.995, 0.995);  // a candidate figure 1% slower is still dueled
  const TuneReport report = TuneChain(backend);
  ASSERT_EQ(report.duels.size(), 1u);
  EXPECT_FALSE(report.duels[0].won);
  EXPECT_EQ(report.duels[0].rounds, 2);
  EXPECT_EQ(backend.duel_jobs(), 2);
  EXPECT_EQ(report.regions[0].plan[0].schedule.ToString(), "");
}

TEST_F(ScheduleDuels, AScheduleSlowerBeyondTheUnpairedFloorIsNotDueled) {
  VectorBackend backend(1.04, 0.9, 0.9);
  const TuneReport report = TuneChain(backend);
  EXPECT_TRUE(report.duels.empty());
  EXPECT_EQ(backend.duel_jobs(), 0);
  EXPECT_EQ(report.regions[0].plan[0].schedule.ToString(), "");
}

TEST_F(ScheduleDuels, AScheduleTheUnpairedRulePickedIsConfirmedByItsDuel) {
  VectorBackend backend(0.9, 0.9, 0.9);
  const TuneReport report = TuneChain(backend);
  ASSERT_EQ(report.duels.size(), 1u);
  EXPECT_TRUE(report.duels[0].won);
  EXPECT_EQ(report.regions[0].plan[0].schedule.ToString(), "vector=8");
  EXPECT_EQ(report.regions[0].decision.rfind("schedules that won their duels", 0), 0u);
}

TEST_F(ScheduleDuels, AScheduleTheUnpairedRulePickedGivesWayWhenItLosesItsDuel) {
  VectorBackend backend(0.9, 1.0, 1.0);  // one lucky candidate figure, 10% ahead
  const TuneReport report = TuneChain(backend);
  ASSERT_EQ(report.duels.size(), 1u);
  EXPECT_FALSE(report.duels[0].won);
  EXPECT_EQ(report.regions[0].plan[0].schedule.ToString(), "") << "back to the default";
  EXPECT_EQ(report.regions[0].chosen, "greedy") << report.regions[0].decision;
}

// Three schedules measured per group: the default, vector=8 (ranked next) and a third. vector=8
// runs `second[phase]` times the default's time and the third `third[phase]` (phase: candidate
// jobs, duels, validation).
struct ThreeSchedulesBackend : ModelBackend {
  ThreeSchedulesBackend(std::array<double, 3> second, std::array<double, 3> third) {
    adjust = [=](const MeasureJob& job, const Plan& plan, PlanResult& t) {
      const int phase = IsDuel(job) ? 1 : IsValidation(job) ? 2 : 0;
      t.median_us = 0;
      for (size_t i = 0; i < plan.groups.size(); ++i) {
        const Schedule& s = plan.groups[i].schedule;
        if (s.Get("vector", 16) == 8)
          t.kernel_us[i] *= second[phase];
        else if (!s.ToString().empty())
          t.kernel_us[i] *= third[phase];
        t.median_us += t.kernel_us[i];
      }
      t.repeat = 5;
    };
  }
};

class RunnerUps : public ScheduleDuels {
 protected:
  static const ScheduleDuel* FusedDuel(const TuneReport& report) {
    for (const ScheduleDuel& d : report.duels)
      if (d.ops.size() == 2) return &d;
    return nullptr;
  }
};

TEST_F(RunnerUps, ARunnerUpFasterInPairedRoundsIsKeptOverTheChallenger) {
  // By the candidate figures vector=8 leads by 0.5%; paired, the third runs 3% faster than it.
  ThreeSchedulesBackend backend({0.97, 0.98, 0.98}, {0.975, 0.95, 0.95});
  const TuneReport report = TuneChain(backend, 3);
  const ScheduleDuel* duel = FusedDuel(report);
  ASSERT_NE(duel, nullptr);
  EXPECT_EQ(duel->schedule, "vector=8");
  ASSERT_FALSE(duel->runner_up.empty());
  EXPECT_NE(duel->runner_up, "vector=8");
  EXPECT_TRUE(duel->won) << duel->decision;
  EXPECT_EQ(duel->kept, duel->runner_up) << duel->decision;
  EXPECT_NE(duel->decision.find("runner-up chosen"), std::string::npos) << duel->decision;
  EXPECT_EQ(duel->rounds, 5) << "5 of 5 rounds: the fewest the sign test calls a win";
  for (const MeasureJob& job : backend.seen)
    if (IsDuel(job) && job.plans.size() == 3) {
      std::set<std::string> names;
      for (const JobPlan& p : job.plans) names.insert(p.name);
      EXPECT_EQ(names, (std::set<std::string>{"tuned", "greedy", "runner-up"}));
    }
  ASSERT_EQ(report.regions.size(), 1u);
  ASSERT_EQ(report.regions[0].plan.size(), 1u);
  EXPECT_EQ(report.regions[0].plan[0].schedule.ToString(), duel->runner_up);
  EXPECT_EQ(report.regions[0].chosen, "tuned") << report.regions[0].decision;

  const auto json = nlohmann::json::parse(TuneReportToJson(graph_, "chain.relay", report));
  bool found = false;
  for (const auto& d : json.at("breakdown").at("schedule_duels"))
    if (d.at("schedule") == "vector=8" && d.at("ops").size() == 2) {
      found = true;
      EXPECT_EQ(d.at("runner_up"), duel->runner_up);
      EXPECT_EQ(d.at("kept"), duel->runner_up);
    }
  EXPECT_TRUE(found);
}

TEST_F(RunnerUps, ARunnerUpOfTheChallengersSpeedLeavesTheChallengerKept) {
  ThreeSchedulesBackend backend({0.97, 0.95, 0.95}, {0.975, 0.95, 0.95});
  const TuneReport report = TuneChain(backend, 3);
  const ScheduleDuel* duel = FusedDuel(report);
  ASSERT_NE(duel, nullptr);
  EXPECT_FALSE(duel->runner_up.empty());
  EXPECT_TRUE(duel->won) << duel->decision;
  EXPECT_EQ(duel->kept, "vector=8") << duel->decision;
  EXPECT_EQ(report.regions[0].plan[0].schedule.ToString(), "vector=8");
}

TEST_F(RunnerUps, ARunnerUpSlowerBeyondTheUnpairedFloorIsNotTimed) {
  ThreeSchedulesBackend backend({0.97, 0.98, 0.98}, {1.01, 0.9, 0.9});  // 4% behind vector=8
  const TuneReport report = TuneChain(backend, 3);
  const ScheduleDuel* duel = FusedDuel(report);
  ASSERT_NE(duel, nullptr);
  EXPECT_TRUE(duel->runner_up.empty());
  EXPECT_EQ(duel->kept, "vector=8") << duel->decision;
  for (const MeasureJob& job : backend.seen) {
    if (IsDuel(job)) {
      EXPECT_EQ(job.plans.size(), 2u);
    }
  }
  const auto json = nlohmann::json::parse(TuneReportToJson(graph_, "chain.relay", report));
  for (const auto& d : json.at("breakdown").at("schedule_duels"))
    EXPECT_TRUE(d.at("runner_up").is_null());
}

// The fused exp+negative kernel (greedy's group) timed `fused_over_unfused` times the two
// single-op kernels together, in every job.
struct GroupingBackend : ModelBackend {
  explicit GroupingBackend(double fused_over_unfused) {
    adjust = [=](const MeasureJob&, const Plan& plan, PlanResult& t) {
      t.median_us = 0;
      for (size_t i = 0; i < plan.groups.size(); ++i) {
        if (plan.groups[i].nodes.size() == 2) t.kernel_us[i] *= 2 * fused_over_unfused;
        t.median_us += t.kernel_us[i];
      }
      t.repeat = 5;
    };
  }
};

TEST_F(ScheduleDuels, AnotherGroupingWithinTheUnpairedFloorLeavesGreedysGroupingAsTheTunedPlan) {
  // Unfused 2% faster by the candidates' figures: no evidence against the rules' grouping, so the
  // tuned slot holds greedy's; unfused, a baseline of every validation, still wins its rounds.
  GroupingBackend close(1.02);
  TuneReport report = TuneChain(close);
  EXPECT_NE(report.regions[0].decision.find("tuned = greedy"), std::string::npos)
      << report.regions[0].decision;
  EXPECT_EQ(report.regions[0].chosen, "unfused");

  // 10% faster: the DP's cover is the tuned plan.
  std::filesystem::remove(path_);
  GroupingBackend far(1.10);
  report = TuneChain(far);
  EXPECT_NE(report.regions[0].decision.find("tuned = unfused"), std::string::npos)
      << report.regions[0].decision;
  EXPECT_EQ(report.regions[0].chosen, "unfused");
}

// A dense with its bias and relu, its weights bound: every schedule of the dense's groups comes
// with a weights-packed twin (ir/matmul_schedule.h).
const char* kBoundDense = R"(fn (%x: Tensor[(32, 64), float32], %w: Tensor[(48, 64), float32],
    %b: Tensor[(48), float32]) {
  %0 = nn.dense(%x, %w);
  %1 = add(%0, %b);
  nn.relu(%1)
})";

// The default's weights-packed twin runs `twin` times the default's time in the candidate jobs,
// the duels and the validation; any other schedule of the dense `other` times it, per phase alike.
struct TwinBackend : ModelBackend {
  TwinBackend(std::array<double, 3> twin, std::array<double, 3> other) {
    adjust = [=](const MeasureJob& job, const Plan& plan, PlanResult& t) {
      const int phase = IsDuel(job) ? 1 : IsValidation(job) ? 2 : 0;
      const Graph g = ParseRelay(job.graph_text, "job");
      t.median_us = 0;
      for (size_t i = 0; i < plan.groups.size(); ++i) {
        const Schedule& s = plan.groups[i].schedule;
        const auto group = AnalyzeGroup(g, plan.groups[i].nodes);
        const Schedule def = ScheduleSpace(g, *group, 1).at(0);
        if (s.Get("mr", 0) && !(s == def))
          t.kernel_us[i] *= WeightsPackedTwin(def) == s ? twin[phase] : other[phase];
        t.median_us += t.kernel_us[i];
      }
      t.repeat = 5;
    };
  }
};

class WeightsPackedTwins : public TempStoreTest {
 protected:
  TuneReport TuneBoundDense(ModelBackend& backend, int schedules_per_group = 2) {
    db::Database database(path_.string());
    db::Cache store(database);
    TuneOptions options;
    options.search.schedule_budget = 0;
    options.search.schedules_per_group = schedules_per_group;
    return Tune(bound_, options, store, backend);
  }
  Graph bound_ = BindParams(ParseRelay(kBoundDense, "dense.relay"),
                            {{"w", Tensor(TensorType{DType::kFloat32, {48, 64}})}});
  static const ScheduleDuel* TwinDuel(const TuneReport& report) {
    for (const ScheduleDuel& d : report.duels)
      if (d.kept_unless_beaten) return &d;
    return nullptr;
  }
};

TEST_F(WeightsPackedTwins, ATwinEvenWithTheDefaultIsKeptAndMeasuredEvenWhenNotRankedSecond) {
  TwinBackend backend({1.0, 1.0, 1.0}, {1.0, 1.0, 1.0});
  const TuneReport report = TuneBoundDense(backend);
  const ScheduleDuel* duel = TwinDuel(report);
  ASSERT_NE(duel, nullptr) << "the greedy group's twin is dueled";
  EXPECT_TRUE(duel->won) << duel->decision;
  EXPECT_EQ(duel->rounds, 2) << "the default cannot win in the 7 rounds left";
  EXPECT_EQ(duel->decision.rfind("packs the weights once, kept unless the default wins: ", 0), 0u)
      << duel->decision;
  EXPECT_NE(duel->schedule.find("wpack=1"), std::string::npos);
  ASSERT_EQ(report.regions.size(), 1u);
  const RegionReport& region = report.regions[0];
  ASSERT_EQ(region.plan.size(), 1u) << "greedy's grouping: one kernel";
  EXPECT_EQ(region.plan[0].schedule.ToString(), duel->schedule);
  EXPECT_EQ(region.chosen, "tuned") << region.decision;
  EXPECT_EQ(region.decision.rfind("schedules that won their duels", 0), 0u) << region.decision;

  // Every dense group measured its twin in a candidate job, whatever the ranker put second.
  std::set<std::string> twins_measured;
  for (const MeasureJob& job : backend.seen)
    if (!IsDuel(job) && !IsValidation(job))
      for (const JobPlan& p : job.plans)
        if (p.json.find("wpack=1") != std::string::npos) twins_measured.insert(job.graph_text);
  EXPECT_GE(twins_measured.size(), 3u) << "[dense], [dense add], [dense add relu]";

  const auto json = nlohmann::json::parse(TuneReportToJson(bound_, "dense.relay", report));
  bool flagged = false;
  for (const auto& d : json.at("breakdown").at("schedule_duels"))
    flagged |= d.at("kept_unless_beaten") == true && d.at("won") == true;
  EXPECT_TRUE(flagged);
}

TEST_F(WeightsPackedTwins, ATwinSlowerInPairedRoundsGivesWayToTheDefault) {
  TwinBackend backend({1.0, 1.05, 1.0}, {1.0, 1.0, 1.0});  // 5% slower in every duel round
  const TuneReport report = TuneBoundDense(backend);
  const ScheduleDuel* duel = TwinDuel(report);
  ASSERT_NE(duel, nullptr);
  EXPECT_FALSE(duel->won) << duel->decision;
  EXPECT_EQ(duel->rounds, 5) << "5 of 5: the fewest the sign test calls a win for the default";
  ASSERT_EQ(report.regions[0].plan.size(), 1u);
  EXPECT_EQ(report.regions[0].plan[0].schedule.Get("wpack", 0), 0);
}

TEST_F(WeightsPackedTwins, AnotherScheduleFasterThanTheTwinBeyondTheFloorIsDueledInstead) {
  TwinBackend backend({1.0, 1.0, 1.0}, {0.9, 0.9, 0.9});  // other schedules 10% faster everywhere
  const TuneReport report = TuneBoundDense(backend, 3);   // one more than the default and its twin
  EXPECT_EQ(TwinDuel(report), nullptr);
  ASSERT_FALSE(report.duels.empty());
  EXPECT_TRUE(report.duels[0].won) << report.duels[0].decision;
  ASSERT_EQ(report.regions[0].plan.size(), 1u);
  const Schedule chosen = report.regions[0].plan[0].schedule;
  EXPECT_EQ(chosen.ToString(), report.duels[0].schedule);
}

TEST_F(WeightsPackedTwins, ARunnerUpFasterThanTheTwinInPairedRoundsTakesItsPlace) {
  // Another schedule 1% behind the twin by its candidate figure, 4% ahead of it when paired.
  TwinBackend backend({1.0, 1.0, 1.0}, {1.01, 0.96, 1.01});
  const TuneReport report = TuneBoundDense(backend, 3);
  const ScheduleDuel* duel = TwinDuel(report);
  ASSERT_NE(duel, nullptr);
  ASSERT_FALSE(duel->runner_up.empty());
  EXPECT_TRUE(duel->won) << duel->decision;
  EXPECT_EQ(duel->kept, duel->runner_up) << duel->decision;
  EXPECT_EQ(duel->decision.rfind(
                "packs the weights once, kept unless the default or the runner-up wins: ", 0),
            0u)
      << duel->decision;
}

// The searched cover [dense add] [relu] looks `candidate` times cheaper than greedy's one kernel in
// the candidate jobs, and runs `validation` times slower in the region's validation; the
// weights-packed twin is even with the default everywhere, or `twin_paired` in its duel's rounds.
struct SplitThenLosesBackend : ModelBackend {
  SplitThenLosesBackend(double candidate, double validation, double twin_paired) {
    adjust = [=](const MeasureJob& job, const Plan& plan, PlanResult& t) {
      const bool duel = IsDuel(job), validating = IsValidation(job);
      t.median_us = 0;
      for (size_t i = 0; i < plan.groups.size(); ++i) {
        if (plan.groups[i].nodes.size() == 2 && !duel)
          t.kernel_us[i] *= validating ? validation : candidate;
        if (duel && plan.groups[i].schedule.Get("wpack", 0) == 1) t.kernel_us[i] *= twin_paired;
        t.median_us += t.kernel_us[i];
      }
      t.repeat = 5;
    };
  }
  int validation_jobs() const {
    int n = 0;
    for (const MeasureJob& job : seen) n += IsValidation(job);
    return n;
  }
};

TEST_F(WeightsPackedTwins, WhenASearchedGroupingLosesGreedysGroupingKeepsItsDueledTwin) {
  SplitThenLosesBackend backend(0.4, 1.5, 1.0);
  const TuneReport report = TuneBoundDense(backend);
  ASSERT_EQ(report.regions.size(), 1u);
  const RegionReport& region = report.regions[0];
  EXPECT_EQ(region.chosen, "tuned") << region.decision;
  ASSERT_EQ(region.plan.size(), 1u) << "greedy's grouping: one kernel";
  EXPECT_EQ(region.plan[0].schedule.Get("wpack", 0), 1) << region.plan[0].schedule.ToString();
  EXPECT_EQ(region.decision.rfind("the searched grouping lost (", 0), 0u) << region.decision;
  EXPECT_NE(region.decision.find("greedy kept); then schedules that won their duels"),
            std::string::npos)
      << region.decision;
  bool greedy_group_dueled = false;
  for (const ScheduleDuel& d : report.duels)
    greedy_group_dueled |= d.ops.size() == 3 && d.kept_unless_beaten && d.won;
  EXPECT_TRUE(greedy_group_dueled);
  EXPECT_EQ(backend.validation_jobs(), region.rounds) << "both validations' rounds";
}

TEST_F(WeightsPackedTwins, NoSecondValidationWhenGreedysGroupsKeepTheirDefaults) {
  SplitThenLosesBackend backend(0.4, 1.5, 1.05);  // the twin loses its duel: nothing to retry
  const TuneReport report = TuneBoundDense(backend);
  ASSERT_EQ(report.regions.size(), 1u);
  EXPECT_EQ(report.regions[0].chosen, "greedy") << report.regions[0].decision;
  EXPECT_EQ(report.regions[0].decision.find("the searched grouping lost"), std::string::npos);
  ASSERT_EQ(report.regions[0].plan.size(), 1u);
  EXPECT_EQ(report.regions[0].plan[0].schedule.Get("wpack", 0), 0);
  EXPECT_EQ(backend.validation_jobs(), report.regions[0].rounds) << "one validation";

  // The same tune where the searched grouping wins: validation runs once, as before.
  std::filesystem::remove(path_);
  SplitThenLosesBackend wins(0.4, 0.4, 1.05);
  const TuneReport won = TuneBoundDense(wins);
  EXPECT_EQ(won.regions[0].chosen, "tuned") << won.regions[0].decision;
  EXPECT_EQ(won.regions[0].plan.size(), 2u);
  EXPECT_EQ(wins.validation_jobs(), won.regions[0].rounds) << "one validation";
}

}  // namespace
}  // namespace fusetune
