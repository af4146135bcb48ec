// Fewer kernels within the noise of the best cover (server/cover_merging.h).
#include "server/cover_merging.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <vector>

namespace fusetune {
namespace {

Partition Cover(std::vector<size_t> groups, const std::vector<CostedGroup>& c) {
  Partition p{std::move(groups), 0};
  for (size_t g : p.groups) p.cost += c[g].cost;
  return p;
}

TEST(MergeWithinNoise, TakesTheUnionOnlyWithinTheFloorOfTheBestCover) {
  // A dense with its GELU (1000 µs) and the GELU's trailing multiply alone (20 µs).
  std::vector<CostedGroup> c = {{{1, 2}, 1000, {}}, {{3}, 20, {}}, {{1, 2, 3}, 1050, {}}};
  const Partition best = Cover({0, 1}, c);
  Partition merged = MergeWithinNoise(c, best, 0.03);  // 1050 <= 1020 * 1.03 = 1050.6
  EXPECT_EQ(merged.groups, std::vector<size_t>{2});
  EXPECT_DOUBLE_EQ(merged.cost, 1050);

  c[2].cost = 1051;  // beyond the floor: the two kernels stay
  merged = MergeWithinNoise(c, best, 0.03);
  EXPECT_EQ(merged.groups, (std::vector<size_t>{0, 1}));
  EXPECT_DOUBLE_EQ(merged.cost, 1020);
}

TEST(MergeWithinNoise, TheFloorIsTheBestCoversNotEachStepsAndTheCheapestMergeGoesFirst) {
  // Three kernels in a chain; a union of two costs 8 or 12 more than its parts, all three 25 more.
  std::vector<CostedGroup> c = {{{1}, 300, {}},    {{2}, 300, {}},    {{3}, 400, {}},
                                {{1, 2}, 612, {}}, {{2, 3}, 708, {}}, {{1, 2, 3}, 1025, {}}};
  const Partition best = Cover({0, 1, 2}, c);  // 1000; the floor allows up to 1030
  const Partition merged = MergeWithinNoise(c, best, 0.03);
  // [2 3] (+8) goes before [1 2] (+12), then [1] with [2 3] (+17): 1025, within 1030.
  EXPECT_EQ(merged.groups, std::vector<size_t>{5});
  EXPECT_DOUBLE_EQ(merged.cost, 1025);

  c[5].cost = 1031;  // all three beyond the floor: only the cheapest pair is merged
  const Partition two = MergeWithinNoise(c, best, 0.03);
  EXPECT_EQ(two.groups.size(), 2u);
  EXPECT_NE(std::find(two.groups.begin(), two.groups.end(), 4), two.groups.end());
  EXPECT_DOUBLE_EQ(two.cost, 1008);
}

TEST(MergeWithinNoise, ThreeGroupsAtOnceWhereNoPairIsACandidate) {
  // Attention at S = 128: Q·Kᵀ (130 µs), the mask and softmax (62), P·V (125), and the attention
  // kernel that is all three (318); no two of them make a kernel. A cover group that lies only
  // partly inside the union keeps it from being taken.
  std::vector<CostedGroup> c = {{{2, 3}, 130, {}},
                                {{4, 5}, 62, {}},
                                {{6}, 125, {}},
                                {{2, 3, 4, 5, 6}, 318, {}},
                                {{1}, 2000, {}}};
  const Partition best = Cover({0, 1, 2, 4}, c);  // 2317, the floor allows 2386
  const Partition merged = MergeWithinNoise(c, best, 0.03);
  EXPECT_EQ(merged.groups, (std::vector<size_t>{4, 3}));
  EXPECT_DOUBLE_EQ(merged.cost, 2318);

  c.push_back({{1, 2}, 2100, {}});  // a cover group partly inside the union
  EXPECT_EQ(MergeWithinNoise(c, Cover({5, 1, 2}, c), 0.03).groups, (std::vector<size_t>{5, 1, 2}));
}

TEST(MergeWithinNoise, NeverMergesARecomputingGroupOrAnUnmeasuredUnion) {
  std::vector<CostedGroup> c = {{{1, 2}, 100, {1}}, {{3}, 5, {}}, {{1, 2, 3}, 100, {1}}};
  EXPECT_EQ(MergeWithinNoise(c, Cover({0, 1}, c), 0.03).groups, (std::vector<size_t>{0, 1}));
  c = {{{1, 2}, 100, {}}, {{3}, 5, {}}, {{1, 2, 3}, std::numeric_limits<double>::infinity(), {}}};
  EXPECT_EQ(MergeWithinNoise(c, Cover({0, 1}, c), 0.03).groups, (std::vector<size_t>{0, 1}));
  // Not found stays not found.
  EXPECT_FALSE(MergeWithinNoise(c, Partition{}, 0.03).found());
}

}  // namespace
}  // namespace fusetune
