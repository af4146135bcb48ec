// The noise rule of validation (server/validation.h) on synthetic round figures: what it keeps,
// when it stops, and what one disturbed round does.
#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

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

TEST(SignTest, PValues) {
  EXPECT_DOUBLE_EQ(SignTestP(5, 5), 1.0 / 32);
  EXPECT_DOUBLE_EQ(SignTestP(4, 4), 1.0 / 16);
  EXPECT_DOUBLE_EQ(SignTestP(7, 8), 9.0 / 256);
  EXPECT_DOUBLE_EQ(SignTestP(0, 3), 1.0);
}

TEST(NoiseRule, TwoIdenticalPlansTimedWithJitterKeepGreedyAndStopAfterThreeRounds) {
  // Tuned and greedy are the same groups timed separately: equal but for ±1–2% jitter.
  const auto rounds = Rounds(kMinRounds, 100, 100, 300, 0.01);
  const NoiseDecision d = DecideThreeWay(rounds, kDistinct);
  EXPECT_EQ(d.chosen, kGreedy);
  EXPECT_TRUE(d.settled) << "identical plans need no more rounds";
  EXPECT_NE(d.text.find("greedy kept"), std::string::npos) << d.text;
  EXPECT_NEAR(d.margin, 1.0, 0.05);
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

TEST(NoiseRule, AFasterPlanWithinTheNoiseFloorKeepsGreedy) {
  const NoiseDecision d = DecideThreeWay(Rounds(9, 98, 100, 300), kDistinct);
  EXPECT_EQ(d.chosen, kGreedy);
  EXPECT_NE(d.text.find("tuned 1.02× vs greedy, within noise"), std::string::npos) << d.text;
}

TEST(NoiseRule, TheMeasuredSpreadWidensTheNoise) {
  // 10% faster in every round, but each timing's standard error is 5%: within noise.
  auto rounds = Rounds(9, 90, 100, 300);
  for (RoundFigures& r : rounds) r.rel_error[kTuned] = r.rel_error[kGreedy] = 0.05;
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

TEST(NoiseRule, OneRoundDisturbedInFavourOfAPlanDoesNotMakeItWin) {
  auto rounds = Rounds(kMinRounds, 100, 100, 120, 0.01);
  rounds[0].us[kGreedy] *= 3;  // greedy disturbed: tuned and unfused look 3x faster once
  const NoiseDecision d = DecideThreeWay(rounds, kDistinct);
  EXPECT_EQ(d.chosen, kGreedy) << d.text;
  EXPECT_TRUE(d.settled);
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
  EXPECT_EQ(DecideThreeWay(Rounds(5, 100, 98, 300), kDistinct, kIncumbentFirst).chosen, kTuned);
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

}  // namespace
}  // namespace fusetune
