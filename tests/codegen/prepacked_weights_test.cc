// Weights packed once at bind time (the matmul template's wpack knob, kernel_abi.h): every wpack
// schedule of the space agrees with the reference interpreter at odd sizes and 1 / 2 threads,
// bound and unbound; a bound kernel really reads its packed copy (changing B behind its back
// shows); copies are per bound pointer and per kernel; the schedule space offers wpack only for
// constant weights; where the graph computes B the kernel packs per call (a prologue: refused);
// the executor binds in SetInputs.
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "group_check_util.h"
#include "ir/error.h"
#include "ir/fusion.h"
#include "ir/graph.h"
#include "ir/interpreter.h"
#include "ir/matmul_schedule.h"
#include "ir/schedule_space.h"
#include "tests/matmul/group_fixture.h"
#include "tests/matmul/weighted_product.h"
#include "worker/codegen/compile.h"
#include "worker/codegen/jit.h"
#include "worker/codegen/kernel_abi.h"
#include "worker/codegen/runtime/thread_pool.h"
#include "worker/executor.h"
#include "worker/output_check.h"

namespace fusetune::testing {
namespace {

codegen::Jit& TheJit() {
  static codegen::Jit jit;
  return jit;
}

using test_graphs::WeightedProduct;
using test_graphs::WholeGroup;

// One group compiled, with a tensor per group input (the graph's data or random) and output.
struct Kernel {
  Graph graph;
  FusedGroup group;
  std::unique_ptr<codegen::CompiledKernel> kernel;
  std::vector<Tensor> values;  // reference value of every ValueId
  std::vector<Tensor> inputs, outputs;
  std::vector<void*> buffers;

  Kernel(Graph g, const Schedule& schedule, int threads) : graph(std::move(g)) {
    group = WholeGroup(graph);
    kernel = codegen::CompileGroup(graph, group, schedule, TheJit(), {.threads = threads});
    values = InterpretAll(graph, RandomInputs(graph, 5));
    for (ValueId v : group.inputs) {
      Tensor copy(graph.value(v).type);  // the kernel's own buffer, so a test may change it
      std::memcpy(copy.data(), values[v].data(), static_cast<size_t>(copy.type().NumBytes()));
      inputs.push_back(copy);
      buffers.push_back(inputs.back().data());
    }
    for (ValueId v : group.outputs) {
      outputs.emplace_back(graph.value(v).type);
      buffers.push_back(outputs.back().data());
    }
  }
  // Runs once (outputs poisoned first) and returns the largest error against the reference.
  double Error(int threads) {
    for (Tensor& o : outputs)
      for (int64_t i = 0; i < o.size(); ++i) o.Set(i, NAN);
    runtime::SetNumThreads(threads);
    kernel->Run(buffers.data());
    runtime::SetNumThreads(1);
    double worst = 0;
    for (size_t o = 0; o < outputs.size(); ++o)
      worst = std::max(worst, codegen::test::MaxAbsError(outputs[o], values[group.outputs[o]]));
    return worst;
  }
  // Index of the weight among the kernel's buffers.
  int WeightIndex() const {
    const ValueId w = graph.FindByName("w").value();
    for (size_t i = 0; i < group.inputs.size(); ++i)
      if (group.inputs[i] == w) return static_cast<int>(i);
    return -1;
  }
};

Schedule WithWpack(Schedule s) {
  s.Set("wpack", 1);
  return s;
}

TEST(PrepackedWeights, SpaceOffersWpackOnlyForConstantWeights) {
  Graph weighted = WeightedProduct(1, 7, 40, 33, false);
  FusedGroup group = WholeGroup(weighted);
  EXPECT_TRUE(MatmulWeightsConstant(weighted, group));
  std::vector<Schedule> space = ScheduleSpace(weighted, group, 2);
  ASSERT_GT(space.size(), 2u);
  EXPECT_EQ(space.front().Get("wpack", 0), 0) << "the default packs inside the call";
  int wpack = 0;
  for (const Schedule& s : space) wpack += s.Get("wpack", 0) == 1;
  EXPECT_EQ(wpack * 2, static_cast<int>(space.size())) << "each entry and its wpack twin";

  // The same product with W a plain parameter (the caller's input): no wpack.
  Graph plain = ParseGraph(
      "fn (%x: Tensor[(7, 33), float32], %w: Tensor[(40, 33), float32]) { nn.dense(%x, %w) }");
  FusedGroup plain_group = WholeGroup(plain);
  EXPECT_FALSE(MatmulWeightsConstant(plain, plain_group));
  for (const Schedule& s : ScheduleSpace(plain, plain_group, 2)) EXPECT_EQ(s.Get("wpack", 0), 0);
}

TEST(PrepackedWeights, KnobIsSpelledOnlyWhenSetAndKeptByAdaptation) {
  MatmulLayout from{.batched = false,
                    .transpose_a = false,
                    .transpose_b = true,
                    .batch = 1,
                    .m = 128,
                    .n = 768,
                    .k = 768};
  MatmulLayout to = from;
  to.m = 192;
  Schedule s = WithWpack(Schedule{});
  Schedule adapted = AdaptMatmulSchedule(from, s, to, 1);
  EXPECT_EQ(adapted.Get("wpack", 0), 1) << adapted.ToString();
  EXPECT_EQ(AdaptMatmulSchedule(from, Schedule{}, to, 1).ToString().find("wpack"),
            std::string::npos);
  Schedule bad;
  bad.Set("wpack", 2);
  EXPECT_THROW(ResolveMatmulTiling(from, bad, 1), UserError);
}

// Every wpack schedule of the space (odd sizes: ragged m and n tiles, several n blocks, k blocks
// with a ragged last one), bound and unbound, at 1 and 2 threads.
TEST(PrepackedWeights, EveryWpackScheduleAgreesWithReference) {
  struct Case {
    int64_t batch, m, n, k;
    bool epilogue, transpose_b;
  };
  const Case cases[] = {{1, 7, 17, 33, false, true},     {1, 33, 65, 17, true, true},
                        {1, 13, 150, 1100, false, true}, {3, 9, 40, 21, false, true},
                        {3, 9, 40, 21, false, false},    {1, 1, 1, 1, false, true}};
  for (const Case& c : cases) {
    for (int threads : {1, 2}) {
      Graph graph = WeightedProduct(c.batch, c.m, c.n, c.k, c.epilogue, c.transpose_b);
      const FusedGroup group = WholeGroup(graph);
      for (const Schedule& s : ScheduleSpace(graph, group, threads)) {
        if (s.Get("wpack", 0) == 0) continue;
        const std::string what = fmt::format("{}x{}x{}x{} tb={} {} at {} threads", c.batch, c.m,
                                             c.n, c.k, c.transpose_b, s.ToString(), threads);
        Kernel k(WeightedProduct(c.batch, c.m, c.n, c.k, c.epilogue, c.transpose_b), s, threads);
        ASSERT_TRUE(k.kernel->packs_weights_ahead()) << what;
        const double tol = 1e-5 * std::sqrt(static_cast<double>(c.k)) + 1e-6;
        EXPECT_LT(k.Error(threads), tol) << "unbound (packs per call): " << what;
        k.kernel->Bind(k.buffers.data());
        EXPECT_LT(k.Error(threads), tol) << "bound: " << what;
      }
    }
  }
}

TEST(PrepackedWeights, BoundKernelReadsItsCopyUntilBoundAgain) {
  Kernel k(WeightedProduct(1, 16, 64, 48, false), WithWpack(Schedule{}), 1);
  k.kernel->Bind(k.buffers.data());
  ASSERT_LT(k.Error(1), 1e-5);
  // Change the weights behind the bound pointer: the kernel still computes with the copy it
  // packed (proof that it does not pack per call) ...
  Tensor& w = k.inputs[k.WeightIndex()];
  for (int64_t i = 0; i < w.size(); ++i) w.Set(i, 0.0);
  EXPECT_LT(k.Error(1), 1e-5);
  // ... until bound again: then the product is zero.
  k.kernel->Bind(k.buffers.data());
  k.Error(1);
  for (int64_t i = 0; i < k.outputs[0].size(); ++i) ASSERT_EQ(k.outputs[0].Get(i), 0.0);
}

TEST(PrepackedWeights, CopiesArePerBoundPointer) {
  Kernel k(WeightedProduct(1, 8, 48, 40, false), WithWpack(Schedule{}), 2);
  const int wi = k.WeightIndex();
  // Two more weight tensors than the slots bound in turn, as a deep model binds one kernel to
  // every layer's weights, each then run: every run is right, whether its copy survived or it
  // packs per call after being evicted.
  std::vector<Tensor> weights;
  for (int i = 0; i < codegen::kBoundWeightSlots + 2; ++i) {
    weights.push_back(Tensor(k.inputs[wi].type()));
    std::memcpy(weights.back().data(), k.inputs[wi].data(),
                static_cast<size_t>(k.inputs[wi].type().NumBytes()));
  }
  for (Tensor& w : weights) {
    k.buffers[wi] = w.data();
    k.kernel->Bind(k.buffers.data());
  }
  for (Tensor& w : weights) {
    k.buffers[wi] = w.data();
    ASSERT_LT(k.Error(2), 1e-5);
  }
  auto zero_and_run = [&](Tensor& w) {
    for (int64_t i = 0; i < w.size(); ++i) w.Set(i, 0.0);
    k.buffers[wi] = w.data();
    return k.Error(2);
  };
  auto output_is_zero = [&] {
    for (int64_t i = 0; i < k.outputs[0].size(); ++i)
      if (k.outputs[0].Get(i) != 0.0) return false;
    return true;
  };
  // Every binding but the first two (evicted by the last two) holds its copy: zeroing the
  // weights behind its pointer does not show, in the table's middle (a 12-layer model's 36th
  // Q/K/V binding) and at its end.
  EXPECT_LT(zero_and_run(weights[35]), 1e-5);
  EXPECT_LT(zero_and_run(weights[codegen::kBoundWeightSlots + 1]), 1e-5);
  // The evicted first binding packs per call: it reads its zeroed weights.
  zero_and_run(weights[0]);
  EXPECT_TRUE(output_is_zero());
  // Unbinding frees the copy: the kernel then reads the (zeroed) weights themselves.
  k.buffers[wi] = weights[35].data();
  k.kernel->Unbind(k.buffers.data());
  k.Error(2);
  EXPECT_TRUE(output_is_zero());
}

TEST(PrepackedWeights, PacksPerCallWhereAnotherKernelComputesB) {
  // B produced by another kernel (a stored plan served to a graph where this region's B is
  // computed): packing it once would go stale on the next run, so the kernel packs per call.
  Graph graph = ParseGraph(
      "fn (%x: Tensor[(8, 16), float32], %w: Tensor[(24, 16), float32]) {\n"
      "  %0 = exp(%w);\n  nn.dense(%x, %0)\n}");
  Plan plan = UnfusedPlan(graph);
  plan.groups[1].schedule = WithWpack(Schedule{});
  std::vector<Tensor> inputs = RandomInputs(graph, 3);
  PlanExecutor executor(graph, plan, TheJit(), 1);
  executor.SetInputs(inputs);
  executor.Run();
  EXPECT_LT(CompareOutputs(executor.Outputs(), Interpret(graph, inputs)).max_abs_error, 1e-5);
  // A second run after new inputs: a copy packed at bind time would be stale here.
  std::vector<Tensor> other = RandomInputs(graph, 4);
  executor.SetInputs(other);
  executor.Run();
  EXPECT_LT(CompareOutputs(executor.Outputs(), Interpret(graph, other)).max_abs_error, 1e-5);
  std::string why;
  auto dense = AnalyzeGroup(graph, std::vector<ValueId>{graph.FindByName("1").value()}, &why);
  ASSERT_TRUE(dense) << why;
  EXPECT_FALSE(codegen::CompileGroup(graph, *dense, WithWpack(Schedule{}), TheJit(), {.threads = 1})
                   ->packs_weights_ahead());
}

TEST(PrepackedWeights, RefusedWhereTheGroupComputesB) {
  // B computed inside the group (a prologue): a user error naming it.
  Graph graph = ParseGraph(
      "fn (%x: Tensor[(8, 16), float32], %w: Tensor[(24, 16), float32]) {\n"
      "  %0 = exp(%w);\n  nn.dense(%x, %0)\n}");
  std::string why;
  auto fused = AnalyzeGroup(
      graph, std::vector<ValueId>{graph.FindByName("0").value(), graph.FindByName("1").value()},
      &why);
  ASSERT_TRUE(fused) << why;
  try {
    codegen::CompileGroup(graph, *fused, WithWpack(Schedule{}), TheJit(), {.threads = 1});
    FAIL() << "wpack on a B computed by a prologue compiled";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("wpack=1 needs B (%0) to be a kernel input"),
              std::string::npos)
        << e.what();
  }
}

TEST(PrepackedWeights, ExecutorBindsInSetInputs) {
  Graph graph = WeightedProduct(1, 33, 96, 80, true);
  Plan plan = UnfusedPlan(graph);
  plan.groups = {{WholeGroup(graph).nodes, WithWpack(Schedule{})}};
  std::vector<Tensor> inputs = RandomInputs(graph, 9);
  std::vector<Tensor> want = Interpret(graph, inputs);
  for (int threads : {1, 2}) {
    PlanExecutor executor(graph, plan, TheJit(), threads);
    executor.SetInputs(inputs);
    executor.Run();
    EXPECT_LT(CompareOutputs(executor.Outputs(), want).max_abs_error, 1e-5) << threads;
    // New inputs rebind: the run follows them.
    std::vector<Tensor> other = RandomInputs(graph, 10);
    executor.SetInputs(other);
    executor.Run();
    EXPECT_LT(CompareOutputs(executor.Outputs(), Interpret(graph, other)).max_abs_error, 1e-5);
  }
}

}  // namespace
}  // namespace fusetune::testing
