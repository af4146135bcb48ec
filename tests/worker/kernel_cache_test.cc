// The kernel cache serves a compiled kernel only for exactly the same kernel: never for another
// schedule, target, thread count or argument order; the plans it serves still agree with the
// reference interpreter; it stays within its bound.
#include <string>

#include <gtest/gtest.h>

#include "ir/fusion.h"
#include "ir/interpreter.h"
#include "ir/text/relay_parser.h"
#include "worker/codegen/jit.h"
#include "worker/executor.h"
#include "worker/kernel_cache.h"
#include "worker/output_check.h"

namespace fusetune {
namespace {

const char* kAddExp =
    "fn (%x: Tensor[(48, 40), float32], %y: Tensor[(48, 40), float32]) {\n"
    "  %0 = subtract(%x, %y);\n  exp(%0)\n}";
// The same ops, but the group's first kernel argument is the other operand.
const char* kAddExpSwapped =
    "fn (%y: Tensor[(48, 40), float32], %x: Tensor[(48, 40), float32]) {\n"
    "  %0 = subtract(%x, %y);\n  exp(%0)\n}";

Graph Parse(const std::string& text) { return ParseRelay(text, "test"); }

FusedGroup Whole(const Graph& g) {
  std::vector<ValueId> nodes;
  for (ValueId v = 0; v < static_cast<ValueId>(g.values().size()); ++v)
    if (g.value(v).kind == ValueKind::kNode) nodes.push_back(v);
  return *AnalyzeGroup(g, nodes);
}

Plan Fused(const Graph& g, const std::string& schedule) {
  return Plan{"fused", {{Whole(g).nodes, Schedule::Parse(schedule)}}};
}

TEST(KernelKey, DiffersInEverythingTheCodeDependsOn) {
  Graph g = Parse(kAddExp);
  FusedGroup group = Whole(g);
  const std::string base = KernelKey(g, group, Schedule::Parse("vector=8"), "cpu-a", 1, 3);
  EXPECT_EQ(base, KernelKey(g, group, Schedule::Parse("vector=8"), "cpu-a", 1, 3));
  EXPECT_NE(base, KernelKey(g, group, Schedule::Parse("vector=16"), "cpu-a", 1, 3));
  EXPECT_NE(base, KernelKey(g, group, Schedule::Parse("vector=8,parallel=0"), "cpu-a", 1, 3));
  EXPECT_NE(base, KernelKey(g, group, Schedule::Parse("vector=8"), "cpu-b", 1, 3));
  EXPECT_NE(base, KernelKey(g, group, Schedule::Parse("vector=8"), "cpu-a", 2, 3));
  EXPECT_NE(base, KernelKey(g, group, Schedule::Parse("vector=8"), "cpu-a", 1, 0));
  Graph swapped = Parse(kAddExpSwapped);
  EXPECT_NE(base, KernelKey(swapped, Whole(swapped), Schedule::Parse("vector=8"), "cpu-a", 1, 3));
  // Names do not matter: the same graph with other parameter names is the same kernel.
  Graph renamed = Parse(
      "fn (%a: Tensor[(48, 40), float32], %b: Tensor[(48, 40), float32]) {\n"
      "  %5 = subtract(%a, %b);\n  exp(%5)\n}");
  EXPECT_EQ(base, KernelKey(renamed, Whole(renamed), Schedule::Parse("vector=8"), "cpu-a", 1, 3));
}

TEST(KernelShare, SameCodeInAnotherArgumentOrderSharesWithThePermutation) {
  Graph g = Parse(kAddExp), swapped = Parse(kAddExpSwapped);
  const Schedule s = Schedule::Parse("vector=8");
  const KernelShare a = ShareOf(g, Whole(g), s, "cpu-a", 1, 3);
  const KernelShare b = ShareOf(swapped, Whole(swapped), s, "cpu-a", 1, 3);
  EXPECT_EQ(a.key, b.key);  // while their KernelKeys differ (above)
  EXPECT_EQ(a.roles, (std::vector<std::string>{"p0", "p1"}));  // %x, %y: subtract(%x, %y)
  EXPECT_EQ(b.roles, (std::vector<std::string>{"p1", "p0"}));  // %y, %x
  // The kernel compiled for `g` takes (x, y): `swapped`'s inputs in that order are (%x, %y),
  // which are its values 1 and 0.
  std::optional<std::vector<ValueId>> args = ArgumentsFor(a, b, Whole(swapped));
  ASSERT_TRUE(args);
  EXPECT_EQ(*args, (std::vector<ValueId>{1, 0}));
  EXPECT_NE(a.key, ShareOf(g, Whole(g), Schedule::Parse("vector=4"), "cpu-a", 1, 3).key);
  EXPECT_FALSE(
      ArgumentsFor(a, ShareOf(g, Whole(g), Schedule::Parse("vector=4"), "cpu-a", 1, 3), Whole(g)));
}

// Compiles `plan` through the cache, checks it against the reference, returns how many kernels
// had to be compiled.
int CompileAndCheck(const Graph& g, const Plan& plan, int threads, codegen::Jit& jit,
                    KernelCache& cache) {
  PlanExecutor executor(g, plan, jit, threads, &cache);
  std::vector<Tensor> inputs = RandomInputs(g, 7);
  executor.SetInputs(inputs);
  executor.Run();
  OutputComparison check = CompareOutputs(executor.Outputs(), Interpret(g, inputs));
  EXPECT_TRUE(check.ok()) << "error " << check.max_abs_error;
  return executor.num_compiled();
}

TEST(KernelCache, ServesOnlyTheSameKernel) {
  codegen::Jit jit;
  KernelCache cache;
  Graph g = Parse(kAddExp);
  EXPECT_EQ(CompileAndCheck(g, Fused(g, "vector=8"), 1, jit, cache), 1);
  EXPECT_EQ(CompileAndCheck(g, Fused(g, "vector=8"), 1, jit, cache), 0);  // found
  EXPECT_EQ(CompileAndCheck(g, Fused(g, "vector=4"), 1, jit, cache), 1);  // another schedule
  EXPECT_EQ(CompileAndCheck(g, Fused(g, "vector=8"), 2, jit, cache), 1);  // another thread count
  Graph swapped = Parse(kAddExpSwapped);                                  // other argument order
  EXPECT_EQ(CompileAndCheck(swapped, Fused(swapped, "vector=8"), 1, jit, cache), 1);
  EXPECT_EQ(CompileAndCheck(swapped, Fused(swapped, "vector=8"), 1, jit, cache), 0);
  // The unfused plan's kernels are other kernels again.
  EXPECT_EQ(CompileAndCheck(g, UnfusedPlan(g), 1, jit, cache), 2);
  EXPECT_EQ(cache.size(), 6u);
  EXPECT_EQ(cache.hits(), 2);
}

TEST(KernelCache, EvictsTheLeastRecentlyUsed) {
  codegen::Jit jit;
  KernelCache cache(2);
  Graph g = Parse(kAddExp);
  EXPECT_EQ(CompileAndCheck(g, Fused(g, "vector=4"), 1, jit, cache), 1);
  EXPECT_EQ(CompileAndCheck(g, Fused(g, "vector=8"), 1, jit, cache), 1);
  EXPECT_EQ(CompileAndCheck(g, Fused(g, "vector=4"), 1, jit, cache), 0);   // now the most recent
  EXPECT_EQ(CompileAndCheck(g, Fused(g, "vector=16"), 1, jit, cache), 1);  // evicts vector=8
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(CompileAndCheck(g, Fused(g, "vector=4"), 1, jit, cache), 0);
  EXPECT_EQ(CompileAndCheck(g, Fused(g, "vector=8"), 1, jit, cache), 1);
}

}  // namespace
}  // namespace fusetune
