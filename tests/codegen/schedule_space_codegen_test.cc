// Every schedule of every template's space (ir/schedule_space.h), compiled and compared with the
// reference interpreter at odd sizes (rows that are not multiples of any vector width, size-1
// dims, broadcasts, transposes) at 1 and 2 threads: a schedule the search may measure is never a
// wrong kernel. Tolerances as in group_codegen_test.cc.
#include <gtest/gtest.h>

#include "group_check_util.h"
#include "ir/fusion.h"
#include "ir/schedule_space.h"

namespace fusetune::testing {
namespace {

constexpr Tolerance kExact{0, 0};
constexpr Tolerance kMath{1e-6, 2e-6};
constexpr Tolerance kAccum{1e-5, 1e-5};

struct Case {
  const char* relay;
  std::vector<std::string> group;  // node names; empty: the whole graph
  Tolerance tol;
  GroupTemplate templ;
};

// Checks every schedule of the group's space at 1 and 2 threads; returns the space sizes seen.
size_t ExpectWholeSpaceMatches(const Case& c) {
  Graph graph = ParseGraph(c.relay);
  std::vector<std::string> names = c.group;
  if (names.empty())
    for (const Value& v : graph.values())
      if (v.kind == ValueKind::kNode) names.push_back(v.name);
  std::vector<ValueId> ids;
  for (const std::string& n : names) ids.push_back(*graph.FindByName(n));
  auto group = AnalyzeGroup(graph, ids);
  EXPECT_TRUE(group.has_value()) << c.relay;
  if (!group) return 0;
  EXPECT_EQ(group->templ, c.templ) << c.relay;
  size_t most = 0;
  for (int threads : {1, 2}) {
    std::vector<Schedule> space = ScheduleSpace(graph, *group, threads);
    most = std::max(most, space.size());
    if (c.templ != GroupTemplate::kMatmul) {  // (matmul spaces spell their default's knobs)
      EXPECT_EQ(space[0], Schedule{}) << "the default comes first";
    }
    for (const Schedule& s : space) {
      for (const GroupResult& r : CheckGroups(graph, {names}, c.tol, threads, 3, s))
        EXPECT_TRUE(r.ok) << r.group << " schedule '" << s.ToString() << "' at " << threads
                          << " threads: " << r.first_failure << "\n"
                          << c.relay;
    }
  }
  return most;
}

TEST(ScheduleSpaceCodegen, ElementwiseSchedulesAllMatchTheInterpreter) {
  const Case cases[] = {
      {"fn (%a: Tensor[(5, 1, 19), float32], %b: Tensor[(4, 1), float32]) { add(%a, %b) }",
       {},
       {1e-6, 1e-6},
       GroupTemplate::kElementwise},
      {"fn (%x: Tensor[(7, 3), float32]) {\n  %0 = exp(%x);\n  %1 = add(%0, 1f);\n  "
       "multiply(%1, %1)\n}",
       {},
       kMath,
       GroupTemplate::kElementwise},
      // A gathering transpose: the space holds tile=0 as well.
      {"fn (%x: Tensor[(37, 40), float32]) { transpose(%x) }",
       {},
       kExact,
       GroupTemplate::kElementwise},
      {"fn (%x: Tensor[(24, 60), float32]) {\n  %0 = reshape(%x, newshape=[24, 3, 20]);\n"
       "  %1 = transpose(%0, axes=[1, 2, 0]);\n  exp(%1)\n}",
       {},
       kMath,
       GroupTemplate::kElementwise},
      {"fn (%x: Tensor[(1), float32]) { negative(%x) }", {}, kExact, GroupTemplate::kElementwise},
  };
  for (const Case& c : cases) EXPECT_GE(ExpectWholeSpaceMatches(c), 5u) << c.relay;
}

TEST(ScheduleSpaceCodegen, ReductionSchedulesAllMatchTheInterpreter) {
  const Case cases[] = {
      {"fn (%x: Tensor[(5, 9, 37), float32]) { sum(%x, axis=[-1]) }",
       {},
       kAccum,
       GroupTemplate::kReduce},
      {"fn (%x: Tensor[(5, 9, 37), float32]) { mean(%x, axis=[0]) }",
       {},
       kAccum,
       GroupTemplate::kReduce},
      {"fn (%x: Tensor[(5, 9, 37), float32]) { max(%x, axis=[1], keepdims=True) }",
       {},
       kExact,
       GroupTemplate::kReduce},
      {"fn (%x: Tensor[(3, 20), int32]) { sum(%x, axis=[1]) }", {}, kExact, GroupTemplate::kReduce},
      {"fn (%x: Tensor[(6, 50), float32], %s: Tensor[(6, 1), float32]) {\n"
       "  %0 = multiply(%x, %x);\n  %1 = mean(%0, axis=[1], keepdims=True);\n  %2 = add(%1, "
       "1e-5f);\n  %3 = rsqrt(%2);\n  multiply(%3, %s)\n}",
       {},
       kAccum,
       GroupTemplate::kReduce},
  };
  for (const Case& c : cases) EXPECT_GE(ExpectWholeSpaceMatches(c), 4u) << c.relay;
}

TEST(ScheduleSpaceCodegen, CompositeSchedulesAllMatchTheInterpreter) {
  const Case cases[] = {
      {"fn (%x: Tensor[(3, 7, 45), float32]) { nn.softmax(%x) }",
       {},
       kAccum,
       GroupTemplate::kComposite},
      {"fn (%x: Tensor[(3, 7, 45), float32]) { nn.softmax(%x, axis=1) }",
       {},
       kAccum,
       GroupTemplate::kComposite},
      {"fn (%x: Tensor[(5, 70), float32], %g: Tensor[(70), float32], %b: Tensor[(70), float32]) "
       "{ nn.layer_norm(%x, %g, %b) }",
       {},
       kAccum,
       GroupTemplate::kComposite},
      {"fn (%x: Tensor[(2, 5, 40), float32], %mask: Tensor[(2, 1, 40), float32]) {\n"
       "  %0 = multiply(%x, 0.125f);\n  %1 = add(%0, %mask);\n  %2 = nn.softmax(%1);\n  "
       "multiply(%2, 3f)\n}",
       {},
       kAccum,
       GroupTemplate::kComposite},
      // A layer norm and an RMS norm written op by op (ir/norm_pattern.h), with their weights.
      {"fn (%x: Tensor[(5, 70), float32], %g: Tensor[(70), float32]) {\n"
       "  %0 = mean(%x, axis=[-1], keepdims=True);\n  %1 = subtract(%x, %0);\n"
       "  %2 = power(%1, 2f);\n  %3 = mean(%2, axis=[-1], keepdims=True);\n"
       "  %4 = add(%3, 1e-5f);\n  %5 = sqrt(%4);\n  %6 = divide(%1, %5);\n  multiply(%6, %g)\n}",
       {},
       kAccum,
       GroupTemplate::kComposite},
      {"fn (%x: Tensor[(3, 7, 45), float32], %w: Tensor[(45), float32]) {\n"
       "  %0 = multiply(%x, %x);\n  %1 = mean(%0, axis=[2], keepdims=True);\n"
       "  %2 = add(%1, 1e-6f);\n  %3 = rsqrt(%2);\n  %4 = multiply(%3, %x);\n"
       "  multiply(%4, %w)\n}",
       {},
       kAccum,
       GroupTemplate::kComposite},
  };
  for (const Case& c : cases) EXPECT_GE(ExpectWholeSpaceMatches(c), 4u) << c.relay;
}

TEST(ScheduleSpaceCodegen, MatmulSchedulesAllMatchTheInterpreter) {
  const Case cases[] = {
      {"fn (%x: Tensor[(5, 48), float32], %w: Tensor[(33, 48), float32], %b: Tensor[(33), "
       "float32]) {\n  %0 = nn.dense(%x, %w);\n  %1 = nn.bias_add(%0, %b);\n  tanh(%1)\n}",
       {},
       kAccum,
       GroupTemplate::kMatmul},
      {"fn (%a: Tensor[(3, 19, 37), float32], %b: Tensor[(3, 37, 21), float32]) { "
       "nn.batch_matmul(%a, %b, transpose_b=False) }",
       {},
       kAccum,
       GroupTemplate::kMatmul},
  };
  for (const Case& c : cases) EXPECT_GE(ExpectWholeSpaceMatches(c), 2u) << c.relay;
}

TEST(ScheduleSpaceCodegen, SerialVariantsOnlyAtSeveralThreads) {
  Graph graph = ParseGraph("fn (%x: Tensor[(5, 9, 37), float32]) { sum(%x, axis=[-1]) }");
  auto group = AnalyzeGroup(graph, std::vector<ValueId>{*graph.FindByName("0")});
  ASSERT_TRUE(group);
  for (const Schedule& s : ScheduleSpace(graph, *group, 1)) EXPECT_EQ(s.Get("parallel", 1), 1);
  int serial = 0;
  for (const Schedule& s : ScheduleSpace(graph, *group, 2)) serial += s.Get("parallel", 1) == 0;
  EXPECT_EQ(serial, 3);
}

}  // namespace
}  // namespace fusetune::testing
