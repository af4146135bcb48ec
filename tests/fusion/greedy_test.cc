// The greedy baseline reproduces TVM FuseOps' decisions on documented cases (the rule table is at
// the top of ir/greedy.cc).
#include <gtest/gtest.h>

#include "ir/error.h"
#include "ir/plan.h"

namespace fusetune {
namespace {

TensorType F32(Shape s) { return {DType::kFloat32, std::move(s)}; }

std::vector<std::vector<ValueId>> Groups(const Plan& p) {
  std::vector<std::vector<ValueId>> out;
  for (const auto& g : p.groups) out.push_back(g.nodes);
  return out;
}

TEST(Greedy, SeedBatchMatmulOnesLikeWhereIsOneGroup) {
  // TVM fused exactly this, and it made BERT ~50% slower at sequence length 256.
  GraphBuilder b;
  ValueId x = b.AddParam("x", F32({12, 256, 64}));
  ValueId y = b.AddParam("y", F32({12, 256, 64}));
  ValueId z = b.AddParam("z", F32({12, 256, 256}));
  ValueId mm = b.AddNode("nn.batch_matmul", {x, y}, {});
  ValueId ones = b.AddNode("ones_like", {mm}, {});
  ValueId w = b.AddNode("where", {z, mm, ones}, {});
  b.SetOutputs({w}, false);
  Graph g = std::move(b).Build();
  EXPECT_EQ(Groups(GreedyPlan(g)), (std::vector<std::vector<ValueId>>{{mm, ones, w}}));
  EXPECT_EQ(Groups(UnfusedPlan(g)), (std::vector<std::vector<ValueId>>{{mm}, {ones}, {w}}));
}

TEST(Greedy, BroadcastSubtractFusesWithExp) {
  GraphBuilder b;
  ValueId x = b.AddParam("x", F32({100, 120, 120}));
  ValueId m = b.AddParam("m", F32({100, 120, 1}));
  ValueId s = b.AddNode("subtract", {x, m}, {});
  ValueId e = b.AddNode("exp", {s}, {});
  b.SetOutputs({e}, false);
  Graph g = std::move(b).Build();
  EXPECT_EQ(Groups(GreedyPlan(g)), (std::vector<std::vector<ValueId>>{{s, e}}));
}

TEST(Greedy, DenseTakesBiasAndActivationAsEpilogueButNotTheNextDense) {
  GraphBuilder b;
  ValueId x = b.AddParam("x", F32({16, 32}));
  ValueId w1 = b.AddParam("w1", F32({64, 32}));
  ValueId bias = b.AddParam("b", F32({64}));
  ValueId w2 = b.AddParam("w2", F32({32, 64}));
  ValueId d1 = b.AddNode("nn.dense", {x, w1}, {});
  ValueId ba = b.AddNode("nn.bias_add", {d1, bias}, Attrs({{"axis", int64_t{1}}}));
  ValueId t = b.AddNode("tanh", {ba}, {});
  ValueId d2 = b.AddNode("nn.dense", {t, w2}, {});
  b.SetOutputs({d2}, false);
  Graph g = std::move(b).Build();
  EXPECT_EQ(Groups(GreedyPlan(g)), (std::vector<std::vector<ValueId>>{{d1, ba, t}, {d2}}));
}

TEST(Greedy, SoftmaxIsOpaqueAndStandsAlone) {
  GraphBuilder b;
  ValueId x = b.AddParam("x", F32({12, 16, 16}));
  ValueId mask = b.AddParam("mask", F32({1, 16, 16}));
  ValueId a = b.AddNode("add", {x, mask}, {});
  ValueId s = b.AddNode("nn.softmax", {a}, {});
  ValueId e = b.AddNode("exp", {s}, {});
  b.SetOutputs({e}, false);
  Graph g = std::move(b).Build();
  EXPECT_EQ(Groups(GreedyPlan(g)), (std::vector<std::vector<ValueId>>{{a}, {s}, {e}}));
}

TEST(Greedy, ElementwiseBeforeReductionFusesIntoItAndElementwiseAfterIsEpilogue) {
  GraphBuilder b;
  ValueId x = b.AddParam("x", F32({8, 32}));
  ValueId e = b.AddNode("exp", {x}, {});
  ValueId s = b.AddNode("sum", {e}, Attrs({{"axis", IntList{1}}, {"keepdims", true}}));
  ValueId r = b.AddNode("sqrt", {s}, {});
  b.SetOutputs({r}, false);
  Graph g = std::move(b).Build();
  EXPECT_EQ(Groups(GreedyPlan(g)), (std::vector<std::vector<ValueId>>{{e, s, r}}));
}

TEST(Greedy, InjectiveChainsFuse) {
  GraphBuilder b;
  ValueId x = b.AddParam("x", F32({4, 6, 8}));
  ValueId t = b.AddNode("transpose", {x}, Attrs({{"axes", IntList{0, 2, 1}}}));
  ValueId r = b.AddNode("reshape", {t}, Attrs({{"newshape", IntList{4, 48}}}));
  ValueId n = b.AddNode("negative", {r}, {});
  b.SetOutputs({n}, false);
  Graph g = std::move(b).Build();
  EXPECT_EQ(Groups(GreedyPlan(g)), (std::vector<std::vector<ValueId>>{{t, r, n}}));
}

TEST(Greedy, DiamondOfElementwiseOpsIsOneGroup) {
  GraphBuilder b;
  ValueId x = b.AddParam("x", F32({4, 8}));
  ValueId e = b.AddNode("exp", {x}, {});
  ValueId n = b.AddNode("negative", {e}, {});
  ValueId a = b.AddNode("abs", {e}, {});
  ValueId s = b.AddNode("add", {n, a}, {});
  b.SetOutputs({s}, false);
  Graph g = std::move(b).Build();
  EXPECT_EQ(Groups(GreedyPlan(g)), (std::vector<std::vector<ValueId>>{{e, n, a, s}}));
}

TEST(Greedy, AValueThatIsAGraphOutputEndsItsGroup) {
  GraphBuilder b;
  ValueId x = b.AddParam("x", F32({4, 8}));
  ValueId e = b.AddNode("exp", {x}, {});
  ValueId n = b.AddNode("negative", {e}, {});
  b.SetOutputs({e, n}, true);
  Graph g = std::move(b).Build();
  EXPECT_EQ(Groups(GreedyPlan(g)), (std::vector<std::vector<ValueId>>{{e}, {n}}));
}

TEST(PlanJson, RoundTripsAndRejectsBadPlans) {
  GraphBuilder b;
  ValueId x = b.AddParam("x", F32({4, 8}));
  ValueId e = b.AddNode("exp", {x}, {});
  ValueId n = b.AddNode("negative", {e}, {});
  b.SetOutputs({n}, false);
  Graph g = std::move(b).Build();
  Plan p{"mine", {{{e, n}, Schedule::Parse("vec=16,parallel=1")}}};
  Plan back = PlanFromJson(g, PlanToJson(g, p), "mine.json");
  ASSERT_EQ(back.groups.size(), 1u);
  EXPECT_EQ(back.groups[0].nodes, (std::vector<ValueId>{e, n}));
  EXPECT_EQ(back.groups[0].schedule.ToString(), "parallel=1,vec=16");
  EXPECT_THROW(PlanFromJson(g, R"({"groups":[["%0"]]})", "p.json"), UserError);  // %1 uncovered
  EXPECT_THROW(PlanFromJson(g, R"({"groups":[["%0"],["%0","%1"]]})", "p.json"), UserError);
  EXPECT_THROW(PlanFromJson(g, R"({"groups":[["%1"],["%0"]]})", "p.json"), UserError);  // order
  EXPECT_THROW(PlanFromJson(g, R"({"groups":[["%9"]]})", "p.json"), UserError);
  EXPECT_THROW(PlanFromJson(g, R"({"groups":)", "p.json"), UserError);
  EXPECT_THROW(Schedule::Parse("vec=abc"), UserError);
}

// A plan file is text a user edits: its syntax errors name the line and column, as Relay's do.
TEST(PlanJson, SyntaxErrorsNameTheLineAndColumn) {
  GraphBuilder b;
  ValueId x = b.AddParam("x", F32({4}));
  b.SetOutputs({b.AddNode("exp", {x}, {})}, false);
  Graph g = std::move(b).Build();
  auto message = [&](const std::string& text) {
    try {
      PlanFromJson(g, text, "p.json");
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("{\n  \"groups\": [\n    [\"%0\"] x\n"),
            "p.json:3:12: error: not valid JSON: syntax error while parsing array - invalid "
            "literal; last read: '\"%0\"] x'; expected ']'");
  EXPECT_EQ(message("version"),
            "p.json:1:1: error: not valid JSON: syntax error while parsing "
            "value - invalid literal; last read: 'v'");
}

}  // namespace
}  // namespace fusetune
