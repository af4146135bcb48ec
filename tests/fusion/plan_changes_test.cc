// What a plan does that the rules do not (ir/plan_changes.h): how a tune's report names what won.
#include <gtest/gtest.h>

#include "ir/fusion.h"
#include "ir/plan.h"
#include "ir/plan_changes.h"
#include "ir/schedule_space.h"

namespace fusetune {
namespace {

TensorType F32(Shape s) { return {DType::kFloat32, std::move(s)}; }

// x [32, 64] read by two denses, each followed by a bias add and a relu.
struct TwoDenses {
  Graph graph;
  ValueId dense[2], bias[2], relu[2];
};

TwoDenses MakeTwoDenses() {
  GraphBuilder b;
  TwoDenses t;
  const ValueId x = b.AddParam("x", F32({32, 64}));
  std::vector<ValueId> outs;
  for (int i = 0; i < 2; ++i) {
    const ValueId w = b.AddParam("w" + std::to_string(i), F32({48, 64}));
    const ValueId bias = b.AddParam("b" + std::to_string(i), F32({48}));
    t.dense[i] = b.AddNode("nn.dense", {x, w}, {});
    t.bias[i] = b.AddNode("add", {t.dense[i], bias}, {});
    t.relu[i] = b.AddNode("nn.relu", {t.bias[i]}, {});
    outs.push_back(t.relu[i]);
  }
  b.SetOutputs(outs, true);
  t.graph = std::move(b).Build();
  return t;
}

Schedule DefaultOf(const Graph& g, std::vector<ValueId> nodes) {
  return ScheduleSpace(g, *AnalyzeGroup(g, nodes), 1).front();
}

// Greedy with every group on its default schedule, as the baseline runs it.
std::vector<PlanGroup> GreedyOnDefaults(const Graph& g) {
  std::vector<PlanGroup> groups = GreedyPlan(g).groups;
  for (PlanGroup& pg : groups) pg.schedule = DefaultOf(g, pg.nodes);
  return groups;
}

TEST(PlanChanges, GreedyOnDefaultsHasNone) {
  TwoDenses t = MakeTwoDenses();
  const std::vector<PlanGroup> greedy = GreedyOnDefaults(t.graph);
  ASSERT_EQ(greedy.size(), 2u);  // each dense with its bias add and relu
  EXPECT_TRUE(ChangesFromGreedy(t.graph, greedy, greedy, 1).empty());
}

TEST(PlanChanges, NamesEachKindOfGroupGreedyDoesNotForm) {
  TwoDenses t = MakeTwoDenses();
  const std::vector<PlanGroup> greedy = GreedyOnDefaults(t.graph);
  // Both products and bias adds as one GEMM; the relus alone and together: not greedy's groups.
  const std::vector<ValueId> horizontal = {t.dense[0], t.bias[0], t.dense[1], t.bias[1]};
  const std::vector<PlanGroup> plan = {
      {horizontal, DefaultOf(t.graph, horizontal)}, {{t.relu[0]}, {}}, {{t.relu[1]}, {}}};
  const std::vector<PlanChange> changes = ChangesFromGreedy(t.graph, plan, greedy, 1);
  ASSERT_EQ(changes.size(), 3u);
  EXPECT_EQ(changes[0].fusion, "horizontal GEMM");
  EXPECT_EQ(changes[0].nodes, horizontal);
  EXPECT_EQ(changes[0].schedule, "");
  EXPECT_EQ(changes[1].fusion, "no fusion");
  EXPECT_EQ(changes[2].fusion, "no fusion");

  const std::vector<ValueId> dense_bias = {t.dense[0], t.bias[0]};
  const std::vector<PlanGroup> split = {
      {dense_bias, DefaultOf(t.graph, dense_bias)}, {{t.relu[0]}, {}}, greedy[1]};
  const std::vector<PlanChange> split_changes = ChangesFromGreedy(t.graph, split, greedy, 1);
  ASSERT_EQ(split_changes.size(), 2u);
  EXPECT_EQ(split_changes[0].fusion, "other grouping");
  EXPECT_EQ(split_changes[0].nodes, dense_bias);
}

// The head merge of attention computed in the out projection's packing of A: greedy stores it.
TEST(PlanChanges, AProducerOfAMatmulOperandIsAPrologue) {
  GraphBuilder b;
  const ValueId heads = b.AddParam("heads", F32({4, 8, 16}));
  const ValueId t = b.AddNode("transpose", {heads}, Attrs({{"axes", IntList{1, 0, 2}}}));
  const ValueId r = b.AddNode("reshape", {t}, Attrs({{"newshape", IntList{8, 64}}}));
  const ValueId d = b.AddNode("nn.dense", {r, b.AddParam("w", F32({32, 64}))}, {});
  const ValueId relu = b.AddNode("nn.relu", {d}, {});
  b.SetOutputs({relu}, false);
  const Graph g = std::move(b).Build();
  const std::vector<PlanGroup> greedy = GreedyOnDefaults(g);
  ASSERT_EQ(greedy.size(), 2u) << "the head merge, then the dense with its relu";
  const std::vector<ValueId> merged = {t, r, d, relu};
  const std::vector<PlanChange> changes =
      ChangesFromGreedy(g, {{merged, DefaultOf(g, merged)}}, greedy, 1);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].fusion, "matmul prologue");
}

TEST(PlanChanges, ASearchedScheduleIsNamedByTheKnobsItChanges) {
  TwoDenses t = MakeTwoDenses();
  std::vector<PlanGroup> greedy = GreedyOnDefaults(t.graph);
  std::vector<PlanGroup> plan = greedy;
  const int64_t mr = plan[1].schedule.Get("mr", -1);
  ASSERT_NE(mr, -1) << plan[1].schedule.ToString();
  plan[1].schedule.Set("mr", mr == 8 ? 4 : 8);
  const std::vector<PlanChange> changes = ChangesFromGreedy(t.graph, plan, greedy, 1);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].fusion, "");  // greedy's group
  EXPECT_EQ(changes[0].schedule, plan[1].schedule.ToString());
  EXPECT_EQ(changes[0].knobs_changed, mr == 8 ? "mr=4" : "mr=8");
  EXPECT_EQ(DescribeChanges(t.graph, changes),
            "schedule " + changes[0].knobs_changed + " [%" + t.graph.value(t.dense[1]).name + " %" +
                t.graph.value(t.bias[1]).name + " %" + t.graph.value(t.relu[1]).name + "]");
}

}  // namespace
}  // namespace fusetune
