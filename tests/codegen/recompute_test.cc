// Plans that recompute a cheap op in every kernel that reads it (ir/fusion.h): each such kernel,
// on every schedule of its template's space, agrees with the interpreter at odd sizes and 1 and
// 2 threads, and the recomputed value is never a kernel output.
#include <algorithm>
#include <string>

#include <gtest/gtest.h>

#include "group_check_util.h"
#include "ir/fusion.h"
#include "ir/interpreter.h"
#include "ir/plan.h"
#include "ir/schedule_space.h"
#include "worker/codegen/jit.h"
#include "worker/executor.h"
#include "worker/output_check.h"

namespace fusetune::testing {
namespace {

// exp(x - max) read by the sum and by the division; rows of 53.
const char* kSoftmax =
    "fn (%x: Tensor[(3, 37, 53), float32]) {\n"
    "  %0 = max(%x, axis=[2], keepdims=True);\n  %1 = subtract(%x, %0);\n  %2 = exp(%1);\n"
    "  %3 = sum(%2, axis=[2], keepdims=True);\n  divide(%2, %3)\n}";
const char* kSoftmaxPlan =
    R"({"groups":[{"nodes":["%0"]},{"nodes":["%1","%2","%3"]},{"nodes":["%1","%2","%4"]}]})";

// A layer norm written op by op: x - mean read by the square and by the division.
const char* kLayerNorm =
    "fn (%x: Tensor[(37, 101), float32], %g: Tensor[(101), float32], %b: Tensor[(101), "
    "float32]) {\n"
    "  %0 = mean(%x, axis=[1], keepdims=True);\n  %1 = subtract(%x, %0);\n"
    "  %2 = multiply(%1, %1);\n  %3 = mean(%2, axis=[1], keepdims=True);\n"
    "  %4 = add(%3, 1e-05f);\n  %5 = sqrt(%4);\n  %6 = divide(%1, %5);\n"
    "  %7 = multiply(%6, %g);\n  add(%7, %b)\n}";
const char* kLayerNormPlan =
    R"({"groups":[{"nodes":["%0"]},{"nodes":["%1","%2","%3"]},{"nodes":["%4","%5"]},)"
    R"({"nodes":["%1","%6","%7","%8"]}]})";

// A scaled input read by two matmuls as A: recomputed in both prologues.
const char* kTwoDenses =
    "fn (%x: Tensor[(19, 67), float32], %w1: Tensor[(45, 67), float32], %w2: Tensor[(29, 67), "
    "float32]) {\n"
    "  %0 = multiply(%x, 0.5f);\n  %1 = nn.dense(%0, %w1);\n  %2 = nn.dense(%0, %w2);\n"
    "  (%1, %2)\n}";
const char* kTwoDensesPlan = R"({"groups":[{"nodes":["%0","%1"]},{"nodes":["%0","%2"]}]})";

struct Case {
  const char* relay;
  const char* plan;
};

TEST(Recompute, EveryScheduleOfEveryRecomputingKernelMatchesTheInterpreter) {
  for (const Case& c : {Case{kSoftmax, kSoftmaxPlan}, Case{kLayerNorm, kLayerNormPlan},
                        Case{kTwoDenses, kTwoDensesPlan}}) {
    Graph graph = ParseGraph(c.relay);
    const Plan base = PlanFromJson(graph, c.plan, "plan");
    const std::vector<std::vector<ValueId>> recomputed = RecomputedNodes(base.groups);
    std::vector<Tensor> inputs = RandomInputs(graph, 5);
    std::vector<Tensor> want = Interpret(graph, inputs);
    codegen::Jit jit;
    for (int threads : {1, 2}) {
      // Each group's space; plan k runs every group on its k-th schedule (the last when shorter).
      std::vector<std::vector<Schedule>> spaces;
      size_t longest = 0;
      for (size_t gi = 0; gi < base.groups.size(); ++gi) {
        auto group = AnalyzeGroup(graph, base.groups[gi].nodes, nullptr, recomputed[gi]);
        ASSERT_TRUE(group);
        for (ValueId r : recomputed[gi])
          EXPECT_EQ(std::count(group->outputs.begin(), group->outputs.end(), r), 0)
              << "a recomputed value is stored";
        spaces.push_back(ScheduleSpace(graph, *group, threads));
        longest = std::max(longest, spaces.back().size());
      }
      for (size_t k = 0; k < longest; ++k) {
        Plan plan = base;
        for (size_t gi = 0; gi < plan.groups.size(); ++gi)
          plan.groups[gi].schedule = spaces[gi][std::min(k, spaces[gi].size() - 1)];
        PlanExecutor executor(graph, plan, jit, threads);
        executor.SetInputs(inputs);
        executor.Run();
        EXPECT_LT(CompareOutputs(executor.Outputs(), want).max_abs_error, 1e-4)
            << c.plan << " schedule " << k << " at " << threads << " threads";
      }
    }
  }
}

}  // namespace
}  // namespace fusetune::testing
