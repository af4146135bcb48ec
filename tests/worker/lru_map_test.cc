// LruMap (worker/lru_map.h): the budget holds, the least recently used leave first, Find counts
// as a use, replacing a key frees its old cost, and what costs more than the whole budget is
// refused without touching the map.
#include "worker/lru_map.h"

#include <gtest/gtest.h>

#include <string>

namespace fusetune {
namespace {

TEST(LruMap, EvictsTheLeastRecentlyUsedUntilTheNewEntryFits) {
  LruMap<int> map(10);
  EXPECT_TRUE(map.Put("a", 1, 4));
  EXPECT_TRUE(map.Put("b", 2, 4));
  ASSERT_NE(map.Find("a"), nullptr);  // now b is the least recent
  EXPECT_TRUE(map.Put("c", 3, 4));
  EXPECT_FALSE(map.Contains("b"));
  EXPECT_EQ(*map.Find("a"), 1);
  EXPECT_EQ(*map.Find("c"), 3);
  EXPECT_EQ(map.cost(), 8);
  EXPECT_TRUE(map.Put("d", 4, 10));  // needs the whole budget
  EXPECT_EQ(map.size(), 1u);
  EXPECT_EQ(map.cost(), 10);
}

TEST(LruMap, ReplacingAKeyFreesItsOldCost) {
  LruMap<std::string> map(10);
  map.Put("a", "first", 6);
  map.Put("b", "other", 4);
  EXPECT_TRUE(map.Put("a", "second", 5));  // 4 + 5 fit once a's 6 are freed: b stays
  EXPECT_EQ(map.cost(), 9);
  EXPECT_EQ(*map.Find("a"), "second");
  EXPECT_TRUE(map.Contains("b"));
}

TEST(LruMap, TooCostlyIsRefusedAndTheMapKept) {
  LruMap<int> map(10);
  map.Put("a", 1, 3);
  EXPECT_FALSE(map.Put("a", 2, 11));
  EXPECT_FALSE(map.Put("b", 2, 11));
  EXPECT_EQ(*map.Find("a"), 1);
  EXPECT_FALSE(map.Contains("b"));
  EXPECT_EQ(map.cost(), 3);
}

TEST(LruMap, TakeRemovesAndReturns) {
  LruMap<int> map(10);
  map.Put("a", 7, 5);
  EXPECT_EQ(map.Take("a"), 7);
  EXPECT_EQ(map.Take("a"), std::nullopt);
  EXPECT_EQ(map.cost(), 0);
  EXPECT_EQ(map.size(), 0u);
  EXPECT_EQ(map.Find("a"), nullptr);
}

}  // namespace
}  // namespace fusetune
