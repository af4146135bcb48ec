// The noise rule of validation (server/validation.h) on synthetic round figures: what it keeps,
// when it stops, and what one disturbed round does; and how many rounds TimeThreeWays runs.
#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "ir/fusion.h"
#include "ir/plan.h"
#include "ir/schedule_space.h"
#include "ir/text/relay_parser.h"
#include "model_backend.h"
#include "server/measurement_planning.h"
#include "server/validation.h"

namespace fusetune {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Rounds of tuned / greedy / unfused times; `jitter` alternates ± per round and slot.
std::vector<RoundFigures> Rounds(int n, double tuned, double greedy, double unfused,
                                 double jitter = 0) {
  std::vector<RoundFigures> out;
  for (int k = 0; k < n; ++k) {
    RoundFigures r;
    const double sign[3] = {k % 2 ? 1.0 : -1.0, k % 3 ? -1.0 : 1.0, 1.0};
    const double base[3] = {tuned, greedy, unfused};
    for (int s = 0; s < 3; ++s) r.us[s] = base[s] * (1 + sign[s] * jitter * (1 + k % 2));
    out.push_back(r);
  }
  return out;
}

const int kDistinct[3] = {0, 1, 2};

// The seed pattern (batch_matmul, ones_like, where): greedy, unfused and a searched plan differ.
Graph SeedGraph() {
  return ParseRelay(
      "fn (%x: Tensor[(12, 32, 16), float32], %y: Tensor[(12, 32, 16), float32], "
      "%z: Tensor[(12, 32, 32), float32]) {\n  %0 = nn.batch_matmul(%x, %y);\n"
      "  %1 = ones_like(%0);\n  where(%z, %0, %1)\n}",
      "seed.relay");
}

TEST(SignTest, PValues) {
  EXPECT_DOUBLE_EQ(SignTestP(5, 5), 1.0 / 32);
  EXPECT_DOUBLE_EQ(SignTestP(4, 4), 1.0 / 16);
  EXPECT_DOUBLE_EQ(SignTestP(7, 8), 9.0 / 256);
  EXPECT_DOUBLE_EQ(SignTestP(0, 3), 1.0);
}

TEST(NoiseRule, TwoIdenticalPlansTimedWithJitterKeepGreedyAndStopAfterTwoRounds) {
  // Tuned and greedy are the same groups timed separately: equal but for ±0.4–0.8% jitter.
  const auto rounds = Rounds(kMinRounds, 100, 100, 300, 0.004);
  const NoiseDecision d = DecideThreeWay(rounds, kDistinct);
  EXPECT_EQ(d.chosen, kGreedy);
  EXPECT_TRUE(d.settled) << "identical plans need no more rounds";
  EXPECT_NE(d.text.find("greedy kept"), std::string::npos) << d.text;
  EXPECT_NEAR(d.margin, 1.0, 0.05);
}

TEST(NoiseRule, TwoIdenticalPlansWithJitterBeyondTheFloorKeepGreedyOverAllRounds) {
  // ±1–2%: some rounds read as wins, so the comparison runs on, but never to a win.
  const auto rounds = Rounds(kMaxRounds, 100, 100, 300, 0.01);
  EXPECT_FALSE(DecideThreeWay({rounds.begin(), rounds.begin() + kMinRounds}, kDistinct).settled);
  const NoiseDecision d = DecideThreeWay(rounds, kDistinct);
  EXPECT_EQ(d.chosen, kGreedy) << d.text;
  EXPECT_TRUE(d.settled);
}

TEST(NoiseRule, APlanTrulyTwiceAsFastWinsAfterFiveRounds) {
  const NoiseDecision four = DecideThreeWay(Rounds(4, 50, 100, 300, 0.02), kDistinct);
  EXPECT_EQ(four.chosen, kGreedy) << "4 of 4 rounds is not yet p <= 0.05";
  EXPECT_FALSE(four.settled);
  const NoiseDecision five = DecideThreeWay(Rounds(5, 50, 100, 300, 0.02), kDistinct);
  EXPECT_EQ(five.chosen, kTuned);
  EXPECT_TRUE(five.settled);
  EXPECT_NEAR(five.margin, 0.5, 0.05);
  EXPECT_NE(five.text.find("beyond noise (5 of 5 rounds)"), std::string::npos) << five.text;
  EXPECT_NE(five.text.find("tuned chosen"), std::string::npos) << five.text;
}

// A round's spread comes from the repeats' MAD: a plan 5% faster whose one cold repeat (150 of
// 100, 101) made its stddev 28% still wins the round against a plan timed 105-106.
TEST(NoiseRule, OneSlowRepeatDoesNotHideARoundsWin) {
  const double from_mad = RoundRelativeError(101, 28.6, 1.0, 3);
  EXPECT_NEAR(from_mad, 1.2533 * 2.199 / 101 / std::sqrt(3.0), 1e-9);
  EXPECT_LT(from_mad, 0.02);
  const double from_stddev = RoundRelativeError(101, 28.6, 0, 3);  // a worker without mad_us
  EXPECT_NEAR(from_stddev, RelativeError(101, 28.6, 3), 1e-12);
  EXPECT_GT(from_stddev, 0.2);
  const double other = RoundRelativeError(105.5, 0.6, 0.5, 3);
  EXPECT_TRUE(RoundWon(100, from_mad, 105, other));
  EXPECT_FALSE(RoundWon(100, from_stddev, 105, other)) << "the test shows nothing";
  EXPECT_DOUBLE_EQ(MadToStddev(20), 1.4826);
}

TEST(NoiseRule, EvenlySpreadRepeatsAreReadByTheirStddevNotTheirInflatedMad) {
  // Repeats 100, 109, 118: MAD 9 (x2.2 = 19.8), sample stddev 9.
  const double spread = RoundRelativeError(109, 9, 9, 3);
  EXPECT_NEAR(spread, RelativeError(109, 9, 3), 1e-12);
  const double other = RoundRelativeError(108.2, 0.5, 0.4, 3);
  EXPECT_TRUE(RoundWon(100, spread, 108, other));
  EXPECT_FALSE(RoundWon(100, RelativeError(109, MadToStddev(3) * 9, 3), 108, other))
      << "the test shows nothing";
}

TEST(NoiseRule, AFasterPlanWithinTheNoiseFloorKeepsGreedy) {
  const NoiseDecision d = DecideThreeWay(Rounds(9, 99.2, 100, 300), kDistinct);
  EXPECT_EQ(d.chosen, kGreedy);
  EXPECT_NE(d.text.find("tuned 1.01× vs greedy, within noise"), std::string::npos) << d.text;
}

TEST(NoiseRule, APlanTwoPercentFasterInEveryPreciseRoundWins) {
  // Paired rounds with tight timings (0.3% standard error): 2% is beyond the rounds' floor (1%),
  // though within the 3% that two separate timings need (the schedule rule below).
  auto rounds = Rounds(5, 98, 100, 300);
  for (RoundFigures& r : rounds) r.rel_error[kTuned] = r.rel_error[kGreedy] = 0.003;
  const NoiseDecision d = DecideThreeWay(rounds, kDistinct);
  EXPECT_EQ(d.chosen, kTuned) << d.text;
  // The same 2% with a standard error of 1.5% a timing is within the two timings' noise.
  for (RoundFigures& r : rounds) r.rel_error[kTuned] = r.rel_error[kGreedy] = 0.015;
  EXPECT_EQ(DecideThreeWay(rounds, kDistinct).chosen, kGreedy);
}

TEST(NoiseRule, TheMeasuredSpreadWidensTheNoise) {
  // 10% faster in every round, but each timing's standard error is 8%: within noise.
  auto rounds = Rounds(9, 90, 100, 300);
  for (RoundFigures& r : rounds) r.rel_error[kTuned] = r.rel_error[kGreedy] = 0.08;
  EXPECT_EQ(DecideThreeWay(rounds, kDistinct).chosen, kGreedy);
  for (RoundFigures& r : rounds) r.rel_error[kTuned] = r.rel_error[kGreedy] = 0.01;
  EXPECT_EQ(DecideThreeWay(rounds, kDistinct).chosen, kTuned);
}

TEST(NoiseRule, OneRoundDisturbedAgainstTheFasterPlanCostsRoundsNotTheDecision) {
  auto rounds = Rounds(5, 50, 100, 300, 0.01);
  rounds[1].us[kTuned] *= 3;  // a burst of load during tuned's timing in round 2
  NoiseDecision d = DecideThreeWay(rounds, kDistinct);
  EXPECT_EQ(d.chosen, kGreedy);
  EXPECT_FALSE(d.settled) << "one lost round of five leaves the decision open";
  for (const RoundFigures& r : Rounds(3, 50, 100, 300, 0.01)) rounds.push_back(r);
  d = DecideThreeWay(rounds, kDistinct);  // 7 of 8 rounds
  EXPECT_EQ(d.chosen, kTuned) << d.text;
  EXPECT_TRUE(d.settled);
}

TEST(NoiseRule, RoundsWhoseTimingsSpreadToTheCeilingAreLeftOutNotLost) {
  // A plan 10% faster in every round, but two of the first rounds' timings spread by 30% (load):
  // those rounds count neither way, so the comparison runs on and the plan wins on the others.
  auto rounds = Rounds(7, 90, 100, 300);
  rounds[0].rel_error[kGreedy] = rounds[1].rel_error[kTuned] = 0.3;
  NoiseDecision d = DecideThreeWay({rounds.begin(), rounds.begin() + 2}, kDistinct);
  EXPECT_FALSE(d.settled) << "two disturbed rounds are no evidence: " << d.text;
  d = DecideThreeWay(rounds, kDistinct);
  EXPECT_EQ(d.chosen, kTuned) << d.text;
  EXPECT_NE(d.text.find("beyond noise (5 of 5 rounds, 2 disturbed)"), std::string::npos) << d.text;
  // Two identical plans with every round disturbed: greedy kept, after every round allowed.
  auto noisy = Rounds(kMaxRounds, 100, 100, 300);
  for (RoundFigures& r : noisy) r.rel_error[kTuned] = 0.4;
  noisy[3].us[kTuned] = 50;  // one round 2x faster counts: 1 of 1 is no sign test's win
  d = DecideThreeWay(noisy, kDistinct);
  EXPECT_EQ(d.chosen, kGreedy) << d.text;
  EXPECT_TRUE(d.settled);
  // A plan 3x faster than the other beyond the ceiling wins however much its timings spread.
  auto clear = Rounds(5, 33, 100, 300);
  for (RoundFigures& r : clear) r.rel_error[kTuned] = 0.4;
  d = DecideThreeWay(clear, kDistinct);
  EXPECT_EQ(d.chosen, kTuned) << d.text;
  EXPECT_NE(d.text.find("beyond noise (5 of 5 rounds)"), std::string::npos) << d.text;
}

TEST(NoiseRule, OneRoundDisturbedInFavourOfAPlanDoesNotMakeItWin) {
  auto rounds = Rounds(3, 100, 100, 120, 0.01);
  rounds[0].us[kGreedy] *= 3;  // greedy disturbed: tuned and unfused look 3x faster once
  const NoiseDecision two = DecideThreeWay({rounds.begin(), rounds.begin() + 2}, kDistinct);
  EXPECT_EQ(two.chosen, kGreedy) << two.text;
  EXPECT_FALSE(two.settled) << "one won round of two could still become 8 of 9: one more round";
  const NoiseDecision d = DecideThreeWay(rounds, kDistinct);
  EXPECT_EQ(d.chosen, kGreedy) << d.text;
  EXPECT_TRUE(d.settled);
}

// The sequential test's promise (validation.h): stopping once the decision is settled from
// kMinRounds (2) decides exactly as the old minimum of 3 rounds did, sometimes a round sooner.
// Both stopping rules run over the same rounds: every win/loss pattern of one challenger, and
// many of two.
int StopAt(const std::vector<RoundFigures>& rounds, const int same[3], int min_rounds) {
  int n = min_rounds;
  while (n < kMaxRounds && !DecideThreeWay({rounds.begin(), rounds.begin() + n}, same).settled) ++n;
  return n;
}

TEST(NoiseRule, StoppingFromTwoRoundsDecidesAsThreeRoundsDid) {
  int sooner = 0;
  auto check = [&](const std::vector<RoundFigures>& rounds, const int same[3]) {
    const int now = StopAt(rounds, same, kMinRounds), before = StopAt(rounds, same, 3);
    EXPECT_LE(now, std::max(before, kMinRounds));
    sooner += now < before;
    const NoiseDecision a = DecideThreeWay({rounds.begin(), rounds.begin() + now}, same);
    const NoiseDecision b = DecideThreeWay({rounds.begin(), rounds.begin() + before}, same);
    ASSERT_EQ(a.chosen, b.chosen) << a.text << " | " << b.text;
  };
  const int one[3] = {-1, 0, 1};  // greedy against unfused
  for (unsigned pattern = 0; pattern < (1u << kMaxRounds); ++pattern) {
    std::vector<RoundFigures> rounds(kMaxRounds);
    for (int k = 0; k < kMaxRounds; ++k) {
      rounds[k].us[kGreedy] = 100;
      rounds[k].us[kUnfused] = pattern >> k & 1 ? 50 : 100;  // a win beyond noise, or a tie
    }
    check(rounds, one);
  }
  uint64_t x = 12345;  // tuned and unfused both against greedy: rounds drawn from an LCG
  for (int trial = 0; trial < 4000; ++trial) {
    std::vector<RoundFigures> rounds(kMaxRounds);
    for (RoundFigures& r : rounds)
      for (int slot = 0; slot < 3; ++slot) {
        x = x * 6364136223846793005u + 1442695040888963407u;
        r.us[slot] = slot == kGreedy ? 100 : 60 + static_cast<double>(x >> 58);  // 60..123
      }
    check(rounds, kDistinct);
  }
  EXPECT_GT(sooner, 0) << "no run stopped sooner: the test exercised nothing";
  // The cheapest stop: both of the first two rounds lost; one round is never enough to compare.
  std::vector<RoundFigures> lost(2);
  for (RoundFigures& r : lost) r.us[kGreedy] = r.us[kUnfused] = 100;
  EXPECT_TRUE(DecideThreeWay(lost, one).settled);
  EXPECT_FALSE(DecideThreeWay({lost.begin(), lost.begin() + 1}, one).settled)
      << "0 won of 1 could still become 8 of 9";
}

TEST(NoiseRule, ATunedPlanEqualToGreedyIsOneCandidateNamedGreedy) {
  const int same[3] = {0, 0, 1};  // tuned is the greedy plan
  const NoiseDecision d = DecideThreeWay(Rounds(kMinRounds, 100, 100, 300), same);
  EXPECT_EQ(d.chosen, kGreedy);
  EXPECT_EQ(d.text, "tuned = greedy; unfused 0.33× vs greedy: greedy kept");
}

TEST(NoiseRule, AFailedPlanIsNoCandidate) {
  auto rounds = Rounds(5, 50, 100, 300);
  rounds[2].us[kTuned] = kInf;
  const NoiseDecision d = DecideThreeWay(rounds, kDistinct);
  EXPECT_EQ(d.chosen, kGreedy);
  EXPECT_NE(d.text.find("tuned failed"), std::string::npos) << d.text;
  const int only_unfused[3] = {-1, -1, 0};
  EXPECT_EQ(DecideThreeWay(rounds, only_unfused).chosen, kUnfused);
}

TEST(NoiseRule, IncumbentFirstKeepsAStoredPlanUnlessABaselineBeatsIt) {
  EXPECT_EQ(DecideThreeWay(Rounds(5, 100, 99.2, 300), kDistinct, kIncumbentFirst).chosen, kTuned);
  const NoiseDecision d = DecideThreeWay(Rounds(5, 100, 80, 300), kDistinct, kIncumbentFirst);
  EXPECT_EQ(d.chosen, kGreedy);
  EXPECT_NE(d.text.find("greedy 1.25× vs tuned, beyond noise"), std::string::npos) << d.text;
}

// The same rule for a schedule over the group's default (the first of its space).
TEST(NoiseRule, ANonDefaultScheduleIsUsedOnlyWhenFasterBeyondTheNoiseOfBothMeasurements) {
  GroupWork gw;
  gw.schedules.resize(3);
  gw.median_us = {100, 98, 99};
  gw.rel_error = {0, 0, 0};
  EXPECT_EQ(gw.best_index(), 0u) << "2% faster is within the noise floor";
  gw.median_us = {100, 80, 90};
  EXPECT_EQ(gw.best_index(), 1u);
  EXPECT_DOUBLE_EQ(gw.best_us(), 80);
  gw.rel_error = {0.12, 0.12, 0.12};  // noisy measurements: 1.25x is within the noise
  EXPECT_EQ(gw.best_index(), 0u);
  gw.median_us = {kInf, 80, 90};  // the default failed: the fastest that ran
  EXPECT_EQ(gw.best_index(), 1u);
}

// A tuned plan that is greedy's grouping on other schedules is named for what it is.
TEST(NoiseRule, SearchedSchedulesAgainstGreedyOnDefaultsSayWhatIsCompared) {
  const NoiseDecision lost = DecideThreeWay(Rounds(kMinRounds, 103, 100, 300), kDistinct,
                                            kSimplestFirst, kMaxRounds, kScheduleLabels);
  EXPECT_EQ(lost.chosen, kGreedy);
  EXPECT_EQ(lost.text,
            "unfused 0.33× vs greedy on defaults; searched schedules 0.97× vs greedy on "
            "defaults: greedy kept");
  const NoiseDecision within = DecideThreeWay(Rounds(9, 99.2, 100, 300, 0.01), kDistinct,
                                              kSimplestFirst, kMaxRounds, kScheduleLabels);
  EXPECT_EQ(within.chosen, kGreedy);
  EXPECT_NE(within.text.find("searched schedules 1.01× vs greedy on defaults, within noise"),
            std::string::npos)
      << within.text;
  const NoiseDecision won = DecideThreeWay(Rounds(5, 80, 100, 300), kDistinct, kSimplestFirst,
                                           kMaxRounds, kScheduleLabels);
  EXPECT_EQ(won.chosen, kTuned);
  EXPECT_NE(won.text.find("searched schedules 1.25× vs greedy on defaults, beyond noise (5 of 5 "
                          "rounds): tuned chosen"),
            std::string::npos)
      << won.text;
}

TEST(SamePlan, GroupsAndSchedulesInAnyOrder) {
  Schedule v8;
  v8.Set("vector", 8);
  const Plan a{"a", {{{0, 1}, {}}, {{2}, v8}}};
  const Plan b{"b", {{{2}, v8}, {{0, 1}, {}}}};
  const Plan c{"c", {{{2}, {}}, {{0, 1}, {}}}};
  const Plan d{"d", {{{0}, {}}, {{1, 2}, {}}}};
  EXPECT_TRUE(SamePlan(a, b));
  EXPECT_FALSE(SamePlan(a, c));
  EXPECT_TRUE(SameGrouping(a, c));
  EXPECT_FALSE(SameGrouping(c, d));
}

// ---- TimeThreeWays: the rounds it runs (jobs under the bytes model of model_backend.h) ----

std::vector<ThreeWayResult> TimeWays(const std::vector<ThreeWay>& ways, ModelBackend& backend) {
  TuneOptions options;
  ProgressFn progress;
  JobRunner runner(backend, options, progress);
  return TimeThreeWays(ways, runner, "validating");
}

TEST(TimeThreeWays, ALonePlanRunsOneRoundAndAComparisonThatSettlesRunsTwo) {
  const Graph one_op = ParseRelay("fn (%x: Tensor[(64, 64), float32]) { exp(%x) }", "one.relay");
  const Graph seed = SeedGraph();
  std::vector<ThreeWay> ways(2);
  ways[0].graph = &one_op;  // one op: the three slots are one plan, nothing to compare
  for (int slot = 0; slot < 3; ++slot) ways[0].plans[slot] = UnfusedPlan(one_op);
  ways[1].graph = &seed;  // tuned = greedy (all fused); unfused moves far more bytes
  ways[1].plans[kTuned] = ways[1].plans[kGreedy] = GreedyPlan(seed);
  ways[1].plans[kUnfused] = UnfusedPlan(seed);
  ASSERT_EQ(ways[1].plans[kGreedy]->groups.size(), 1u);

  ModelBackend backend;
  const std::vector<ThreeWayResult> res = TimeWays(ways, backend);
  EXPECT_EQ(res[0].rounds, 1);
  EXPECT_EQ(res[0].chosen, kGreedy);
  EXPECT_EQ(res[0].decision, "unfused = greedy; tuned = greedy: greedy kept");
  EXPECT_EQ(res[1].rounds, kMinRounds) << "unfused lost both rounds: settled";
  EXPECT_EQ(res[1].chosen, kGreedy);
  EXPECT_LT(res[1].us[kGreedy], res[1].us[kUnfused]);
  EXPECT_DOUBLE_EQ(res[1].us[kTuned], res[1].us[kGreedy]) << "one plan, one figure";
  // 1 + 2 jobs, one batch: the lone plan's job holds one plan, the seed's two (tuned is greedy).
  ASSERT_EQ(backend.seen.size(), 3u);
  int plans = 0;
  for (const MeasureJob& job : backend.seen) plans += static_cast<int>(job.plans.size());
  EXPECT_EQ(plans, 1 + 2 * 2);
}

// A way of the seed's greedy plan against its unfused plan.
ThreeWay GreedyAgainstUnfused(const Graph& seed) {
  ThreeWay way;
  way.graph = &seed;
  way.plans[kGreedy] = GreedyPlan(seed);
  way.plans[kUnfused] = UnfusedPlan(seed);
  return way;
}

TEST(TimeThreeWays, AChallengerThatWinsARoundGetsMoreRounds) {
  const Graph seed = SeedGraph();
  const ThreeWay way = GreedyAgainstUnfused(seed);
  ModelBackend backend;
  // The greedy plan is disturbed (10x) in the second round: unfused wins that one round.
  backend.adjust = [&](const MeasureJob&, const Plan&, PlanResult& t) {
    if (backend.seen.size() == 2 && t.name == "greedy") t.median_us *= 10;
  };
  const ThreeWayResult res = TimeWays({way}, backend)[0];
  EXPECT_EQ(res.chosen, kGreedy) << res.decision;
  EXPECT_EQ(res.rounds, 3) << "1 won of 2 is open; 1 of 3 is settled";
}

// Interference only adds time: a round's figure of a plan is its fastest repeat, so repeats slowed
// by a burst (here every median doubled, the fastest repeats not) leave the decision and figures
// as they were undisturbed.
TEST(TimeThreeWays, ARoundIsJudgedByEachPlansFastestRepeat) {
  const Graph seed = SeedGraph();
  const ThreeWay way = GreedyAgainstUnfused(seed);
  ModelBackend quiet;
  const ThreeWayResult undisturbed = TimeWays({way}, quiet)[0];
  ModelBackend bursts;
  bursts.adjust = [](const MeasureJob&, const Plan&, PlanResult& t) {
    if (t.name != "greedy") return;
    t.min_us = t.median_us;
    t.median_us *= 2;
  };
  const ThreeWayResult res = TimeWays({way}, bursts)[0];
  EXPECT_EQ(res.decision, undisturbed.decision);
  EXPECT_DOUBLE_EQ(res.us[kGreedy], undisturbed.us[kGreedy]);
  EXPECT_DOUBLE_EQ(res.us[kUnfused], undisturbed.us[kUnfused]);
}

// The tuned plan is greedy's grouping on a searched schedule: a plan of its own, timed beside
// greedy on defaults; on the default schedule it is greedy, one candidate.
TEST(TimeThreeWays, SearchedSchedulesAreTimedAgainstTheDefaultsAndEqualDefaultsAreOnePlan) {
  const Graph seed = SeedGraph();
  ThreeWay way;
  way.graph = &seed;
  way.plans[kGreedy] = WithDefaultSchedules(seed, GreedyPlan(seed), 1);
  way.plans[kUnfused] = WithDefaultSchedules(seed, UnfusedPlan(seed), 1);
  way.plans[kTuned] = way.plans[kGreedy];
  const std::vector<Schedule> space =
      ScheduleSpace(seed, *AnalyzeGroup(seed, way.plans[kTuned]->groups.at(0).nodes), 1);
  ASSERT_GE(space.size(), 2u);
  EXPECT_EQ(way.plans[kGreedy]->groups.at(0).schedule, space.front());

  ModelBackend same;
  const ThreeWayResult one = TimeWays({way}, same)[0];
  EXPECT_EQ(one.decision.rfind("tuned = greedy", 0), 0u) << one.decision;
  for (const MeasureJob& job : same.seen) EXPECT_EQ(job.plans.size(), 2u);

  way.plans[kTuned]->groups.at(0).schedule = space.back();
  ModelBackend backend;
  // The searched schedule runs 10% slower than the default in sequence.
  backend.adjust = [](const MeasureJob&, const Plan&, PlanResult& t) {
    if (t.name == "tuned") t.median_us *= 1.1;
  };
  const ThreeWayResult res = TimeWays({way}, backend)[0];
  EXPECT_EQ(res.chosen, kGreedy);
  EXPECT_EQ(res.decision,
            "unfused 0.37× vs greedy on defaults; searched schedules 0.91× vs greedy on defaults: "
            "greedy kept");
  for (const MeasureJob& job : backend.seen) EXPECT_EQ(job.plans.size(), 3u);
}

TEST(DecideThreeWay, OneRoundIsCalledOneRound) {
  EXPECT_EQ(RoundsText(1), "1 round");
  EXPECT_EQ(RoundsText(5), "5 rounds");
  auto rounds = Rounds(3, 98, 100, 300);
  rounds[0].rel_error[kTuned] = 0.3;
  const NoiseDecision d = DecideThreeWay(rounds, kDistinct);
  EXPECT_NE(d.text.find("within noise (1 round disturbed)"), std::string::npos) << d.text;
}

}  // namespace
}  // namespace fusetune
