// ir/group_expr: inlining composes index maps and scalar expressions, deduplicates leaves, stops
// at the anchor; and the kernel IR the element-wise template makes of the seed kernel (golden).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "group_check_util.h"
#include "ir/fusion.h"
#include "ir/group_expr.h"
#include "worker/codegen/compile.h"
#include "worker/codegen/kernel_ir.h"

namespace fusetune::testing {
namespace {

FusedGroup WholeGroup(const Graph& g) {
  std::vector<ValueId> nodes;
  for (ValueId v = 0; v < static_cast<ValueId>(g.values().size()); ++v)
    if (g.value(v).kind == ValueKind::kNode) nodes.push_back(v);
  return *AnalyzeGroup(g, nodes);
}

std::string Coords(const ExprLeaf& leaf) {
  std::string s;
  for (const IndexExpr& i : leaf.index) s += (s.empty() ? "" : ", ") + FormatIndex(i);
  return s;
}

TEST(GroupExpr, ComposesBroadcastAndScalar) {
  Graph g = ParseGraph(
      "fn (%x: Tensor[(4, 5, 6), float32], %m: Tensor[(4, 5, 1), float32]) { exp(subtract(%x, %m)) "
      "}");
  FusedGroup group = WholeGroup(g);
  InlinedExpr e = InlineValue(g, group, group.sink, IdentityCoords(3));
  ASSERT_EQ(e.leaves.size(), 2u);
  EXPECT_EQ(g.RefName(e.leaves[0].value), "%x");
  EXPECT_EQ(g.RefName(e.leaves[1].value), "%m");
  EXPECT_EQ(Coords(e.leaves[1]),
            fmt::format("{}, {}, 0", FormatIndex(ix::Var(0)), FormatIndex(ix::Var(1))));
  EXPECT_EQ(codegen::PrintScalarExpr(e.expr, {"x", "m"}), "exp((x - m))");
}

TEST(GroupExpr, DeduplicatesLeavesAndComposesTranspose) {
  Graph g = ParseGraph(
      "fn (%x: Tensor[(3, 7), float32]) { %0 = transpose(%x); %1 = multiply(%0, %0); add(%1, %0) "
      "}");
  FusedGroup group = WholeGroup(g);
  InlinedExpr e = InlineValue(g, group, group.sink, IdentityCoords(2));
  ASSERT_EQ(e.leaves.size(), 1u);  // %x read once, at the transposed position
  EXPECT_EQ(Coords(e.leaves[0]), FormatIndex(ix::Var(1)) + ", " + FormatIndex(ix::Var(0)));
  EXPECT_EQ(codegen::PrintScalarExpr(e.expr, {"x"}), "((x * x) + x)");
}

TEST(GroupExpr, StopsAtTheAnchor) {
  Graph g = ParseGraph(
      "fn (%x: Tensor[(3, 8), float32], %b: Tensor[(3, 1), float32]) { %0 = sum(%x, axis=[1], "
      "keepdims=True); "
      "%1 = add(%0, %b); negative(%1) }");
  FusedGroup group = WholeGroup(g);
  InlinedExpr e = InlineValue(g, group, group.sink, IdentityCoords(2));
  ASSERT_EQ(e.leaves.size(), 2u);
  EXPECT_EQ(e.leaves[0].kind, ExprLeaf::Kind::kAnchor);
  EXPECT_EQ(e.leaves[0].value, group.anchor);
  EXPECT_EQ(e.leaves[1].kind, ExprLeaf::Kind::kInput);
  EXPECT_EQ(codegen::PrintScalarExpr(e.expr, {"s", "b"}), "neg((s + b))");
}

TEST(GroupExpr, ConcatenateSelectsAndClamps) {
  Graph g = ParseGraph(
      "fn (%a: Tensor[(2, 3), float32], %b: Tensor[(2, 4), float32]) { concatenate((%a, %b), "
      "axis=1) }");
  FusedGroup group = WholeGroup(g);
  InlinedExpr e = InlineValue(g, group, group.sink, IdentityCoords(2));
  int clamped = 0, index_leaves = 0;
  for (const ExprLeaf& l : e.leaves) {
    clamped += l.clamp;
    index_leaves += l.kind == ExprLeaf::Kind::kIndex;
  }
  EXPECT_EQ(clamped, 2);
  EXPECT_EQ(index_leaves, 1);
  EXPECT_EQ(e.expr->op, ScalarOp::kSelect);
}

// Golden kernel IR of the seed kernel: the [100,120] outer axes collapse into one parallel loop,
// m is a per-row scalar, the 120-wide rows are vectorized (7 full vectors + a masked tail).
TEST(GroupExpr, SeedKernelIrGolden) {
  Graph g = ParseGraph(
      "fn (%x: Tensor[(100, 120, 120), float32], %m: Tensor[(100, 120, 1), float32]) { "
      "exp(subtract(%x, %m)) }");
  codegen::TargetInfo target;
  target.vector_bits = 512;
  std::string ir = codegen::PrintKernel(
      codegen::BuildGroupKernel(g, WholeGroup(g), Schedule{}, target, "sub_exp"));
  EXPECT_EQ(ir,
            "kernel sub_exp(x: float32[1440000], m: float32[12000], t1: float32[1440000]) {\n"
            "  parallel for p in 0..12000 {\n"
            "    vectorized(16) for v in 0..120 {\n"
            "      t1[((p * 120) + v)] = exp((x[((p * 120) + v)] - m[p]))\n"
            "    }\n"
            "  }\n"
            "}\n");
}

}  // namespace
}  // namespace fusetune::testing
