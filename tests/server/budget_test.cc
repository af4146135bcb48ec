// Budget pruning as a pure function: which groups a --budget leaves unmeasured, and the counts.
#include "server/budget.h"

#include <gtest/gtest.h>

namespace fusetune {
namespace {

TEST(Budget, NoBudgetPrunesNothing) {
  BudgetDecision d = PruneToBudget({{{"a", 5, 2, false}, {"b", 1, 2, false}}}, 0);
  EXPECT_TRUE(d.pruned.empty());
  EXPECT_EQ(d.pruned_per_region, std::vector<int>{0});
  EXPECT_EQ(d.pruned_total, 0);
}

TEST(Budget, KeepsTheGroupsWithTheMostBenefitThatFit) {
  // Budget 3: "a" (benefit 9, 2 schedules) fits, then "c" (benefit 5, 2) does not, "d" (1) does.
  BudgetDecision d = PruneToBudget(
      {{{"c", 5, 2, false}, {"a", 9, 2, false}, {"d", 4, 1, false}, {"s", 0, 2, true}}}, 3);
  EXPECT_EQ(d.pruned, (std::set<std::string>{"c"}));
  EXPECT_EQ(d.pruned_per_region, std::vector<int>{2});
  EXPECT_EQ(d.pruned_total, 2);
}

TEST(Budget, BaselinesAndMeasuredGroupsCostNothingAndAreKept) {
  BudgetDecision d = PruneToBudget({{{"base", 0, 5, true}, {"stored", 1, 0, false}}}, 1);
  EXPECT_TRUE(d.pruned.empty());
}

TEST(Budget, TiesGoToTheSmallerSignature) {
  BudgetDecision d = PruneToBudget({{{"y", 2, 1, false}, {"x", 2, 1, false}}}, 1);
  EXPECT_EQ(d.pruned, (std::set<std::string>{"y"}));
}

TEST(Budget, AGroupKeptByOneRegionIsMeasuredForAll) {
  // Region 0 keeps "g"; region 1 would prune it for "h", but "g" costs it nothing now.
  BudgetDecision d =
      PruneToBudget({{{"g", 1, 1, false}}, {{"h", 9, 1, false}, {"g", 1, 1, false}}}, 1);
  EXPECT_TRUE(d.pruned.empty());
  // Region 0 prunes "p" for "q"; region 1 keeps "p": it is measured.
  d = PruneToBudget({{{"q", 9, 1, false}, {"p", 1, 1, false}}, {{"p", 1, 1, false}}}, 1);
  EXPECT_TRUE(d.pruned.empty());
}

TEST(Budget, ABaselineOfAnyRegionIsNeverPruned) {
  BudgetDecision d =
      PruneToBudget({{{"q", 9, 1, false}, {"g", 1, 1, false}}, {{"g", 0, 1, true}}}, 1);
  EXPECT_TRUE(d.pruned.empty());
}

TEST(Budget, APrunedGroupCountsInEveryRegionThatHoldsItAndOnceInTotal) {
  BudgetDecision d = PruneToBudget(
      {{{"q", 9, 1, false}, {"p", 1, 2, false}}, {{"r", 9, 1, false}, {"p", 1, 2, false}}}, 1);
  EXPECT_EQ(d.pruned, (std::set<std::string>{"p"}));
  EXPECT_EQ(d.pruned_per_region, (std::vector<int>{2, 2}));
  EXPECT_EQ(d.pruned_total, 2);
}

}  // namespace
}  // namespace fusetune
