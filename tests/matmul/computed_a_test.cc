// A matmul's A computed by a prologue along k (templates/matmul.cc, PackRows): packed 16 lanes at a
// time, and once per row block when the weights are packed at bind time. The head merge of
// attention (transpose + reshape of [H, S, D] into [S, H * D]) as a dense's A, and an
// element-wise A of a batch_matmul, equal the reference interpreter for every schedule of the space
// and odd k blocks, unbound and bound, at 1 and 2 threads; where the heads' depth is a multiple of
// 16 and so is every k block, the head merge reads vectors, not gathers.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ir/fusion.h"
#include "ir/graph.h"
#include "ir/interpreter.h"
#include "ir/schedule_space.h"
#include "tests/matmul/group_fixture.h"
#include "tests/matmul/weighted_product.h"
#include "worker/codegen/compile.h"

namespace fusetune::codegen {
namespace {

using test::CompiledMaxError;
using test::TheJit;
using test_graphs::F32;
using test_graphs::WholeGroup;

// [H, S, D] -> transpose -> [S, H, D] -> reshape -> [S, H * D] -> dense (weight held by the
// graph) -> bias_add. The whole graph is the group under test.
Graph HeadMergeProduct(int64_t heads, int64_t s, int64_t d, int64_t n) {
  GraphBuilder b;
  ValueId x = b.AddParam("x", F32({heads, s, d}));
  ValueId t = b.AddNode("transpose", {x}, Attrs({{"axes", IntList{1, 0, 2}}}));
  ValueId r = b.AddNode("reshape", {t}, Attrs({{"newshape", IntList{s, heads * d}}}));
  ValueId w = b.AddParamWithData("w", Tensor::Random(F32({n, heads * d}), 31));
  ValueId out = b.AddNode("nn.dense", {r, w}, Attrs{});
  out = b.AddNode("nn.bias_add", {out, b.AddParamWithData("bias", Tensor::Random(F32({n}), 32))},
                  Attrs({{"axis", int64_t{-1}}}));
  b.SetOutputs({out}, false);
  return std::move(b).Build();
}

// exp(x) · yᵀ, batched: a computed A that is not a view.
Graph ExpBatchProduct(int64_t batch, int64_t m, int64_t n, int64_t k) {
  GraphBuilder b;
  ValueId x = b.AddNode("exp", {b.AddParam("x", F32({batch, m, k}))}, Attrs{});
  ValueId y = b.AddParamWithData("y", Tensor::Random(F32({batch, n, k}), 33));
  b.SetOutputs({b.AddNode("nn.batch_matmul", {x, y}, Attrs{})}, false);
  return std::move(b).Build();
}

void ExpectEverySchedule(const Graph& graph, const std::string& name) {
  const FusedGroup group = WholeGroup(graph);
  ASSERT_EQ(group.templ, GroupTemplate::kMatmul) << name;
  const std::vector<Tensor> values = InterpretAll(graph, RandomInputs(graph, 9));
  const int64_t k = graph.value(graph.value(group.anchor).inputs[0]).type.shape.back();
  const double tol = 1e-5 * std::sqrt(static_cast<double>(k)) + 1e-5;
  for (int threads : {1, 2}) {
    std::vector<Schedule> space = ScheduleSpace(graph, group, threads);
    // k blocks that start off a multiple of 16 (kc = 24), and row blocks of one tile.
    for (const char* odd : {"mr=3,nr=16,mc=3,nc=16,kc=24,wpack=1", "mr=3,nr=16,mc=6,nc=16,kc=32"})
      space.push_back(Schedule::Parse(odd));
    for (const Schedule& s : space) {
      const std::string what = fmt::format("{} '{}' at {} threads", name, s.ToString(), threads);
      auto kernel = CompileGroup(graph, group, s, TheJit(), {.threads = threads});
      EXPECT_LT(CompiledMaxError(graph, group, *kernel, values, threads), tol) << what;
      if (kernel->packs_weights_ahead()) {
        EXPECT_LT(CompiledMaxError(graph, group, *kernel, values, threads, true), tol)
            << "bound: " << what;
      }
    }
  }
}

TEST(ComputedA, HeadMergeIntoDenseMatchesTheReference) {
  ExpectEverySchedule(HeadMergeProduct(3, 37, 32, 45), "heads 3 x depth 32, S 37");
  ExpectEverySchedule(HeadMergeProduct(4, 9, 20, 17), "heads 4 x depth 20, S 9");
  ExpectEverySchedule(HeadMergeProduct(2, 5, 16, 70), "heads 2 x depth 16, S 5");
}

TEST(ComputedA, ElementWiseABatchedMatchesTheReference) {
  ExpectEverySchedule(ExpBatchProduct(3, 17, 35, 40), "exp(x) [3, 17, 40] x [3, 35, 40]");
}

// Depth 64 (BERT's heads) and k blocks on multiples of 16: one vector load per 16 floats of A.
// Depth 20 splits vectors across heads, so there the lanes are gathered: the check can fail.
TEST(ComputedA, HeadMergeReadsVectorsWhereTheSplitIsAligned) {
  auto assembly = [](const Graph& graph, const std::string& schedule) {
    auto module = EmitGroupModule(graph, WholeGroup(graph), Schedule::Parse(schedule), TheJit(),
                                  "merge", {.threads = 1});
    TheJit().Optimize(*module, 3);
    return TheJit().Assembly(*module);
  };
  const Graph aligned = HeadMergeProduct(4, 24, 64, 48);
  EXPECT_EQ(assembly(aligned, "wpack=1").find("vgather"), std::string::npos);
  EXPECT_EQ(assembly(aligned, "kc=128").find("vgather"), std::string::npos);
  EXPECT_NE(assembly(aligned, "kc=200").find("vgather"), std::string::npos)
      << "k blocks of 200 start off a multiple of 16";
  EXPECT_NE(assembly(HeadMergeProduct(4, 24, 20, 48), "").find("vgather"), std::string::npos);
}

}  // namespace
}  // namespace fusetune::codegen
