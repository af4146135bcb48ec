// Row reductions over several accumulators (GroupKernel::ChainedLoop): whole blocks of vectors
// each add into their own accumulator, the rest into the first. Checked against the reference
// interpreter at row lengths that leave no rest, a masked rest, and a rest of several vectors,
// for every template that reduces rows and every vector width the schedules offer, at 1 and 2
// threads; and the kernel IR holds four chains where a row has four vectors.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "group_check_util.h"
#include "ir/fusion.h"
#include "worker/codegen/compile.h"
#include "worker/codegen/target.h"
#include "worker/codegen/templates/group_kernel.h"

namespace fusetune::testing {
namespace {

constexpr Tolerance kAccum{1e-5, 1e-5};

// 9: under one vector; 35: two vectors and a masked rest; 64: four whole vectors; 135: two blocks
// of four and a rest of a vector and a masked part (at 16 lanes).
constexpr int kLengths[] = {9, 35, 64, 135};

void ExpectWholeGraphMatches(const std::string& relay, const std::string& schedule) {
  Graph graph = ParseGraph(relay);
  std::vector<std::string> all;
  for (const Value& v : graph.values())
    if (v.kind == ValueKind::kNode) all.push_back(v.name);
  for (int threads : {1, 2}) {
    for (const GroupResult& r :
         CheckGroups(graph, {all}, kAccum, threads, 3, Schedule::Parse(schedule)))
      EXPECT_TRUE(r.ok) << "'" << schedule << "' at " << threads << " threads: " << r.first_failure
                        << "\n"
                        << relay;
  }
}

TEST(ReductionChains, ChainsFollowTheWholeVectorsOfARow) {
  EXPECT_EQ(codegen::ReductionChains(9, 16), 1);
  EXPECT_EQ(codegen::ReductionChains(35, 16), 2);
  EXPECT_EQ(codegen::ReductionChains(64, 16), 4);
  EXPECT_EQ(codegen::ReductionChains(4096, 16), 4);
  EXPECT_EQ(codegen::ReductionChains(3, 1), 3);
}

TEST(ReductionChains, RowReductionsMatchTheReferenceAtEveryRest) {
  for (int n : kLengths) {
    for (const char* schedule : {"", "vector=4", "vector=1"}) {
      for (const char* op : {"sum", "mean", "max", "min"})
        ExpectWholeGraphMatches(
            fmt::format("fn (%x: Tensor[(3, {}), float32]) {{ {}(%x, axis=[-1]) }}", n, op),
            schedule);
      // Two reduced axes: the chains restart for every index of the outer one.
      ExpectWholeGraphMatches(
          fmt::format("fn (%x: Tensor[(2, 3, {}), float32]) {{ sum(exp(%x), axis=[0, 2]) }}", n),
          schedule);
    }
  }
}

TEST(ReductionChains, RowKernelsMatchTheReferenceAtEveryRest) {
  for (int n : kLengths) {
    const std::string softmax =
        fmt::format("fn (%x: Tensor[(3, {}), float32]) {{ nn.softmax(multiply(%x, 3f)) }}", n);
    const std::string layer_norm = fmt::format(
        "fn (%x: Tensor[(3, {0}), float32], %g: Tensor[({0}), float32], "
        "%b: Tensor[({0}), float32]) {{ nn.layer_norm(add(%x, 5f), %g, %b) }}",
        n);
    const std::string rms_norm = fmt::format(
        "fn (%x: Tensor[(3, {}), float32]) {{\n  %0 = power(%x, 2f);\n"
        "  %1 = mean(%0, axis=[-1], keepdims=True);\n  %2 = add(%1, 1e-6f);\n"
        "  %3 = rsqrt(%2);\n  multiply(%x, %3)\n}}",
        n);
    for (const char* schedule : {"", "vector=4", "vector=1"}) {
      ExpectWholeGraphMatches(softmax, schedule);
      ExpectWholeGraphMatches(layer_norm, schedule);
      ExpectWholeGraphMatches(rms_norm, schedule);
    }
    for (const char* schedule : {"online=1", "online=1,vector=4"}) {
      ExpectWholeGraphMatches(softmax, schedule);
      ExpectWholeGraphMatches(layer_norm, schedule);
    }
  }
}

// The latency this is for: a row of 4,096 floats adds into four vector accumulators, each
// unrolled copy into its own, so no add waits for the one before it.
TEST(ReductionChains, ARowOfManyVectorsAddsIntoFourAccumulators) {
  Graph g = ParseGraph("fn (%x: Tensor[(8, 4096), float32]) { sum(%x, axis=[-1]) }");
  std::vector<ValueId> ids;
  for (const Value& v : g.values())
    if (v.kind == ValueKind::kNode) ids.push_back(*g.FindByName(v.name));
  codegen::TargetInfo target;
  target.vector_bits = 512;
  const std::string ir = codegen::PrintKernel(
      codegen::BuildGroupKernel(g, *AnalyzeGroup(g, ids), Schedule{}, target, "row_sum"));
  EXPECT_NE(ir.find("alloc acc: float32[64]"), std::string::npos) << ir;
  EXPECT_NE(ir.find("for j in 0..64 {"), std::string::npos) << ir;
  EXPECT_NE(ir.find("unrolled for u in 0..4 {"), std::string::npos) << ir;
  EXPECT_NE(ir.find("acc[((u * 16) + l)]"), std::string::npos) << ir;
}

}  // namespace
}  // namespace fusetune::testing
