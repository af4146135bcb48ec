// Recomputation end to end: a plan file holding x - mean in both groups that read it runs
// through `fusetune run --plan FILE` (checked against the reference interpreter) at 1 and 2
// threads; `kernel --recompute` shows the group that recomputes it; `tune --no-recompute` never
// holds a node in two kernels.
#include <map>
#include <string>

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

// A layer norm written op by op, at sizes that are not multiples of 16.
const char* kLayerNorm =
    R"(fn (%x: Tensor[(37, 101), float32], %g: Tensor[(101), float32], %b: Tensor[(101), float32]) {
  %0 = mean(%x, axis=[-1], keepdims=True);
  %1 = subtract(%x, %0);
  %2 = power(%1, 2f);
  %3 = mean(%2, axis=[-1], keepdims=True);
  %4 = add(%3, 1e-12f);
  %5 = sqrt(%4);
  %6 = divide(%1, %5);
  %7 = multiply(%6, %g);
  add(%7, %b)
}
)";

TEST(RecomputeCli, APlanFileThatRecomputesRunsAndIsChecked) {
  const std::string graph = WriteTempFile("ln_ops.relay", kLayerNorm);
  const std::string plan =
      WriteTempFile("ln_recompute.json",
                    R"({"groups":[["%0"],["%1","%2","%3"],["%4","%5"],["%1","%6","%7","%8"]]})");
  for (int threads : {1, 2}) {
    auto run = RunPlanFile(plan, graph, threads);
    ASSERT_EQ(run.exit_code, 0) << run.err;
    auto j = nlohmann::json::parse(run.out);
    EXPECT_EQ(j["kernels"].size(), 4u);
    EXPECT_LT(j["max_abs_error"].get<double>(), 1e-4);
  }
  auto kernel = RunFusetune("kernel --group %1,%6,%7,%8 --recompute %1 " + graph);
  ASSERT_EQ(kernel.exit_code, 0) << kernel.err;
  EXPECT_NE(kernel.out.find("outputs [%8]; recomputes [%1]"), std::string::npos)
      << kernel.out.substr(0, 400);
  // Stored, x - mean would leave the group and come back through the variance: not a kernel.
  auto stored = RunFusetune("kernel --group %1,%6,%7,%8 " + graph);
  EXPECT_NE(stored.exit_code, 0);
  EXPECT_NE(stored.err.find("not convex"), std::string::npos) << stored.err;

  // A node in two groups where one cannot recompute it (the group is not connected): refused,
  // naming the group and why.
  const std::string bad = WriteTempFile(
      "ln_bad.json", R"({"groups":[["%0"],["%1","%2","%3"],["%1","%4","%5"],["%6","%7","%8"]]})");
  auto refused = RunFusetune("run --plan " + bad + " " + graph);
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("group 2 cannot be one kernel: a group that recomputes a value must "
                             "be connected"),
            std::string::npos)
      << refused.err;
}

TEST(RecomputeCli, NoRecomputeNeverHoldsANodeInTwoKernels) {
  const std::string graph = WriteTempFile("ln_ops_tune.relay", kLayerNorm);
  TempDb db("recompute_off");
  auto off = RunFusetune("tune --json --no-recompute --db " + db.path() + kFast + graph);
  ASSERT_EQ(off.exit_code, 0) << off.err;
  std::map<std::string, int> holders;
  const nlohmann::json report = nlohmann::json::parse(off.out);
  for (const auto& region : report["regions"])
    for (const auto& group : region["plan"])
      for (const auto& node : group) ++holders[node.get<std::string>()];
  EXPECT_EQ(holders.size(), 9u);
  for (const auto& [node, count] : holders) EXPECT_EQ(count, 1) << node;
}

}  // namespace
}  // namespace fusetune
