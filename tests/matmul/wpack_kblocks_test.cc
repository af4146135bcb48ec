// Several k blocks: the tiles stream the next block of the bound copy (wpack: the next k block of
// the task, else the next task's first) or, packed in the call from a [n][k] B, the same block's
// rows where B lies, while they compute. Checked against the reference interpreter at odd sizes
// (ragged m, n and k blocks), both loop orders, small and default cache blocks, batched and [k][n]
// weights, pb off, 1 and 2, wpack on and off, bound and unbound, at 1 and 2 threads; and the
// prefetch is really emitted where it should be, and only there.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ir/fusion.h"
#include "ir/graph.h"
#include "ir/interpreter.h"
#include "ir/matmul_schedule.h"
#include "ir/schedule_space.h"
#include "tests/matmul/group_fixture.h"
#include "tests/matmul/weighted_product.h"
#include "worker/codegen/compile.h"

namespace fusetune::codegen {
namespace {

using test::CompiledMaxError;
using test::TheJit;

using test_graphs::WeightedProduct;
using test_graphs::WholeGroup;

// Runs the compiled group once unbound and once bound; returns the larger max |error|.
double BoundAndUnboundError(const Graph& graph, const FusedGroup& group, const Schedule& s,
                            int threads) {
  auto kernel = CompileGroup(graph, group, s, TheJit(), {.threads = threads});
  EXPECT_EQ(kernel->packs_weights_ahead(), s.Get("wpack", 0) == 1) << s.ToString();
  const std::vector<Tensor> values = InterpretAll(graph, RandomInputs(graph, 9));
  return std::max(CompiledMaxError(graph, group, *kernel, values, threads),
                  CompiledMaxError(graph, group, *kernel, values, threads, /*bind=*/true));
}

TEST(WpackKBlocks, NextBlockStreamedAgreesWithReference) {
  struct Case {
    int64_t batch, m, n, k;
    bool transpose_b;
  };
  // K in 3-8 k blocks with a ragged last one; ragged m and n tiles; several n blocks.
  const Case cases[] = {{1, 13, 150, 300, true},
                        {1, 37, 70, 257, true},
                        {3, 9, 40, 130, true},
                        {2, 11, 33, 200, false}};
  for (const Case& c : cases) {
    Graph graph = WeightedProduct(c.batch, c.m, c.n, c.k, false, c.transpose_b);
    const FusedGroup group = WholeGroup(graph);
    for (int pb : {0, 1, 2})
      for (int wpack : {0, 1})
        for (int loop : {0, 1})
          for (auto [mr, nr, kc, mc, nc] : {std::tuple{4, 64, 64, 0, 0},
                                            {5, 64, 100, 10, 64},
                                            {8, 32, 48, 8, 32},
                                            {6, 16, 128, 0, 16}}) {
            Schedule s = Schedule::Parse(fmt::format("mr={},nr={},kc={},loop={},pb={},wpack={}", mr,
                                                     nr, kc, loop, pb, wpack));
            if (mc) s.Set("mc", mc);
            if (nc) s.Set("nc", nc);
            for (int threads : {1, 2}) {
              const double tol = 2e-6 * std::sqrt(static_cast<double>(c.k));
              EXPECT_LT(BoundAndUnboundError(graph, group, s, threads), tol)
                  << c.batch << "x" << c.m << "x" << c.n << "x" << c.k << " tb=" << c.transpose_b
                  << " " << s.ToString() << " at " << threads << " threads";
            }
          }
  }
}

// Every schedule of the space of a K large enough for the longer k block (1500: blocks of 500
// by default, of 750 with it), with and without wpack.
TEST(WpackKBlocks, EveryScheduleOfTheSpaceAtLargeK) {
  Graph graph = WeightedProduct(1, 9, 40, 1500, false);
  const FusedGroup group = WholeGroup(graph);
  for (int threads : {1, 2}) {
    int long_kc = 0;
    for (const Schedule& s : ScheduleSpace(graph, group, threads)) {
      long_kc += s.Get("kc", 0) == 750;
      EXPECT_LT(BoundAndUnboundError(graph, group, s, threads), 1e-4)
          << s.ToString() << " at " << threads << " threads";
    }
    EXPECT_GT(long_kc, 0);
  }
}

// The next-block stream (prefetcht1, locality 2: into L2) is in a kernel with k blocks when pb
// is on, with wpack or without (then B's rows, strided), and not when it is off.
TEST(WpackKBlocks, StreamIsEmittedOnlyWithPb) {
  Graph graph = WeightedProduct(1, 16, 128, 3072, false);
  const FusedGroup group = WholeGroup(graph);
  auto assembly = [&](const std::string& schedule) {
    auto module = EmitGroupModule(graph, group, Schedule::Parse(schedule), TheJit(), "kb", {});
    TheJit().Optimize(*module, 3);
    return TheJit().Assembly(*module);
  };
  EXPECT_NE(assembly("kc=512,wpack=1").find("prefetcht1"), std::string::npos);
  EXPECT_EQ(assembly("kc=512,wpack=1,pb=0").find("prefetcht1"), std::string::npos);
  EXPECT_NE(assembly("kc=512").find("prefetcht1"), std::string::npos);
  EXPECT_EQ(assembly("kc=512,pb=0").find("prefetcht1"), std::string::npos);
  // pb=2: two lines an iteration, twice the stream's prefetches in the k loop.
  auto count = [&](const std::string& schedule) {
    const std::string text = assembly(schedule);
    int n = 0;
    for (size_t at = text.find("prefetcht1"); at != std::string::npos;
         at = text.find("prefetcht1", at + 1))
      ++n;
    return n;
  };
  EXPECT_EQ(count("kc=512,wpack=1,pb=2"), 2 * count("kc=512,wpack=1"));
}

TEST(WpackKBlocks, SpaceOffersALongerKBlockForLargeK) {
  MatmulLayout l{.batched = false,
                 .transpose_a = false,
                 .transpose_b = true,
                 .batch = 1,
                 .m = 128,
                 .n = 768,
                 .k = 3072};
  int long_kc = 0;
  for (const Schedule& s : MatmulScheduleSpace(l, 1, true)) long_kc += s.Get("kc", 0) == 768;
  EXPECT_GT(long_kc, 0) << "K = 3072 in four blocks of 768";
  l.k = 768;  // one k block already: the whole of K and 256, nothing else
  std::set<int64_t> kcs;
  for (const Schedule& s : MatmulScheduleSpace(l, 1, true)) kcs.insert(s.Get("kc", 0));
  EXPECT_EQ(kcs, (std::set<int64_t>{256, 768}));
}

}  // namespace
}  // namespace fusetune::codegen
