// Horizontal groups end to end: a plan file naming sibling denses as one kernel runs through
// `fusetune run --plan FILE` (compiled, checked against the reference interpreter); a group that
// is not connected and not siblings is refused with the reason; `tune --no-horizontal` never
// puts two denses in one kernel.
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/cli/run_command.h"

namespace fusetune {
namespace {

using testing::kFast;
using testing::RunFusetune;
using testing::TempDb;
using testing::WriteTempFile;

// Widths that are not multiples of 16, so parts meet inside a register tile's padding.
const char* kQkv =
    R"(fn (%x: Tensor[(20, 48), float32], %wq: Tensor[(40, 48), float32], %bq: Tensor[(40,), float32],
    %wk: Tensor[(40, 48), float32], %bk: Tensor[(40,), float32], %wv: Tensor[(24, 48), float32]) {
  %0 = nn.dense(%x, %wq);
  %1 = add(%0, %bq);
  %2 = nn.dense(%x, %wk);
  %3 = add(%2, %bk);
  %4 = nn.dense(%x, %wv);
  (%1, %3, %4)
}
)";

TEST(HorizontalCli, APlanFileWithAHorizontalGroupRunsAndIsChecked) {
  const std::string graph = WriteTempFile("qkv.relay", kQkv);
  const std::string plan = WriteTempFile(
      "qkv_plan.json", R"({"groups":[{"nodes":["%0","%1","%2","%3","%4"],"schedule":""}]})");
  auto run = testing::RunPlanFile(plan, graph, 2);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto j = nlohmann::json::parse(run.out);
  EXPECT_EQ(j["groups"], nlohmann::json::parse(R"([["%0","%1","%2","%3","%4"]])"));
  ASSERT_EQ(j["kernels"].size(), 1u);
  EXPECT_LT(j["max_abs_error"].get<double>(), 1e-4);

  // Two adds that share no edge are not siblings: refused, saying why.
  const std::string bad = WriteTempFile(
      "qkv_bad.json",
      R"({"groups":[{"nodes":["%0"]},{"nodes":["%1","%3"]},{"nodes":["%2"]},{"nodes":["%4"]}]})");
  auto refused = RunFusetune("run --plan " + bad + " " + graph);
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("not connected"), std::string::npos) << refused.err;
}

TEST(HorizontalCli, NoHorizontalNeverPutsTwoDensesInOneKernel) {
  TempDb db("horizontal_cli");
  const std::string graph = WriteTempFile("qkv_tune.relay", kQkv);
  auto tune = RunFusetune("tune --local --json --no-horizontal --db " + db.path() + kFast + graph);
  ASSERT_EQ(tune.exit_code, 0) << tune.err;
  auto j = nlohmann::json::parse(tune.out);
  for (const auto& region : j["regions"]) {
    for (const auto& group : region["plan"]) {
      int denses = 0;
      for (const auto& n : group) denses += n == "%0" || n == "%2" || n == "%4";
      EXPECT_LE(denses, 1) << group;
    }
  }
}

}  // namespace
}  // namespace fusetune
