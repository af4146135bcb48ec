// A softmax written op by op (ir/norm_pattern.h): its five ops are one kComposite group, with
// element-wise producers of x and consumers of the division; what the row kernel cannot do is
// refused with the reason.
#include <gtest/gtest.h>

#include "ir/fusion.h"
#include "ir/norm_pattern.h"
#include "ir/plan.h"
#include "ir/plan_changes.h"
#include "ir/text/relay_parser.h"
#include "tests/fusion/softmax_ops.h"

namespace fusetune {
namespace {

using testing::DecomposedSoftmax;
using testing::Softmax;

std::string WhyNot(const Graph& g, std::vector<ValueId> nodes) {
  std::string why;
  EXPECT_FALSE(AnalyzeGroup(g, nodes, &why));
  return why;
}

TEST(SoftmaxOpByOp, TheFiveOpsAreOneRowKernelAnchoredAtTheDivision) {
  const Softmax s = DecomposedSoftmax();
  auto group = AnalyzeGroup(s.g, std::vector<ValueId>{s.mx, s.sub, s.e, s.sum, s.div});
  ASSERT_TRUE(group);
  EXPECT_EQ(group->templ, GroupTemplate::kComposite);
  EXPECT_TRUE(group->NormWrittenOpByOp());
  EXPECT_EQ(group->anchor, s.div);
  EXPECT_EQ(group->row_norm.axis, 1);
  EXPECT_EQ(group->inputs, std::vector<ValueId>{0});  // x alone: the steps are never stored
  EXPECT_EQ(group->outputs, std::vector<ValueId>{s.div});
  EXPECT_EQ(FindNormOpByOp(s.g).size(), 1u);
  // Without the division the two reductions are still two kernels.
  EXPECT_NE(WhyNot(s.g, {s.mx, s.sub, s.e, s.sum}).find("two anchors"), std::string::npos);
}

TEST(SoftmaxOpByOp, AProducerOfXAndAConsumerOfTheDivisionJoinIt) {
  const Graph g = ParseRelay(R"(fn (%x: Tensor[(2, 5, 9), float32], %m: Tensor[(9), float32]) {
  %0 = multiply(%x, 0.5f);
  %1 = max(%0, axis=[-1], keepdims=True);
  %2 = subtract(%0, %1);
  %3 = exp(%2);
  %4 = sum(%3, axis=[2], keepdims=True);
  %5 = divide(%3, %4);
  multiply(%5, %m)
})",
                             "t");
  auto group = AnalyzeGroup(g, std::vector<ValueId>{3, 4, 5, 6, 7, 8, 9});
  ASSERT_TRUE(group);
  EXPECT_EQ(group->row_norm.input, 3);  // %0
  EXPECT_EQ(group->row_norm.axis, 2);   // -1 and 2 are one axis
  EXPECT_EQ(group->sink, 9);
  const std::vector<PlanGroup> plan = {{{3, 4, 5, 6, 7, 8, 9}, {}}};
  const std::vector<PlanGroup> greedy = {{{3, 4}, {}}, {{5, 6}, {}}, {{7, 8, 9}, {}}};
  const std::vector<PlanChange> changes = ChangesFromGreedy(g, plan, greedy, 1);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].fusion, "softmax row kernel");
}

TEST(SoftmaxOpByOp, WhatIsNotASoftmaxOrNeedsAStepStoredIsRefused) {
  auto parse = [](const std::string& sum_axis, const std::string& shift, const std::string& tail) {
    return ParseRelay(
        "fn (%x: Tensor[(4, 8), float32]) {\n  %0 = max(%x, axis=[1], keepdims=True);\n"
        "  %1 = " +
            shift + ";\n  %2 = exp(%1);\n  %3 = sum(%2, axis=[" + sum_axis +
            "], keepdims=True);\n  %4 = divide(%2, %3);\n" + tail + "\n}",
        "t");
  };
  const std::vector<ValueId> five = {1, 2, 3, 4, 5};
  // Reductions over different axes, or the shift the other way round: two reductions.
  EXPECT_NE(WhyNot(parse("0", "subtract(%x, %0)", "  %4"), five).find("two anchors"),
            std::string::npos);
  EXPECT_NE(WhyNot(parse("1", "subtract(%0, %x)", "  %4"), five).find("two anchors"),
            std::string::npos);
  // The exponent read outside the group would have to be stored.
  const Graph read_outside = parse("1", "subtract(%x, %0)", "  %5 = add(%4, %2);\n  (%5, %2)");
  EXPECT_NE(WhyNot(read_outside, five).find("read outside the group"), std::string::npos);
  // A consumer of the division that reads a step needs it at the output's index.
  const Graph epilogue_reads_step = parse("1", "subtract(%x, %0)", "  add(%4, %2)");
  EXPECT_NE(WhyNot(epilogue_reads_step, {1, 2, 3, 4, 5, 6}).find("a step inside the softmax"),
            std::string::npos);
}

}  // namespace
}  // namespace fusetune
