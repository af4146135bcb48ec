// Recomputation (ir/fusion.h): which members a group may recompute instead of storing, and plans
// whose groups share the nodes they recompute (ir/plan.h).
#include <gtest/gtest.h>

#include "ir/error.h"
#include "ir/fusion.h"
#include "ir/plan.h"
#include "ir/plan_changes.h"
#include "tests/fusion/softmax_ops.h"

namespace fusetune {
namespace {

using testing::DecomposedSoftmax;
using testing::Softmax;

std::string WhyNot(const Graph& g, std::vector<ValueId> nodes, std::vector<ValueId> recompute) {
  std::string why;
  EXPECT_FALSE(AnalyzeGroup(g, nodes, &why, recompute));
  return why;
}

TEST(Recompute, ARecomputedMemberIsNeverAnOutputAndItsOutsideReadersDoNotBreakConvexity) {
  const Softmax s = DecomposedSoftmax();
  // Storing the exponent: it feeds the sum and is read outside, so the group cannot be a kernel;
  // with the division outside it, the path exp -> sum -> divide leaves and re-enters.
  EXPECT_NE(WhyNot(s.g, {s.sub, s.e, s.sum}, {}).find("also used outside"), std::string::npos);
  EXPECT_NE(WhyNot(s.g, {s.sub, s.e, s.div}, {}).find("not convex"), std::string::npos);
  auto sum = AnalyzeGroup(s.g, std::vector<ValueId>{s.sub, s.e, s.sum}, nullptr,
                          std::vector<ValueId>{s.sub, s.e});
  ASSERT_TRUE(sum);
  EXPECT_EQ(sum->templ, GroupTemplate::kReduce);
  EXPECT_EQ(sum->outputs, std::vector<ValueId>{s.sum});
  EXPECT_EQ(sum->recompute, (std::vector<ValueId>{s.sub, s.e}));
  auto div = AnalyzeGroup(s.g, std::vector<ValueId>{s.sub, s.e, s.div}, nullptr,
                          std::vector<ValueId>{s.sub, s.e});
  ASSERT_TRUE(div);
  EXPECT_EQ(div->templ, GroupTemplate::kElementwise);
  EXPECT_EQ(div->outputs, std::vector<ValueId>{s.div});
  EXPECT_EQ(div->inputs, (std::vector<ValueId>{0, s.mx, s.sum}));  // x, the max and the sum
}

TEST(Recompute, RefusesWhatCannotBeRecomputed) {
  const Softmax s = DecomposedSoftmax();
  EXPECT_NE(WhyNot(s.g, {s.e, s.div}, {s.sub}).find("not in the group"), std::string::npos);
  EXPECT_NE(WhyNot(s.g, {s.e, s.sum}, {s.sum}).find("only such ops are recomputed"),
            std::string::npos);
  EXPECT_NE(WhyNot(s.g, {s.sum, s.div}, {s.div}).find("graph output"), std::string::npos);
  EXPECT_NE(WhyNot(s.g, {s.sub, s.e}, {s.e}).find("no member reads it"), std::string::npos);
}

TEST(Recompute, TheSearchOffersToRecomputeOnlyCheapMembersAndNeverIntoAMatmul) {
  GraphBuilder b;
  const ValueId x = b.AddParam("x", TensorType{DType::kFloat32, {4, 8}});
  const ValueId w = b.AddParam("w", TensorType{DType::kFloat32, {8, 8}});
  const Attrs row = Attrs({{"axis", IntList{1}}, {"keepdims", true}});
  const ValueId m = b.AddNode("mean", {x}, row);
  const ValueId d = b.AddNode("subtract", {x, m}, {});  // read by the square and the division
  const ValueId sq = b.AddNode("multiply", {d, d}, {});
  const ValueId v = b.AddNode("mean", {sq}, row);
  const ValueId q = b.AddNode("divide", {d, v}, {});
  const ValueId t = b.AddNode("multiply", {q, q}, {});  // read by a matmul and by an add
  const ValueId mm = b.AddNode("nn.dense", {t, w}, {});
  const ValueId out = b.AddNode("add", {mm, t}, {});
  b.SetOutputs({out}, false);
  const Graph g = std::move(b).Build();
  EXPECT_EQ(RecomputableMembers(g, std::vector<ValueId>{d, sq, v}), std::vector<ValueId>{d});
  EXPECT_EQ(RecomputableMembers(g, std::vector<ValueId>{d, q}), std::vector<ValueId>{d});
  // Nothing read outside: no variant.
  EXPECT_FALSE(RecomputableMembers(g, std::vector<ValueId>{sq, v}));
  // The division is not cheap: it stays stored, and so does what it reads.
  EXPECT_FALSE(RecomputableMembers(g, std::vector<ValueId>{q, t}));
  // A member a matmul reads, and any group holding a matmul: never.
  EXPECT_FALSE(RecomputableMembers(g, std::vector<ValueId>{t, out}));
  EXPECT_FALSE(RecomputableMembers(g, std::vector<ValueId>{d, q, t, mm}));
  // The softmax's exponent is not cheap either (a tie, measured: BENCHMARKS.md).
  const Softmax s = DecomposedSoftmax();
  EXPECT_FALSE(RecomputableMembers(s.g, std::vector<ValueId>{s.sub, s.e, s.sum}));
}

TEST(Recompute, NotOfferedWhereTheReadersCouldShareItOrAnAnchorReadsItOrForSeveralValues) {
  GraphBuilder b;
  const TensorType t{DType::kFloat32, {4, 8}};
  const ValueId x = b.AddParam("x", t), y = b.AddParam("y", t);
  // h read thrice along one chain, as a GELU reads its input: one group can hold h and every
  // reader, so no variant recomputes it.
  const ValueId h = b.AddNode("add", {x, y}, {});
  const ValueId sq = b.AddNode("multiply", {h, h}, {});
  const ValueId cube = b.AddNode("multiply", {sq, h}, {});
  const ValueId gelu = b.AddNode("add", {cube, h}, {});
  // a read by a reduction: never recomputed.
  const ValueId a = b.AddNode("add", {gelu, y}, {});
  const ValueId s = b.AddNode("sum", {a}, Attrs({{"axis", IntList{1}}, {"keepdims", true}}));
  const ValueId n = b.AddNode("negative", {a}, {});
  // c1 and c2 each read outside the chain {c1, c2, c3}: two values, no variant.
  const ValueId c1 = b.AddNode("add", {n, s}, {});
  const ValueId c2 = b.AddNode("add", {c1, y}, {});
  const ValueId c3 = b.AddNode("add", {c2, y}, {});
  const ValueId o1 = b.AddNode("abs", {c1}, {});
  const ValueId o2 = b.AddNode("abs", {c2}, {});
  b.SetOutputs({c3, o1, o2}, true);
  const Graph g = std::move(b).Build();
  EXPECT_FALSE(RecomputableMembers(g, std::vector<ValueId>{h, sq}));
  EXPECT_FALSE(RecomputableMembers(g, std::vector<ValueId>{a, n}));
  EXPECT_FALSE(RecomputableMembers(g, std::vector<ValueId>{c1, c2, c3}));
  EXPECT_EQ(RecomputableMembers(g, std::vector<ValueId>{c1, c2}), std::vector<ValueId>{c1});
}

TEST(Recompute, APlanHoldsARecomputedNodeInEveryGroupThatReadsIt) {
  const Softmax s = DecomposedSoftmax();
  const Plan plan = PlanFromJson(s.g, R"({"groups":[["%0"],["%1","%2","%3"],["%1","%2","%4"]]})",
                                 "recompute.json");
  EXPECT_EQ(RecomputedNodes(plan.groups),
            (std::vector<std::vector<ValueId>>{{}, {s.sub, s.e}, {s.sub, s.e}}));
  // Round trip through the plan file.
  const Plan again = PlanFromJson(s.g, PlanToJson(s.g, plan), "again.json");
  ASSERT_EQ(again.groups.size(), 3u);
  EXPECT_EQ(again.groups[2].nodes, (std::vector<ValueId>{s.sub, s.e, s.div}));
  // The report names it.
  const std::vector<PlanChange> changes =
      ChangesFromGreedy(s.g, plan.groups, GreedyPlan(s.g).groups, 1);
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[0].fusion, "recomputes %1 %2");
}

TEST(Recompute, APlanMayNotReadAValueNoGroupStores) {
  GraphBuilder b;
  const ValueId x = b.AddParam("x", TensorType{DType::kFloat32, {4, 8}});
  const ValueId e = b.AddNode("exp", {x}, {});        // %0, read three times
  const ValueId n1 = b.AddNode("negative", {e}, {});  // %1
  const ValueId n2 = b.AddNode("abs", {e}, {});       // %2
  const ValueId n3 = b.AddNode("sqrt", {e}, {});      // %3
  b.SetOutputs({n1, n2, n3}, true);
  const Graph g = std::move(b).Build();
  EXPECT_NO_THROW(PlanFromJson(g, R"({"groups":[["%0","%1"],["%0","%2"],["%0","%3"]]})", "ok"));
  // The square root reads exp from memory, but both groups holding it recompute it.
  try {
    PlanFromJson(g, R"({"groups":[["%0","%1"],["%0","%2"],["%3"]]})", "bad.json");
    FAIL() << "accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("group 2 reads %0, which no group stores"),
              std::string::npos)
        << e.what();
  }
  // A node in two groups where nothing in one of them reads it.
  const Softmax s = DecomposedSoftmax();
  try {
    PlanFromJson(s.g, R"({"groups":[["%0"],["%1","%2"],["%1","%2","%3"],["%4"]]})", "bad.json");
    FAIL() << "accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("%2 is recomputed, but no member reads it"),
              std::string::npos)
        << e.what();
  }
  (void)n1, (void)n2, (void)n3;
}

}  // namespace
}  // namespace fusetune
