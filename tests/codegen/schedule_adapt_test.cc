// Schedules adapted across sizes (ir/schedule_space.h AdaptSchedule): every schedule of every
// template's space, tuned at one size and adapted to odd sizes, compiles and matches the
// reference interpreter at 1 and 2 threads. Matmul schedules from one size's space land in the
// other size's space (so measurements at the new size share their keys).
#include <algorithm>
#include <cmath>
#include <regex>
#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "group_check_util.h"
#include "ir/error.h"
#include "ir/fusion.h"
#include "ir/interpreter.h"
#include "ir/matmul_schedule.h"
#include "ir/schedule_space.h"
#include "worker/codegen/compile.h"
#include "worker/codegen/runtime/thread_pool.h"

namespace fusetune::testing {
namespace {

struct Case {
  const char* name;
  const char* relay;  // sizes written as S and T
  int tuned_s, tuned_t;
  std::vector<std::pair<int, int>> odd;  // (S, T) to adapt to
  Tolerance tol;
};

constexpr Tolerance kArith{1e-6, 1e-6};
constexpr Tolerance kMath{1e-6, 2e-6};
constexpr Tolerance kAccum{1e-5, 1e-5};
constexpr Tolerance kLongAccum{1e-4, 1e-5};  // float sums over k = 600

const std::vector<Case>& Cases() {
  static const std::vector<Case> cases = {
      {"elementwise",
       "fn (%a: Tensor[(S, T), float32], %b: Tensor[(T,), float32]) { tanh(add(%a, %b)) }",
       64,
       256,
       {{5, 37}, {3, 193}},
       kMath},
      {"elementwise transpose",
       "fn (%a: Tensor[(S, T), float32]) { transpose(exp(%a), axes=[1, 0]) }",
       64,
       128,
       {{7, 37}, {41, 3}},
       kMath},
      {"reduce last axis",
       "fn (%a: Tensor[(S, T), float32]) { sum(exp(%a), axis=[1]) }",
       32,
       256,
       {{5, 37}, {3, 193}},
       kAccum},
      {"reduce kept axis",
       "fn (%a: Tensor[(S, T), float32]) { mean(%a, axis=[0]) }",
       64,
       256,
       {{37, 5}, {9, 193}},
       kAccum},
      {"softmax",
       "fn (%a: Tensor[(S, T), float32]) { nn.softmax(multiply(%a, 0.125f)) }",
       32,
       128,
       {{5, 37}, {3, 193}},
       kAccum},
      {"layer_norm",
       "fn (%a: Tensor[(S, T), float32], %g: Tensor[(T,), float32], %b: Tensor[(T,), float32]) "
       "{ nn.layer_norm(%a, %g, %b) }",
       32,
       256,
       {{5, 37}, {3, 193}},
       kAccum},
      {"dense + bias + gelu-ish epilogue",
       "fn (%x: Tensor[(S, 64), float32], %w: Tensor[(T, 64), float32], %b: Tensor[(T,), float32]) "
       "{ tanh(nn.bias_add(nn.dense(%x, %w), %b)) }",
       128,
       256,
       {{37, 93}, {5, 17}},
       kAccum},
      {"batch_matmul seed",
       "fn (%x: Tensor[(3, S, 64), float32], %y: Tensor[(3, S, 64), float32], %z: Tensor[(3, S, "
       "S), float32]) { %0 = nn.batch_matmul(%x, %y); where(%z, %0, ones_like(%0)) }",
       256,
       0,
       {{37, 0}, {193, 0}},
       kAccum},
      {"matmul long k",
       "fn (%a: Tensor[(S, 600), float32], %b: Tensor[(600, T), float32]) { "
       "nn.matmul(%a, %b) }",
       128,
       256,
       {{37, 93}, {3, 17}},
       kLongAccum},
  };
  return cases;
}

std::string At(const char* relay, int s, int t) {
  std::string text = std::regex_replace(relay, std::regex("\\bS\\b"), std::to_string(s));
  return std::regex_replace(text, std::regex("\\bT\\b"), std::to_string(t));
}

std::vector<ValueId> AllNodes(const Graph& g) {
  std::vector<ValueId> ids;
  for (ValueId v = 0; v < static_cast<ValueId>(g.values().size()); ++v)
    if (g.value(v).kind == ValueKind::kNode) ids.push_back(v);
  return ids;
}

codegen::Jit& SharedJit() {
  static codegen::Jit jit;
  return jit;
}

// Largest error of the group's kernel under `schedule` against the interpreter; a failure text
// when some element is off by more than the tolerance.
std::string CheckSchedule(const Graph& g, const FusedGroup& group, const Schedule& schedule,
                          int threads, Tolerance tol) {
  std::vector<Tensor> inputs = RandomInputs(g, 3);
  std::vector<Tensor> values = InterpretAll(g, inputs);
  runtime::SetNumThreads(threads);
  auto kernel =
      codegen::CompileGroup(g, group, schedule, SharedJit(), {.opt_level = 3, .threads = threads});
  std::vector<void*> buffers;
  for (ValueId in : group.inputs) buffers.push_back(const_cast<void*>(values[in].data()));
  std::vector<Tensor> outs;
  for (ValueId out : group.outputs) {
    outs.emplace_back(g.value(out).type);
    for (int64_t i = 0; i < outs.back().size(); ++i) outs.back().Set(i, 12345.0);  // poison
  }
  for (Tensor& t : outs) buffers.push_back(t.data());
  kernel->Run(buffers.data());
  runtime::SetNumThreads(1);
  for (size_t o = 0; o < outs.size(); ++o) {
    const Tensor& want = values[group.outputs[o]];
    for (int64_t i = 0; i < outs[o].size(); ++i) {
      double w = want.Get(i), got = outs[o].Get(i);
      if (!(std::fabs(got - w) <= tol.abs + tol.rel * std::fabs(w)))
        return fmt::format("output {} element {}: got {} want {}", o, i, got, w);
    }
  }
  return "";
}

TEST(ScheduleAdapt, EveryTemplateAtOddSizesMatchesTheInterpreter) {
  int compiled = 0;
  for (const Case& c : Cases()) {
    Graph from = ParseGraph(At(c.relay, c.tuned_s, c.tuned_t));
    auto from_group = AnalyzeGroup(from, AllNodes(from));
    ASSERT_TRUE(from_group) << c.name;
    for (auto [s, t] : c.odd) {
      Graph to = ParseGraph(At(c.relay, s, t));
      auto to_group = AnalyzeGroup(to, AllNodes(to));
      ASSERT_TRUE(to_group) << c.name << " at " << s << "x" << t;
      for (int threads : {1, 2}) {
        std::set<std::string> done;
        for (const Schedule& tuned : ScheduleSpace(from, *from_group, threads)) {
          Schedule adapted = AdaptSchedule(from, *from_group, tuned, to, *to_group, threads);
          if (!done.insert(adapted.ToString()).second) continue;
          ++compiled;
          EXPECT_EQ(CheckSchedule(to, *to_group, adapted, threads, c.tol), "")
              << c.name << " tuned at " << c.tuned_s << "x" << c.tuned_t << " with '"
              << tuned.ToString() << "', adapted to " << s << "x" << t << " as '"
              << adapted.ToString() << "' at " << threads << " threads";
        }
      }
    }
  }
  std::cout << compiled << " adapted schedules compiled and checked\n";
}

TEST(ScheduleAdapt, MatmulSpaceMembersLandInTheNewSpace) {
  const std::vector<MatmulLayout> layouts = {
      {.batched = false, .transpose_b = true, .batch = 1, .m = 128, .n = 768, .k = 768},
      {.batched = true, .transpose_b = true, .batch = 12, .m = 256, .n = 256, .k = 64},
      {.batched = false, .transpose_b = false, .batch = 1, .m = 512, .n = 3072, .k = 768},
      {.batched = false, .transpose_b = true, .batch = 1, .m = 384, .n = 768, .k = 3072},
  };
  for (const MatmulLayout& from : layouts) {
    for (int64_t m : {1, 37, 96, 192, 320, 1000}) {
      MatmulLayout to = from;
      to.m = m;
      if (from.batched) to.n = m;
      for (int threads : {1, 4}) {
        std::vector<Schedule> there = MatmulScheduleSpace(to, threads);
        for (const Schedule& s : MatmulScheduleSpace(from, threads)) {
          Schedule adapted = AdaptMatmulSchedule(from, s, to, threads);
          // Clamped tiles can merge entries; a clamp of the source itself is kept as it is.
          if (s.Get("mr", 0) > to.m || s.Get("mr", 0) > from.m) continue;
          EXPECT_NE(std::find(there.begin(), there.end(), adapted), there.end())
              << s.ToString() << " at m=" << from.m << " -> " << adapted.ToString() << " at m=" << m
              << ", " << threads << " threads";
        }
      }
    }
  }
}

TEST(ScheduleAdapt, MatmulBlocksFollowTheNewProblem) {
  MatmulLayout from{
      .batched = false, .transpose_b = true, .batch = 1, .m = 128, .n = 768, .k = 768};
  MatmulLayout to = from;
  to.m = 2048;
  // The default at 128 rows is one m block; at 2048 rows it is again the default, not 16 blocks of
  // the old size. A k block chosen below the default (256 of 768) stays 256.
  Schedule def = MatmulScheduleSpace(from, 1)[0];
  EXPECT_EQ(AdaptMatmulSchedule(from, def, to, 1), MatmulScheduleSpace(to, 1)[0]);
  Schedule kc256 = def;
  kc256.Set("kc", 256);
  EXPECT_EQ(AdaptMatmulSchedule(from, kc256, to, 1).Get("kc", 0), 256);
  // An explicit block that neither budget gives (L1: 64, L2: 128) keeps its size, clamped to the
  // problem.
  Schedule odd = def;
  odd.Set("nc", 320);
  EXPECT_EQ(AdaptMatmulSchedule(from, odd, to, 1).Get("nc", 0), 320);
  to.n = 40;
  EXPECT_EQ(AdaptMatmulSchedule(from, odd, to, 1).Get("nc", 0),
            AdaptMatmulSchedule(from, odd, to, 1).Get("nr", 0));
  // A schedule that is not valid for the size it was tuned at is refused.
  Schedule bad;
  bad.Set("nr", 24);
  EXPECT_THROW(AdaptMatmulSchedule(from, bad, to, 1), UserError);
}

}  // namespace
}  // namespace fusetune::testing
