// Fused matmul groups (anchor + prologue + epilogue) compiled by EmitMatmulKernel and compared
// with the reference interpreter: dense, batch_matmul in every transpose combination, matmul, odd
// sizes, the seed's batch_matmul + ones_like + where, bias + tanh-GELU, prologues, extra outputs,
// non-float outputs, every schedule of the space, at 1 and 2 threads.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ir/error.h"
#include "ir/fusion.h"
#include "ir/interpreter.h"
#include "ir/matmul_schedule.h"
#include "ir/text/relay_parser.h"
#include "tests/matmul/group_fixture.h"
#include "worker/codegen/jit.h"
#include "worker/codegen/kernel_abi.h"
#include "worker/codegen/runtime/thread_pool.h"
#include "worker/codegen/templates/matmul.h"

namespace fusetune::codegen {
namespace {

using test::TheJit;
using Fixture = test::GroupFixture;

Fixture Prepare(const std::string& text, const std::vector<std::string>& names) {
  Fixture f = test::PrepareGroup(text, names, 42);
  EXPECT_EQ(f.group.templ, GroupTemplate::kMatmul);
  return f;
}

double MaxError(const Fixture& f, const Schedule& schedule, int threads) {
  return test::KernelMaxError(f, threads, [&](auto& module, const std::string& symbol) {
    EmitMatmulKernel(module, f.graph, f.group, schedule, TheJit().target(), symbol, threads);
  });
}

std::string T(std::vector<int64_t> shape, const char* dtype = "float32") {
  std::string s = "Tensor[(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",), " : "), ") + dtype + "]";
}

constexpr double kTol = 2e-5;  // inputs in [-1, 1), k <= 64: float sums agree to ~1e-6

TEST(MatmulGroup, DenseAloneOddSizes) {
  for (auto [m, n, k] : {std::tuple{1, 1, 1}, {7, 17, 33}, {33, 65, 17}, {65, 7, 64}}) {
    Fixture f = Prepare(
        fmt::format("fn (%x: {}, %w: {}) {{ nn.dense(%x, %w) }}", T({m, k}), T({n, k})), {"0"});
    EXPECT_LT(MaxError(f, {}, 1), kTol) << m << "x" << n << "x" << k;
  }
}

TEST(MatmulGroup, DenseWithOneDimensionalData) {
  Fixture f =
      Prepare(fmt::format("fn (%x: {}, %w: {}, %b: {}) {{ %0 = nn.dense(%x, %w); add(%0, %b) }}",
                          T({24}), T({19, 24}), T({19})),
              {"0", "1"});
  EXPECT_LT(MaxError(f, {}, 1), kTol);
}

TEST(MatmulGroup, DenseWithThreeDimensionalData) {
  Fixture f =
      Prepare(fmt::format("fn (%x: {}, %w: {}, %b: {}) {{ %0 = nn.dense(%x, %w); add(%0, %b) }}",
                          T({2, 5, 24}), T({19, 24}), T({19})),
              {"0", "1"});
  EXPECT_LT(MaxError(f, {}, 1), kTol);
}

TEST(MatmulGroup, BatchMatmulEveryTranspose) {
  const int64_t b = 3, m = 17, n = 33, k = 20;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      auto x = ta ? T({b, k, m}) : T({b, m, k});
      auto y = tb ? T({b, n, k}) : T({b, k, n});
      Fixture f =
          Prepare(fmt::format("fn (%x: {}, %y: {}) {{ nn.batch_matmul(%x, %y, transpose_a={}, "
                              "transpose_b={}) }}",
                              x, y, ta ? "True" : "False", tb ? "True" : "False"),
                  {"0"});
      EXPECT_LT(MaxError(f, {}, 1), kTol) << "ta=" << ta << " tb=" << tb;
      EXPECT_LT(MaxError(f, {}, 2), kTol) << "ta=" << ta << " tb=" << tb << " 2 threads";
    }
}

TEST(MatmulGroup, MatmulEveryTranspose) {
  const int64_t m = 9, n = 70, k = 31;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      auto a = ta ? T({k, m}) : T({m, k});
      auto bt = tb ? T({n, k}) : T({k, n});
      Fixture f = Prepare(
          fmt::format("fn (%a: {}, %b: {}) {{ nn.matmul(%a, %b, transpose_a={}, transpose_b={}) }}",
                      a, bt, ta ? "True" : "False", tb ? "True" : "False"),
          {"0"});
      EXPECT_LT(MaxError(f, {}, 1), kTol) << "ta=" << ta << " tb=" << tb;
    }
}

std::string SeedText(int64_t b, int64_t s, int64_t k, const char* zdtype) {
  return fmt::format(
      "fn (%x: {}, %y: {}, %z: {}) {{\n  %0 = nn.batch_matmul(%x, %y);\n  %1 = ones_like(%0);\n  "
      "where(%z, %0, %1)\n}}",
      T({b, s, k}), T({b, s, k}), T({b, s, s}, zdtype));
}

TEST(MatmulGroup, SeedBatchMatmulOnesLikeWhere) {
  // A bool condition exercises both sides of the select.
  Fixture small = Prepare(SeedText(3, 37, 19, "bool"), {"0", "1", "2"});
  EXPECT_LT(MaxError(small, {}, 1), kTol);
  EXPECT_LT(MaxError(small, {}, 2), kTol);
  Fixture seed = Prepare(SeedText(12, 256, 64, "float32"), {"0", "1", "2"});
  EXPECT_LT(MaxError(seed, {}, 2), kTol);
}

std::string DenseGeluText(int64_t m, int64_t n, int64_t k) {
  return fmt::format(
      "fn (%x: {}, %w: {}, %b: {}) {{\n"
      "  %0 = nn.dense(%x, %w);\n  %1 = add(%0, %b);\n  %2 = multiply(%1, 0.044715f);\n"
      "  %3 = multiply(%2, %1);\n  %4 = multiply(%3, %1);\n  %5 = add(%1, %4);\n"
      "  %6 = multiply(%5, 0.797885f);\n  %7 = tanh(%6);\n  %8 = add(%7, 1f);\n"
      "  %9 = multiply(%1, 0.5f);\n  multiply(%9, %8)\n}}",
      T({m, k}), T({n, k}), T({n}));
}

const std::vector<std::string> kGeluNodes{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10"};

TEST(MatmulGroup, DenseBiasTanhGelu) {
  Fixture f = Prepare(DenseGeluText(13, 50, 40), kGeluNodes);
  EXPECT_LT(MaxError(f, {}, 1), kTol);
  // k blocks: partial sums pass through the output before the epilogue runs once.
  Fixture big_k = Prepare(DenseGeluText(10, 37, 700), kGeluNodes);
  Schedule s;
  s.Set("kc", 128);
  EXPECT_LT(MaxError(big_k, s, 2), 1e-4);
}

TEST(MatmulGroup, AnchorAlsoLeavesTheGroup) {
  Fixture f = Prepare(
      fmt::format(
          "fn (%x: {}, %y: {}) {{ %0 = nn.batch_matmul(%x, %y); %1 = nn.relu(%0); (%0, %1) }}",
          T({2, 21, 16}), T({2, 18, 16})),
      {"0", "1"});
  ASSERT_EQ(f.group.outputs.size(), 2u);
  EXPECT_LT(MaxError(f, {}, 1), kTol);
}

TEST(MatmulGroup, NonFloatOutputForcesOneKBlock) {
  Fixture f = Prepare(
      fmt::format("fn (%x: {}, %w: {}) {{ %0 = nn.dense(%x, %w); %1 = multiply(%0, 10f); cast(%1, "
                  "dtype=\"int32\") }}",
                  T({5, 600}), T({20, 600})),
      {"0", "1", "2"});
  Schedule s;
  s.Set("kc", 128);  // ignored: the int32 output cannot hold partial sums
  // Truncation of values within float rounding of an integer may differ by one.
  EXPECT_LE(MaxError(f, s, 1), 1.0);
  EXPECT_LE(MaxError(f, s, 2), 1.0);
}

TEST(MatmulGroup, BroadcastEpilogueInputs) {
  Fixture f = Prepare(
      fmt::format("fn (%x: {}, %y: {}, %r: {}, %c: {}, %full: {}) {{ %0 = nn.batch_matmul(%x, %y); "
                  "%1 = add(%0, %r); %2 = multiply(%1, %c); subtract(%2, %full) }}",
                  T({2, 19, 8}), T({2, 35, 8}), T({2, 19, 1}), T({1, 35}), T({2, 19, 35})),
      {"0", "1", "2", "3"});
  EXPECT_LT(MaxError(f, {}, 1), kTol);
}

TEST(MatmulGroup, EpilogueInputReadThroughATranspose) {
  // %1 is inlined into the epilogue: its element at the tile's (b, m, n) is %u[b, n, m], so a
  // tile row reads %u with a stride (a gather), masked at the ragged end of n.
  const std::string text = fmt::format(
      "fn (%x: {}, %y: {}, %u: {}) {{ %0 = nn.batch_matmul(%x, %y); %1 = transpose(%u, axes=[0, 2, "
      "1]); "
      "add(%0, %1) }}",
      T({2, 9, 8}), T({2, 21, 8}), T({2, 21, 9}));
  Graph g = ParseRelay(text, "t.relay");
  std::vector<ValueId> nodes{*g.FindByName("0"), *g.FindByName("1"), *g.FindByName("2")};
  if (!AnalyzeGroup(g, nodes))
    GTEST_SKIP() << "legality does not fuse an injective producer into an epilogue";
  Fixture f = Prepare(text, {"0", "1", "2"});
  EXPECT_LT(MaxError(f, {}, 1), kTol);
}

TEST(MatmulGroup, ProloguesOnBothOperands) {
  Fixture f = Prepare(
      fmt::format("fn (%x: {}, %y: {}) {{ %0 = nn.relu(%x); %1 = transpose(%y, axes=[0, 2, 1]); "
                  "%2 = multiply(%1, 2f); nn.batch_matmul(%0, %2) }}",
                  T({2, 9, 20}), T({2, 20, 11})),
      {"0", "1", "2", "3"});
  EXPECT_LT(MaxError(f, {}, 1), kTol);
  EXPECT_LT(MaxError(f, {}, 2), kTol);
  Schedule s;
  s.Set("kc", 8);
  s.Set("mc", 8);
  EXPECT_LT(MaxError(f, s, 2), kTol);
}

TEST(MatmulGroup, LargePrologueOperandIsPackedInBlocks) {
  // relu(x) is evaluated into a [mc][kc] block per task; with K = 1000 the block holds 64 rows,
  // so the 300 rows take 5 m blocks (and tasks), each packing its own rows.
  Fixture f = Prepare(fmt::format("fn (%x: {}, %w: {}) {{ %0 = nn.relu(%x); nn.dense(%0, %w) }}",
                                  T({300, 1000}), T({20, 1000})),
                      {"0", "1"});
  EXPECT_LT(MaxError(f, {}, 1), 1e-4);
  EXPECT_LT(MaxError(f, {}, 2), 1e-4);
}

TEST(MatmulGroup, EveryScheduleWithEpilogue) {
  Fixture seed = Prepare(SeedText(3, 40, 33, "bool"), {"0", "1", "2"});
  Fixture gelu = Prepare(DenseGeluText(21, 70, 300), kGeluNodes);
  for (int threads : {1, 2}) {
    for (const Schedule& s :
         MatmulScheduleSpace(GroupMatmulLayout(seed.graph, seed.group), threads))
      EXPECT_LT(MaxError(seed, s, threads), kTol) << s.ToString() << " threads=" << threads;
    for (const Schedule& s :
         MatmulScheduleSpace(GroupMatmulLayout(gelu.graph, gelu.group), threads))
      EXPECT_LT(MaxError(gelu, s, threads), 1e-4) << s.ToString() << " threads=" << threads;
  }
}

TEST(MatmulGroup, RejectsNonFloatProducts) {
  Fixture f = Prepare(fmt::format("fn (%x: {}, %w: {}) {{ nn.dense(%x, %w) }}", T({4, 8}, "int32"),
                                  T({3, 8}, "int32")),
                      {"0"});
  Jit& jit = TheJit();
  auto module = jit.NewModule("mm");
  EXPECT_THROW(EmitMatmulKernel(module->module(), f.graph, f.group, {}, jit.target(), "bad", 1),
               UserError);
}

}  // namespace
}  // namespace fusetune::codegen
