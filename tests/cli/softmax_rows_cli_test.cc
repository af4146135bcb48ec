// A softmax written op by op end to end: a plan file holding its five ops as one kernel runs
// through `fusetune run` (compiled and checked against the reference interpreter) at 1 and 2
// threads, `kernel` names its row kernel, and `tune --no-softmax-rows` never puts both reductions
// in one kernel.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/cli/run_command.h"

namespace fusetune {
namespace {

using testing::kFast;
using testing::RunFusetune;
using testing::RunPlanFile;
using testing::TempDb;
using testing::WriteTempFile;

// Rows of 45 (not a multiple of the vector width), scaled before the softmax.
const char* kSoftmax = R"(fn (%x: Tensor[(6, 45), float32]) {
  %0 = multiply(%x, 3f);
  %1 = max(%0, axis=[1], keepdims=True);
  %2 = subtract(%0, %1);
  %3 = exp(%2);
  %4 = sum(%3, axis=[1], keepdims=True);
  divide(%3, %4)
}
)";

TEST(SoftmaxRowsCli, APlanWithTheFiveOpsInOneKernelRunsAndIsChecked) {
  const std::string graph = WriteTempFile("softmax_rows.relay", kSoftmax);
  const std::string plan = WriteTempFile(
      "softmax_rows_plan.json", R"({"groups":[{"nodes":["%0","%1","%2","%3","%4","%5"]}]})");
  for (int threads : {1, 2}) {
    auto run = RunPlanFile(plan, graph, threads);
    ASSERT_EQ(run.exit_code, 0) << run.err;
    auto j = nlohmann::json::parse(run.out);
    ASSERT_EQ(j["kernels"].size(), 1u);
    EXPECT_LT(j["max_abs_error"].get<double>(), 1e-6);
  }
  auto kernel = RunFusetune("kernel --group %0,%1,%2,%3,%4,%5 " + graph);
  ASSERT_EQ(kernel.exit_code, 0) << kernel.err;
  EXPECT_NE(kernel.out.find("template composite; anchor %5"), std::string::npos) << kernel.out;
}

TEST(SoftmaxRowsCli, NoSoftmaxRowsNeverPutsBothReductionsInOneKernel) {
  const std::string graph = WriteTempFile("softmax_rows_tune.relay", kSoftmax);
  TempDb db("softmax_rows_off");
  auto off = RunFusetune("tune --json --no-softmax-rows --db " + db.path() + kFast + graph);
  ASSERT_EQ(off.exit_code, 0) << off.err;
  const nlohmann::json report = nlohmann::json::parse(off.out);
  int groups = 0;
  for (const auto& region : report["regions"]) {
    for (const auto& group : region["plan"]) {
      ++groups;
      int reductions = 0;
      for (const auto& n : group) reductions += n == "%1" || n == "%4";
      EXPECT_LE(reductions, 1) << group;
    }
  }
  EXPECT_GE(groups, 2);
}

}  // namespace
}  // namespace fusetune
