// Which stored values share memory (worker/buffer_plan.h): never two that are live at once, a
// step's outputs never in its inputs' blocks, the graph's outputs never shared.
#include "worker/buffer_plan.h"

#include <map>
#include <random>

#include <gtest/gtest.h>

namespace fusetune::testing {
namespace {

int64_t Bytes64(ValueId) { return 64; }

TEST(BufferPlan, AChainOfKernelsTakesTurnsInTwoBlocks) {
  // x(0) -> 1 -> 2 -> 3 -> 4 (the graph's output)
  const std::vector<BufferStep> steps = {{{0}, {1}}, {{1}, {2}}, {{2}, {3}}, {{3}, {4}}};
  const BufferPlan plan = PlanBuffers(steps, Bytes64, {4});
  EXPECT_EQ(plan.block_bytes.size(), 2u);
  EXPECT_EQ(plan.block_of.at(1), plan.block_of.at(3));
  EXPECT_NE(plan.block_of.at(1), plan.block_of.at(2));
  EXPECT_FALSE(plan.block_of.count(4));
  EXPECT_FALSE(plan.block_of.count(0));  // read, never written: a parameter
}

TEST(BufferPlan, AValueReadLaterKeepsItsBlockUntilThen) {
  // 1 is read again by the last step (a residual connection): nothing else may use its block.
  const std::vector<BufferStep> steps = {
      {{0}, {1}}, {{1}, {2}}, {{2}, {3}}, {{3}, {5}}, {{1, 5}, {4}}};
  const BufferPlan plan = PlanBuffers(steps, Bytes64, {4});
  for (ValueId v : {2, 3, 5}) EXPECT_NE(plan.block_of.at(v), plan.block_of.at(1)) << v;
  EXPECT_EQ(plan.block_of.at(2), plan.block_of.at(5));  // 2 is free by the time 5 is written
  EXPECT_EQ(plan.block_bytes.size(), 3u);
}

TEST(BufferPlan, TheSmallestFreeBlockThatHoldsTheValueIsTakenElseTheLargestGrows) {
  const std::map<ValueId, int64_t> size = {{1, 4096}, {2, 256}, {3, 64}, {4, 256}, {5, 8192}};
  auto bytes = [&](ValueId v) { return size.at(v); };
  // 1 and 2 die at step 1; 4 (256 bytes) then takes 2's block, not 1's; 5 (8 KiB) grows 1's.
  const std::vector<BufferStep> steps = {
      {{0}, {1, 2}}, {{1, 2}, {3}}, {{3}, {4}}, {{4}, {5}}, {{5}, {6}}};
  const BufferPlan plan = PlanBuffers(steps, bytes, {6});
  EXPECT_EQ(plan.block_of.at(4), plan.block_of.at(2));
  EXPECT_EQ(plan.block_of.at(5), plan.block_of.at(1));
  EXPECT_EQ(plan.block_bytes[plan.block_of.at(1)], 8192);
  EXPECT_EQ(plan.block_bytes.size(), 3u);
}

TEST(BufferPlan, NoTwoValuesLiveAtOnceShareABlockInRandomPlans) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<BufferStep> steps;
    std::vector<ValueId> written = {0};  // 0: a parameter
    std::map<ValueId, int64_t> size;
    std::unordered_set<ValueId> own;
    ValueId next = 1;
    const int n = 2 + static_cast<int>(rng() % 30);
    for (int i = 0; i < n; ++i) {
      BufferStep step;
      for (int r = 0, reads = 1 + static_cast<int>(rng() % 3); r < reads; ++r)
        step.reads.push_back(written[rng() % written.size()]);
      for (int w = 0, writes = 1 + static_cast<int>(rng() % 2); w < writes; ++w) {
        size[next] = 64 * (1 + static_cast<int64_t>(rng() % 8));
        if (rng() % 5 == 0) own.insert(next);
        step.writes.push_back(next++);
      }
      written.insert(written.end(), step.writes.begin(), step.writes.end());
      steps.push_back(step);
    }
    const BufferPlan plan = PlanBuffers(
        steps, [&](ValueId v) { return size.at(v); }, own);
    // Each value's live steps: from the step writing it to the last step reading it.
    std::map<ValueId, std::pair<int, int>> live;
    for (int i = 0; i < n; ++i) {
      for (ValueId v : steps[i].writes) live[v] = {i, i};
      for (ValueId v : steps[i].reads)
        if (live.count(v)) live[v].second = i;
    }
    for (const auto& [v, span] : live) {
      if (own.count(v)) {
        EXPECT_FALSE(plan.block_of.count(v));
        continue;
      }
      ASSERT_TRUE(plan.block_of.count(v));
      EXPECT_GE(plan.block_bytes[plan.block_of.at(v)], size.at(v));
      for (const auto& [u, other] : live) {
        if (u <= v || own.count(u) || plan.block_of.at(u) != plan.block_of.at(v)) continue;
        EXPECT_TRUE(other.first > span.second || span.first > other.second)
            << "trial " << trial << ": " << v << " and " << u << " share a block while both live";
      }
    }
  }
}

}  // namespace
}  // namespace fusetune::testing
