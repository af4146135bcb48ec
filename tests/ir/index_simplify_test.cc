// Divisions and mods made trivial by the iteration space (ir/index_simplify.h): the head split's
// reshape, read over [heads, seq, depth], must lower to plain sums, and no simplification may
// change a value anywhere in the space.
#include <gtest/gtest.h>

#include <vector>

#include "ir/index_simplify.h"

namespace fusetune {
namespace {

TEST(DropTrivial, AHeadSplitReshapeBecomesDivisionFree) {
  // Element (h, s, d) of [12, 256, 64] in the projection's [256, 768] output: flat s·768 + h·64 +
  // d.
  const std::vector<int64_t> extents{12, 256, 64};
  const IndexExpr flat = ix::Add(
      ix::Add(ix::Mul(ix::Var(1), ix::Const(768)), ix::Mul(ix::Var(0), ix::Const(64))), ix::Var(2));
  const IndexExpr row = DropTrivial(ix::FloorDiv(flat, ix::Const(768)), extents);
  const IndexExpr col = DropTrivial(ix::Mod(flat, ix::Const(768)), extents);
  EXPECT_EQ(FormatIndex(row).find('/'), std::string::npos) << FormatIndex(row);
  EXPECT_EQ(FormatIndex(col).find('%'), std::string::npos) << FormatIndex(col);
  for (int64_t h : {0, 5, 11})
    for (int64_t s : {0, 17, 255})
      for (int64_t d : {0, 63}) {
        const std::vector<int64_t> at{h, s, d};
        EXPECT_EQ(EvalIndex(row, at), s);
        EXPECT_EQ(EvalIndex(col, at), h * 64 + d);
      }
}

TEST(DropTrivial, KeepsADivisionThatMatters) {
  // d in [0, 100): d / 64 and d % 64 change with d, so they stay.
  const std::vector<int64_t> extents{100};
  const IndexExpr div = DropTrivial(ix::FloorDiv(ix::Var(0), ix::Const(64)), extents);
  const IndexExpr mod = DropTrivial(ix::Mod(ix::Var(0), ix::Const(64)), extents);
  for (int64_t d = 0; d < 100; ++d) {
    const std::vector<int64_t> at{d};
    EXPECT_EQ(EvalIndex(div, at), d / 64);
    EXPECT_EQ(EvalIndex(mod, at), d % 64);
  }
}

}  // namespace
}  // namespace fusetune
