// swap=1: a dense computed transposed (the weights read in place as the broadcast operand, the
// activations packed), each tile transposed in registers and staged until 16 output columns are
// done. Checked against the reference interpreter at odd sizes (ragged tiles and groups of 16,
// tiles straddling a group, several tasks), with a cheap epilogue (bias), one that reads a
// full-size input (a residual add) and a heavy one (erf-GELU), both loop orders, at 1 and 2
// threads; and where the space offers it, how the tiling resolves, and what it refuses.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ir/error.h"
#include "ir/interpreter.h"
#include "ir/matmul_schedule.h"
#include "ir/schedule_space.h"
#include "ir/text/relay_parser.h"
#include "tests/matmul/group_fixture.h"
#include "tests/matmul/weighted_product.h"
#include "worker/codegen/compile.h"

namespace fusetune::codegen {
namespace {

using test::CompiledMaxError;
using test::TheJit;
using test_graphs::WholeGroup;

std::string T(int64_t a, int64_t b) { return fmt::format("Tensor[({}, {}), float32]", a, b); }

// dense(x, w) + b, then `tail` (Relay lines using %1, the biased product, ending in the result).
std::string Dense(int64_t m, int64_t k, int64_t n, const std::string& tail) {
  return fmt::format(
      "fn (%x: {}, %w: {}, %b: Tensor[({}), float32], %r: {}) {{\n  %0 = nn.dense(%x, %w);\n"
      "  %1 = add(%0, %b);\n{}\n}}",
      T(m, k), T(n, k), n, T(m, n), tail);
}

const char* kBias = "  multiply(%1, 1f)";
const char* kResidual = "  add(%1, %r)";
const char* kErfGelu =
    "  %2 = divide(%1, 1.41421f);\n  %3 = erf(%2);\n  %4 = add(%3, 1f);\n"
    "  %5 = multiply(%1, %4);\n  multiply(%5, 0.5f)";

double SwappedError(const std::string& text, const Schedule& s, int threads) {
  const Graph graph = ParseRelay(text, "swap.relay");
  const FusedGroup group = WholeGroup(graph);
  auto kernel = CompileGroup(graph, group, s, TheJit(), {.threads = threads});
  const std::vector<Tensor> values = InterpretAll(graph, RandomInputs(graph, 5));
  return CompiledMaxError(graph, group, *kernel, values, threads);
}

TEST(Swap, AgreesWithTheReferenceAtOddSizes) {
  struct Size {
    int64_t m, k, n;
  };
  // N = 17: a group of 16 and one column; N = 53 with mr = 6: tiles straddling groups; M = 1 and
  // 5: one panel, ragged; N = 200: several tasks at 2 threads.
  const Size sizes[] = {{5, 19, 17}, {37, 45, 53}, {1, 8, 33}, {70, 64, 200}};
  const char* tiles[] = {"swap=1", "swap=1,mr=6,nr=64", "swap=1,mr=8,nr=32", "swap=1,mr=5,nr=16",
                         "swap=1,mr=2,nr=128"};
  int checked = 0;
  for (const Size& z : sizes) {
    for (const char* tail : {kBias, kResidual, kErfGelu}) {
      const std::string text = Dense(z.m, z.k, z.n, tail);
      for (const char* tile : tiles) {
        for (int loop : {0, 1}) {
          for (int threads : {1, 2}) {
            Schedule s = Schedule::Parse(tile);
            s.Set("loop", loop);
            if (z.n == 200) s.Set("mc", 16);  // many m blocks: tasks start groups of 16
            const double err = SwappedError(text, s, threads);
            EXPECT_LT(err, 1e-3) << z.m << "x" << z.k << "x" << z.n << " " << s.ToString() << " "
                                 << threads << " threads\n"
                                 << text;
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, 4 * 3 * 5 * 2 * 2);
}

TEST(Swap, TheTilingDescribesTheSwappedProblem) {
  MatmulLayout l;
  l.m = 64;
  l.k = 3072;
  l.n = 768;
  const MatmulTiling t = ResolveMatmulTiling(l, Schedule::Parse("swap=1,mr=6,nr=64,mc=40"), 2);
  EXPECT_EQ(t.swap, 1);
  EXPECT_EQ(t.kc, 3072);  // one k block, whatever K
  EXPECT_EQ(t.mc, 48);    // m blocks of the swapped problem (N) start groups of 16 and tiles
  EXPECT_EQ(t.MBlocks(TiledMatmulLayout(l, t)), 16);
  EXPECT_EQ(t.NBlocks(TiledMatmulLayout(l, t)), 1);  // the 64 rows of A: one panel of 64
  EXPECT_EQ(TiledMatmulLayout(l, t).m, 768);
  // At 2 threads the weights' rows are split, not the activations'.
  const MatmulTiling d = ResolveMatmulTiling(l, Schedule::Parse("swap=1"), 2);
  EXPECT_EQ(d.NBlocks(TiledMatmulLayout(l, d)), 1);
  EXPECT_EQ(d.MBlocks(TiledMatmulLayout(l, d)) % 2, 0);
  EXPECT_EQ(d.mr, 4);
  const Schedule spelled = AdaptMatmulSchedule(l, Schedule::Parse("swap=1,mr=6,nr=64"), l, 2);
  EXPECT_EQ(spelled.Get("swap", 0), 1);
  EXPECT_EQ(spelled.Get("kc", 0), 3072);
  MatmulLayout small = l;
  small.n = 100;
  EXPECT_EQ(AdaptMatmulSchedule(l, spelled, small, 2).Get("swap", 0), 1);
  // Adapted to a decoded token (M = 1), the default schedule, as the space there holds no swap.
  MatmulLayout token = l;
  token.m = 1;
  EXPECT_EQ(AdaptMatmulSchedule(l, spelled, token, 2), MatmulScheduleSpace(token, 2).front());
  EXPECT_EQ(AdaptMatmulSchedule(l, spelled, token, 2).Get("swap", 0), 0);
}

TEST(Swap, RefusesWhatItCannotCompute) {
  MatmulLayout dense;
  dense.m = 16;
  dense.k = 32;
  dense.n = 48;
  auto message = [](const MatmulLayout& l, const char* s) {
    try {
      ResolveMatmulTiling(l, Schedule::Parse(s), 1);
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message(dense, "swap=1,kc=16").find("one k block"), std::string::npos);
  EXPECT_NE(message(dense, "swap=1,mr=12,nr=16").find("mr <= 8"), std::string::npos);
  EXPECT_NE(message(dense, "swap=1,wpack=1").find("excludes wpack"), std::string::npos);
  EXPECT_NE(message(dense, "swap=2").find("swap must be 0 or 1"), std::string::npos);
  MatmulLayout batched = dense;
  batched.batch = 12;
  EXPECT_NE(message(batched, "swap=1").find("one batch"), std::string::npos);
  MatmulLayout kn = dense;
  kn.transpose_b = false;
  EXPECT_NE(message(kn, "swap=1").find("[n][k]"), std::string::npos);
  // A group whose A a prologue computes cannot be swapped: a plan naming it is a user error.
  const Graph graph = ParseRelay(fmt::format("fn (%x: {}, %w: {}) {{\n  %0 = nn.relu(%x);\n"
                                             "  nn.dense(%0, %w)\n}}",
                                             T(16, 32), T(48, 32)),
                                 "prologue.relay");
  const FusedGroup group = WholeGroup(graph);
  EXPECT_FALSE(MatmulSwapOffered(graph, group));
  EXPECT_THROW(CompileGroup(graph, group, Schedule::Parse("swap=1"), TheJit(), {.threads = 1}),
               UserError);
}

TEST(Swap, OfferedForDensesWhoseWeightsAreNotBound) {
  const Graph graph = ParseRelay(Dense(64, 96, 80, kBias), "offered.relay");
  const FusedGroup group = WholeGroup(graph);
  ASSERT_TRUE(MatmulSwapOffered(graph, group));
  auto swapped = [](const std::vector<Schedule>& space) {
    return std::count_if(space.begin(), space.end(),
                         [](const Schedule& s) { return s.Get("swap", 0) == 1; });
  };
  const std::vector<Schedule> space = ScheduleSpace(graph, group, 1);
  EXPECT_GE(swapped(space), 4);
  EXPECT_EQ(space.front().Get("swap", 0), 0);  // the default stays the rules' kernel
  const MatmulLayout l = MatmulLayoutOf(graph, group);
  EXPECT_EQ(swapped(MatmulScheduleSpace(l, 1, /*constant_b=*/true, /*swappable=*/true)), 0);
  EXPECT_EQ(swapped(MatmulScheduleSpace(l, 1, false, /*swappable=*/false)), 0);
  // Fewer activation rows than a vector's lanes: a swapped tile would leave most lanes idle.
  MatmulLayout few_rows = l;
  few_rows.m = 15;
  EXPECT_EQ(swapped(MatmulScheduleSpace(few_rows, 1, false, true)), 0);
  few_rows.m = 16;
  EXPECT_GE(swapped(MatmulScheduleSpace(few_rows, 1, false, true)), 4);
  // Every schedule the space offers compiles and agrees with the reference.
  for (const Schedule& s : space) {
    if (s.Get("swap", 0) == 1) {
      EXPECT_LT(SwappedError(Dense(64, 96, 80, kBias), s, 2), 1e-3);
    }
  }
}

}  // namespace
}  // namespace fusetune::codegen
