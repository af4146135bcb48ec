// A layer norm folded into its matmul's A packing (ir/fusion.h, templates/matmul_norm.h): the
// group is legal only where the norm's rows are A's rows and nothing else reads the norm, and its
// kernel equals layer_norm-then-dense on the reference interpreter at sizes that are not multiples
// of 16 or of the tile (k blocks included), with a residual add inlined, without gamma / beta,
// for every schedule of the space, unbound and bound to its weights (where the tasks run rows
// outer and reuse the normalised block), at 1 and 2 threads.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ir/fusion.h"
#include "ir/graph.h"
#include "ir/interpreter.h"
#include "ir/schedule_space.h"
#include "ir/text/relay_parser.h"
#include "tests/matmul/group_fixture.h"
#include "tests/matmul/weighted_product.h"
#include "worker/codegen/compile.h"

namespace fusetune::codegen {
namespace {

using test::CompiledMaxError;
using test::TheJit;
using test_graphs::F32;

struct NormCase {
  Shape x;  // the norm's input; dense flattens all but the last axis into rows
  int64_t n;
  bool residual, scale, center;
};

// (x [+ r]) -> layer_norm -> dense (weight held by the graph) -> bias_add -> tanh. The whole
// graph is the group under test.
Graph NormProduct(const NormCase& c) {
  GraphBuilder b;
  const int64_t k = c.x.back();
  ValueId x = b.AddParam("x", F32(c.x));
  if (c.residual) x = b.AddNode("add", {x, b.AddParam("r", F32(c.x))}, Attrs{});
  ValueId gamma = b.AddParamWithData("gamma", Tensor::Random(F32({k}), 21));
  ValueId beta = b.AddParamWithData("beta", Tensor::Random(F32({k}), 22));
  ValueId y = b.AddNode(
      "nn.layer_norm", {x, gamma, beta},
      Attrs({{"axis", int64_t{-1}}, {"epsilon", 1e-5}, {"center", c.center}, {"scale", c.scale}}));
  ValueId w = b.AddParamWithData("w", Tensor::Random(F32({c.n, k}), 23));
  ValueId out = b.AddNode("nn.dense", {y, w}, Attrs{});
  out = b.AddNode("nn.bias_add", {out, b.AddParamWithData("bias", Tensor::Random(F32({c.n}), 24))},
                  Attrs({{"axis", int64_t{-1}}}));
  out = b.AddNode("tanh", {out}, Attrs{});
  b.SetOutputs({out}, false);
  return std::move(b).Build();
}

TEST(FoldedNorm, EveryScheduleMatchesNormThenDense) {
  const NormCase cases[] = {
      {{37, 53}, 45, false, true, true},   {{2, 19, 67}, 33, true, true, true},
      {{5, 1100}, 70, true, true, true},   {{9, 40}, 17, false, false, true},
      {{9, 40}, 17, false, true, false},   {{1, 1}, 1, false, true, true},
      {{130, 96}, 200, false, true, true},
  };
  for (const NormCase& c : cases) {
    const Graph graph = NormProduct(c);
    const FusedGroup group = test_graphs::WholeGroup(graph);
    ASSERT_EQ(group.templ, GroupTemplate::kMatmul);
    ASSERT_EQ(group.norm, graph.FindByName(c.residual ? "1" : "0").value());
    const std::vector<Tensor> values = InterpretAll(graph, RandomInputs(graph, 7));
    const double tol = 1e-5 * std::sqrt(static_cast<double>(c.x.back())) + 1e-6;
    int bound_schedules = 0;
    for (int threads : {1, 2}) {
      std::vector<Schedule> space = ScheduleSpace(graph, group, threads);
      for (const char* odd :
           {"mr=3,nr=16,mc=3,nc=16,kc=24,wpack=1", "mr=3,nr=16,mc=6,nc=16,wpack=1"})
        space.push_back(Schedule::Parse(odd));
      for (const Schedule& s : space) {
        const std::string what = fmt::format(
            "x {} n={} residual={} scale={} center={} '{}' at {} "
            "threads",
            F32(c.x).ToString(), c.n, c.residual, c.scale, c.center, s.ToString(), threads);
        auto kernel = CompileGroup(graph, group, s, TheJit(), {.threads = threads});
        EXPECT_LT(CompiledMaxError(graph, group, *kernel, values, threads), tol) << what;
        if (!kernel->packs_weights_ahead()) continue;
        ++bound_schedules;
        EXPECT_LT(CompiledMaxError(graph, group, *kernel, values, threads, true), tol)
            << "bound: " << what;
      }
    }
    EXPECT_GT(bound_schedules, 0) << "the weights are the graph's: wpack is in the space";
  }
}

// With its weights bound, a folded norm's rows are packed once per row block and read by every n
// block; rows over the 256 KB of a per-task A block stay one block (matmul.cc), which the space's
// small cases above never reach.
TEST(FoldedNorm, RowsOverAQuarterMegabyteMatchWithBoundWeights) {
  const NormCase c{{90, 800}, 70, true, true, true};
  const Graph graph = NormProduct(c);
  const FusedGroup group = test_graphs::WholeGroup(graph);
  const std::vector<Tensor> values = InterpretAll(graph, RandomInputs(graph, 9));
  const double tol = 1e-5 * std::sqrt(800.0) + 1e-6;
  for (int threads : {1, 2}) {
    for (const char* s : {"wpack=1", "mr=6,nr=16,nc=32,wpack=1", "kc=300,wpack=1"}) {
      auto kernel = CompileGroup(graph, group, Schedule::Parse(s), TheJit(), {.threads = threads});
      ASSERT_TRUE(kernel->packs_weights_ahead()) << s;
      EXPECT_LT(CompiledMaxError(graph, group, *kernel, values, threads, true), tol)
          << s << " at " << threads << " threads";
    }
  }
}

TEST(FoldedNorm, OnlyANormReadByNothingElseAlongAsRowsFolds) {
  auto refusal = [](const std::string& text, const std::vector<std::string>& names) {
    const Graph g = ParseRelay(text, "t.relay");
    std::vector<ValueId> nodes;
    for (const std::string& n : names) nodes.push_back(g.FindByName(n).value());
    std::string why;
    EXPECT_FALSE(AnalyzeGroup(g, nodes, &why).has_value()) << text;
    return why;
  };
  const std::string head =
      "fn (%x: Tensor[(6, 8), float32], %g: Tensor[(8), float32], %b: Tensor[(8), float32], "
      "%w: Tensor[(5, 8), float32]";
  // The norm's result is also the graph's second output (a residual stream in a post-norm layer).
  EXPECT_EQ(refusal(head + ") {\n  %0 = nn.layer_norm(%x, %g, %b);\n  %1 = nn.dense(%0, %w);\n"
                           "  (%1, %0)\n}",
                    {"0", "1"}),
            "%0 is also read outside %1; a folded layer norm is never stored");
  // Normalised over the rows, not along k.
  EXPECT_EQ(refusal("fn (%x: Tensor[(8, 8), float32], %g: Tensor[(8), float32], %b: Tensor[(8), "
                    "float32], %w: Tensor[(5, 8), float32]) {\n  %0 = nn.layer_norm(%x, %g, %b, "
                    "axis=0);\n  nn.dense(%0, %w)\n}",
                    {"0", "1"}),
            "%0 normalises an axis other than the last; only a norm over A's k axis folds into %1");
  // The norm feeds B, not A.
  const std::string why = refusal(
      "fn (%x: Tensor[(6, 8), float32], %g: Tensor[(8), float32], %b: Tensor[(8), float32], "
      "%a: Tensor[(5, 8), float32]) {\n  %0 = nn.layer_norm(%x, %g, %b);\n  nn.dense(%a, %0)\n}",
      {"0", "1"});
  EXPECT_NE(why.find("two anchors"), std::string::npos) << why;

  const Graph g = ParseRelay(head +
                                 ") {\n  %0 = nn.layer_norm(%x, %g, %b);\n  %1 = "
                                 "nn.dense(%0, %w);\n  tanh(%1)\n}",
                             "t.relay");
  auto group =
      AnalyzeGroup(g, std::vector<ValueId>{0 + g.FindByName("0").value(), g.FindByName("1").value(),
                                           g.FindByName("2").value()});
  ASSERT_TRUE(group.has_value());
  EXPECT_EQ(group->anchor, g.FindByName("1").value());
  EXPECT_EQ(group->norm, g.FindByName("0").value());
  EXPECT_EQ(group->outputs, std::vector<ValueId>{g.FindByName("2").value()});
}

}  // namespace
}  // namespace fusetune::codegen
