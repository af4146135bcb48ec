// Horizontal fusion's legality (ir/fusion.h): sibling matmuls that read the same A, each with its
// element-wise epilogue, are one group; anything else that is not connected is refused with the
// reason. TVM's rules (the greedy baseline) never form such a group.
#include <gtest/gtest.h>

#include "ir/fusion.h"
#include "ir/plan.h"

namespace fusetune {
namespace {

TensorType F32(Shape s) { return {DType::kFloat32, std::move(s)}; }

// x [m, k] read by `count` denses with weights [n_i, k], each followed by a bias add.
struct Siblings {
  Graph graph;
  ValueId x = -1;
  std::vector<ValueId> dense, bias;
};

Siblings MakeSiblings(std::vector<int64_t> widths, int64_t m = 8, int64_t k = 16) {
  GraphBuilder b;
  Siblings s;
  s.x = b.AddParam("x", F32({m, k}));
  std::vector<ValueId> outs;
  for (size_t i = 0; i < widths.size(); ++i) {
    ValueId w = b.AddParam("w" + std::to_string(i), F32({widths[i], k}));
    ValueId bias = b.AddParam("b" + std::to_string(i), F32({widths[i]}));
    s.dense.push_back(b.AddNode("nn.dense", {s.x, w}, {}));
    s.bias.push_back(b.AddNode("add", {s.dense.back(), bias}, {}));
    outs.push_back(s.bias.back());
  }
  b.SetOutputs(outs, true);
  s.graph = std::move(b).Build();
  return s;
}

TEST(Horizontal, SiblingDensesWithTheirBiasAddsAreOneGroup) {
  Siblings s = MakeSiblings({24, 24, 40});
  std::vector<ValueId> nodes = {s.dense[0], s.bias[0],  s.dense[1],
                                s.bias[1],  s.dense[2], s.bias[2]};
  std::string why;
  auto group = AnalyzeGroup(s.graph, nodes, &why);
  ASSERT_TRUE(group) << why;
  EXPECT_TRUE(group->Horizontal());
  EXPECT_EQ(group->templ, GroupTemplate::kMatmul);
  ASSERT_EQ(group->parts.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(group->parts[i].anchor, s.dense[i]);
    EXPECT_EQ(group->parts[i].nodes, (std::vector<ValueId>{s.dense[i], s.bias[i]}));
    EXPECT_EQ(group->parts[i].outputs, (std::vector<ValueId>{s.bias[i]}));
  }
  EXPECT_EQ(group->anchor, s.dense[0]);
  EXPECT_EQ(group->sink, -1);
  EXPECT_EQ(group->outputs, (std::vector<ValueId>{s.bias[0], s.bias[1], s.bias[2]}));
  // x once, then three weights and three biases.
  EXPECT_EQ(group->inputs.size(), 7u);
  EXPECT_EQ(group->inputs[0], s.x);
}

TEST(Horizontal, ProductsAloneAndMixedEpiloguesAreGroups) {
  Siblings s = MakeSiblings({24, 32});
  auto alone = AnalyzeGroup(s.graph, std::vector<ValueId>{s.dense[0], s.dense[1]});
  ASSERT_TRUE(alone);
  EXPECT_EQ(alone->outputs, (std::vector<ValueId>{s.dense[0], s.dense[1]}));
  auto mixed = AnalyzeGroup(s.graph, std::vector<ValueId>{s.dense[0], s.bias[0], s.dense[1]});
  ASSERT_TRUE(mixed);
  EXPECT_EQ(mixed->parts.size(), 2u);
  // A connected group is never horizontal.
  auto single = AnalyzeGroup(s.graph, std::vector<ValueId>{s.dense[0], s.bias[0]});
  ASSERT_TRUE(single);
  EXPECT_FALSE(single->Horizontal());
  EXPECT_TRUE(single->parts.empty());
}

TEST(Horizontal, FiveSiblingsAreTooMany) {
  Siblings s = MakeSiblings({16, 16, 16, 16, 16});
  std::string why;
  EXPECT_TRUE(AnalyzeGroup(s.graph, std::vector<ValueId>(s.dense.begin(), s.dense.begin() + 4)));
  EXPECT_FALSE(AnalyzeGroup(s.graph, s.dense, &why));
  EXPECT_NE(why.find("at most 4"), std::string::npos) << why;
}

TEST(Horizontal, DifferentInputsAreRefused) {
  GraphBuilder b;
  ValueId x = b.AddParam("x", F32({8, 16}));
  ValueId y = b.AddParam("y", F32({8, 16}));
  ValueId w = b.AddParam("w", F32({24, 16}));
  ValueId d0 = b.AddNode("nn.dense", {x, w}, Attrs());
  ValueId d1 = b.AddNode("nn.dense", {y, w}, Attrs());
  // The same weight as B is not the same A: these are not siblings.
  b.SetOutputs({d0, d1}, true);
  Graph g = std::move(b).Build();
  std::string why;
  EXPECT_FALSE(AnalyzeGroup(g, std::vector<ValueId>{d0, d1}, &why));
  EXPECT_NE(why.find("different A"), std::string::npos) << why;
}

TEST(Horizontal, DifferentKIsRefused) {
  GraphBuilder b;
  ValueId x = b.AddParam("x", F32({8, 16}));
  ValueId w0 = b.AddParam("w0", F32({24, 16}));
  ValueId x2 = b.AddNode("reshape", {x}, Attrs({{"newshape", IntList{16, 8}}}));
  ValueId w1 = b.AddParam("w1", F32({24, 8}));
  ValueId d0 = b.AddNode("nn.dense", {x, w0}, Attrs());
  ValueId d1 = b.AddNode("nn.dense", {x2, w1}, Attrs());
  b.SetOutputs({d0, d1}, true);
  Graph g = std::move(b).Build();
  EXPECT_FALSE(AnalyzeGroup(g, std::vector<ValueId>{d0, d1}));
}

TEST(Horizontal, APathBetweenSiblingsIsRefused) {
  // %1 reads x; its weight is computed from %0, which also reads x: a path %0 -> relu -> %1.
  GraphBuilder b;
  ValueId x = b.AddParam("x", F32({16, 16}));
  ValueId w = b.AddParam("w", F32({16, 16}));
  ValueId d0 = b.AddNode("nn.dense", {x, w}, Attrs());
  ValueId r = b.AddNode("nn.relu", {d0}, Attrs());
  ValueId d1 = b.AddNode("nn.dense", {x, r}, Attrs());
  b.SetOutputs({d1}, false);
  Graph g = std::move(b).Build();
  std::string why;
  EXPECT_FALSE(AnalyzeGroup(g, std::vector<ValueId>{d0, d1}, &why));
  EXPECT_NE(why.find("not convex"), std::string::npos) << why;
}

TEST(Horizontal, PiecesThatAreNotMatmulsAreRefused) {
  GraphBuilder b;
  ValueId x = b.AddParam("x", F32({8, 16}));
  ValueId e0 = b.AddNode("exp", {x}, Attrs());
  ValueId e1 = b.AddNode("nn.relu", {x}, Attrs());
  b.SetOutputs({e0, e1}, true);
  Graph g = std::move(b).Build();
  std::string why;
  EXPECT_FALSE(AnalyzeGroup(g, std::vector<ValueId>{e0, e1}, &why));
  EXPECT_NE(why.find("group is not connected"), std::string::npos) << why;
}

TEST(Horizontal, ASiblingWithAPrologueIsRefused) {
  GraphBuilder b;
  ValueId x = b.AddParam("x", F32({8, 16}));
  ValueId w0 = b.AddParam("w0", F32({24, 16}));
  ValueId w1 = b.AddParam("w1", F32({24, 16}));
  ValueId t = b.AddNode("nn.relu", {w1}, Attrs());
  ValueId d0 = b.AddNode("nn.dense", {x, w0}, Attrs());
  ValueId d1 = b.AddNode("nn.dense", {x, t}, Attrs());
  b.SetOutputs({d0, d1}, true);
  Graph g = std::move(b).Build();
  std::string why;
  EXPECT_TRUE(AnalyzeGroup(g, std::vector<ValueId>{d0, d1}, &why)) << why;
  EXPECT_FALSE(AnalyzeGroup(g, std::vector<ValueId>{t, d0, d1}, &why));
  EXPECT_NE(why.find("prologue"), std::string::npos) << why;
}

TEST(Horizontal, GreedyNeverFormsAHorizontalGroup) {
  Siblings s = MakeSiblings({24, 24, 24});
  Plan greedy = GreedyPlan(s.graph);
  ASSERT_EQ(greedy.groups.size(), 3u);
  for (const PlanGroup& pg : greedy.groups) {
    auto group = AnalyzeGroup(s.graph, pg.nodes);
    ASSERT_TRUE(group);
    EXPECT_FALSE(group->Horizontal());
  }
}

TEST(Horizontal, APlanWithAHorizontalGroupValidatesAndRoundTripsAsJson) {
  Siblings s = MakeSiblings({24, 40});
  Plan plan{"h", {{{s.dense[0], s.bias[0], s.dense[1], s.bias[1]}, {}}}};
  plan.groups[0].schedule.Set("nr", 32);
  ValidatePlan(s.graph, plan);
  std::string json = PlanToJson(s.graph, plan);
  Plan back = PlanFromJson(s.graph, json, "plan.json");
  ASSERT_EQ(back.groups.size(), 1u);
  EXPECT_EQ(back.groups[0].nodes, plan.groups[0].nodes);
  EXPECT_EQ(back.groups[0].schedule, plan.groups[0].schedule);
}

}  // namespace
}  // namespace fusetune
