// A layer norm written op by op (ir/norm_pattern.h): mean, subtract, square, mean, add eps, sqrt
// and divide (and the other spellings of a mean and a root) are one kComposite group, with
// element-wise producers of x (a residual add) and consumers of the division (its scale and shift);
// the seven count as two ops against the size bound; what is not a layer norm or needs a step
// stored is refused with the reason. ONNX imports rebuild the same chain as nn.layer_norm
// (ir/layer_norm_pattern.h).
#include <gtest/gtest.h>

#include "ir/fusion.h"
#include "ir/layer_norm_pattern.h"
#include "ir/norm_pattern.h"
#include "ir/plan.h"
#include "ir/plan_changes.h"
#include "ir/text/relay_parser.h"

namespace fusetune {
namespace {

std::string WhyNot(const Graph& g, std::vector<ValueId> nodes) {
  std::string why;
  EXPECT_FALSE(AnalyzeGroup(g, nodes, &why));
  return why;
}

// BERT's norm as TVM imports it from ONNX (examples/layer_norm_ops.relay), after a residual add;
// `square` and `eps` vary the spelling.
Graph Norm(const std::string& square = "power(%2, 2f)", const std::string& eps = "add(%4, 1e-12f)",
           const std::string& tail = "%9") {
  return ParseRelay(
      "fn (%x: Tensor[(6, 45), float32], %r: Tensor[(6, 45), float32],\n"
      "    %gamma: Tensor[(45), float32], %beta: Tensor[(45), float32]) {\n"
      "  %0 = add(%x, %r);\n  %1 = mean(%0, axis=[-1], keepdims=True);\n"
      "  %2 = subtract(%0, %1);\n  %3 = " +
          square + ";\n  %4 = mean(%3, axis=[1], keepdims=True);\n  %5 = " + eps +
          ";\n  %6 = sqrt(%5);\n  %7 = divide(%2, %6);\n  %8 = multiply(%7, %gamma);\n"
          "  %9 = add(%8, %beta);\n  " +
          tail + "\n}",
      "t");
}

std::vector<ValueId> Nodes(const Graph& g, std::initializer_list<int> names) {
  std::vector<ValueId> ids;
  for (int n : names) ids.push_back(*g.FindByName(std::to_string(n)));
  return ids;
}

TEST(LayerNormOpByOp, TheSevenOpsAreOneRowKernelAnchoredAtTheDivision) {
  const Graph g = Norm();
  auto group = AnalyzeGroup(g, Nodes(g, {1, 2, 3, 4, 5, 6, 7}));
  ASSERT_TRUE(group);
  EXPECT_EQ(group->templ, GroupTemplate::kComposite);
  ASSERT_TRUE(group->NormWrittenOpByOp());
  EXPECT_EQ(group->row_norm.kind, RowNorm::kLayerNorm);
  EXPECT_EQ(group->anchor, Nodes(g, {7})[0]);
  EXPECT_EQ(group->row_norm.input, Nodes(g, {0})[0]);
  EXPECT_EQ(group->row_norm.axis, 1);  // -1 and 1 are one axis
  EXPECT_FLOAT_EQ(static_cast<float>(group->row_norm.epsilon), 1e-12f);
  // %0 and the constants 2 and eps: the steps are never stored.
  for (ValueId in : group->inputs)
    EXPECT_TRUE(in == Nodes(g, {0})[0] || g.value(in).kind == ValueKind::kConst) << in;
  EXPECT_EQ(FindNormOpByOp(g).size(), 1u);
  EXPECT_EQ(OpsCounted(g, Nodes(g, {1, 2, 3, 4, 5, 6, 7})), 2u);
}

TEST(LayerNormOpByOp, TheResidualAddTheScaleAndTheShiftJoinIt) {
  const Graph g = Norm();
  const std::vector<ValueId> all = Nodes(g, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  auto group = AnalyzeGroup(g, all);
  ASSERT_TRUE(group);
  EXPECT_EQ(group->templ, GroupTemplate::kComposite);
  EXPECT_EQ(group->sink, Nodes(g, {9})[0]);
  EXPECT_EQ(OpsCounted(g, all), 5u);  // within the default size of 8
  const std::vector<PlanGroup> plan = {{all, {}}};
  const std::vector<PlanGroup> greedy = {
      {Nodes(g, {0, 1}), {}}, {Nodes(g, {2, 3, 4}), {}}, {Nodes(g, {5, 6, 7, 8, 9}), {}}};
  const std::vector<PlanChange> changes = ChangesFromGreedy(g, plan, greedy, 1);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].fusion, "layer norm row kernel");
}

TEST(LayerNormOpByOp, TheSquareAsAProductAndEpsilonOnTheLeftAreTheSameNorm) {
  const Graph g = Norm("multiply(%2, %2)", "add(1e-5f, %4)");
  auto group = AnalyzeGroup(g, Nodes(g, {1, 2, 3, 4, 5, 6, 7}));
  ASSERT_TRUE(group);
  EXPECT_EQ(group->row_norm.kind, RowNorm::kLayerNorm);
  EXPECT_FLOAT_EQ(static_cast<float>(group->row_norm.epsilon), 1e-5f);
}

TEST(LayerNormOpByOp, WhatIsNotALayerNormOrNeedsAStepStoredIsRefused) {
  auto why_not_seven = [](const Graph& g) { return WhyNot(g, Nodes(g, {1, 2, 3, 4, 5, 6, 7})); };
  // A cube is no variance, and the two means stay two reductions.
  EXPECT_NE(why_not_seven(Norm("power(%2, 3f)")).find("two anchors"), std::string::npos);
  // Epsilon that is a tensor, not a scalar constant.
  EXPECT_NE(why_not_seven(Norm("power(%2, 2f)", "add(%4, %1)")).find("two anchors"),
            std::string::npos);
  // x - mean read outside the group would have to be stored.
  const Graph g = Norm("power(%2, 2f)", "add(%4, 1e-12f)", "%10 = add(%9, %2);\n  %10");
  EXPECT_NE(why_not_seven(g).find("read outside the group"), std::string::npos);
  // A consumer of the division that reads a step needs it at the output's index.
  EXPECT_NE(
      WhyNot(g, Nodes(g, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10})).find("a step inside the layer norm"),
      std::string::npos);
}

// TensorFlow's spelling: the deviation's reciprocal root times x - mean.
TEST(LayerNormOpByOp, TheReciprocalRootTimesTheDeviationIsTheSameNorm) {
  const Graph g = ParseRelay(R"(fn (%x: Tensor[(6, 45), float32]) {
  %0 = mean(%x, axis=[1], keepdims=True);
  %1 = subtract(%x, %0);
  %2 = multiply(%1, %1);
  %3 = mean(%2, axis=[1], keepdims=True);
  %4 = add(%3, 1e-6f);
  %5 = rsqrt(%4);
  multiply(%5, %1)
})",
                             "t");
  auto group = AnalyzeGroup(g, Nodes(g, {0, 1, 2, 3, 4, 5, 6}));
  ASSERT_TRUE(group);
  EXPECT_EQ(group->row_norm.kind, RowNorm::kLayerNorm);
  EXPECT_EQ(group->anchor, Nodes(g, {6})[0]);
}

// Means written as a sum times 1/n or over n (hand-written norms), for the centre and the
// variance alike: the same layer norm, its two extra ops steps of the row kernel.
TEST(LayerNormOpByOp, MeansAsASumTimesOneOverNOrOverNAreTheSameNorm) {
  auto norm = [](const std::string& scale) {
    return ParseRelay(R"(fn (%x: Tensor[(6, 45), float32]) {
  %0 = sum(%x, axis=[1], keepdims=True);
  %1 = divide(%0, 45f);
  %2 = subtract(%x, %1);
  %3 = multiply(%2, %2);
  %4 = sum(%3, axis=[-1], keepdims=True);
  %5 = )" + scale + R"(;
  %6 = add(%5, 1e-5f);
  %7 = sqrt(%6);
  divide(%2, %7)
})",
                      "t");
  };
  for (const std::string scale : {"multiply(0.0222222228f, %4)", "multiply(%4, 0.0222222228f)"}) {
    const Graph g = norm(scale);
    const std::vector<ValueId> all = Nodes(g, {0, 1, 2, 3, 4, 5, 6, 7, 8});
    std::string why;
    auto group = AnalyzeGroup(g, all, &why);
    ASSERT_TRUE(group) << scale << ": " << why;
    EXPECT_EQ(group->row_norm.kind, RowNorm::kLayerNorm);
    EXPECT_EQ(group->row_norm.input, 0);  // %x
    EXPECT_EQ(group->row_norm.axis, 1);
    EXPECT_EQ(group->anchor, Nodes(g, {8})[0]);
    EXPECT_EQ(OpsCounted(g, all), 2u);
  }
  // A scale that is not 1/n is no mean: the two sums stay two reductions.
  const Graph off = norm("multiply(%4, 0.0217f)");
  EXPECT_NE(WhyNot(off, Nodes(off, {0, 1, 2, 3, 4, 5, 6, 7, 8})).find("two anchors"),
            std::string::npos);
  EXPECT_TRUE(FindNormOpByOp(off).empty());
}

// An RMS norm (T5, LLaMA): x * rsqrt(mean(x²) + eps) * w. One reduction, but its output is
// read with x again, so the rules' reduction kernel cannot take the product: two kernels, x read
// twice.
TEST(LayerNormOpByOp, AnRmsNormIsOneRowKernelWithItsWeight) {
  const Graph g = ParseRelay(R"(fn (%x: Tensor[(6, 45), float32], %w: Tensor[(45), float32]) {
  %0 = power(%x, 2f);
  %1 = mean(%0, axis=[-1], keepdims=True);
  %2 = add(%1, 1e-6f);
  %3 = rsqrt(%2);
  %4 = multiply(%x, %3);
  multiply(%4, %w)
})",
                             "t");
  const std::vector<ValueId> all = Nodes(g, {0, 1, 2, 3, 4, 5});
  std::string why;
  auto group = AnalyzeGroup(g, all, &why);
  ASSERT_TRUE(group) << why;
  EXPECT_EQ(group->templ, GroupTemplate::kComposite);
  EXPECT_EQ(group->row_norm.kind, RowNorm::kRmsNorm);
  EXPECT_EQ(group->row_norm.input, 0);  // %x
  EXPECT_EQ(group->anchor, Nodes(g, {4})[0]);
  EXPECT_EQ(OpsCounted(g, all), 3u);
  const std::vector<PlanChange> changes =
      ChangesFromGreedy(g, {{all, {}}}, {{Nodes(g, {0, 1, 2, 3}), {}}, {Nodes(g, {4, 5}), {}}}, 1);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].fusion, "RMS norm row kernel");
  // The ONNX import rebuilds layer norms only: an RMS norm stays as written.
  int fused = -1;
  FuseDecomposedLayerNorms(g, {}, &fused);
  EXPECT_EQ(fused, 0);
}

// PyTorch's ONNX export has no rsqrt: LLaMA's norm arrives as x * (1 / sqrt(mean(x²) + eps)),
// the reciprocal a division of the constant 1 (ONNX's Reciprocal imports as the same).
TEST(LayerNormOpByOp, TheReciprocalOfTheRootAsADivisionOfOneIsTheSameNorm) {
  auto rms = [](const std::string& one) {
    return ParseRelay(R"(fn (%x: Tensor[(6, 45), float32], %w: Tensor[(45), float32]) {
  %0 = power(%x, 2f);
  %1 = mean(%0, axis=[-1], keepdims=True);
  %2 = add(%1, 1e-6f);
  %3 = sqrt(%2);
  %4 = divide()" + one + R"(, %3);
  %5 = multiply(%x, %4);
  multiply(%5, %w)
})",
                      "t");
  };
  const Graph g = rms("1f");
  const std::vector<ValueId> all = Nodes(g, {0, 1, 2, 3, 4, 5, 6});
  std::string why;
  auto group = AnalyzeGroup(g, all, &why);
  ASSERT_TRUE(group) << why;
  EXPECT_EQ(group->row_norm.kind, RowNorm::kRmsNorm);
  EXPECT_EQ(group->anchor, Nodes(g, {5})[0]);
  EXPECT_FLOAT_EQ(static_cast<float>(group->row_norm.epsilon), 1e-6f);
  EXPECT_EQ(OpsCounted(g, all), 3u);
  // 2 / sqrt(t) is twice the norm: not this op.
  EXPECT_TRUE(FindNormOpByOp(rms("2f")).empty());
}

// The import's rewrite (ir/layer_norm_pattern.h) takes the same chain, in either spelling.
TEST(LayerNormOpByOp, TheImportRebuildsBothSpellingsAsOneLayerNorm) {
  for (const char* square : {"power(%2, 2f)", "multiply(%2, %2)"}) {
    int fused = 0;
    const Graph g = FuseDecomposedLayerNorms(Norm(square), {}, &fused);
    EXPECT_EQ(fused, 1) << square;
    int norms = 0;
    for (const Value& v : g.values())
      norms += v.kind == ValueKind::kNode && v.op->name == "nn.layer_norm";
    EXPECT_EQ(norms, 1) << square;
  }
}

}  // namespace
}  // namespace fusetune
