// `fusetune run --in-sequence`: the per-kernel figures of a plan read between its kernels during
// the whole's own repeats, instead of each kernel timed alone. The graph's matmuls set against
// the FMA peak. `run --against`: a second plan checked and timed against the first in paired
// rounds.
#include <algorithm>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "run_command.h"

namespace fusetune {
namespace {

using testing::RunFusetune;

const char* kDenseSoftmaxDense = R"(
fn (%x: Tensor[(64, 256), float32], %w: Tensor[(256, 256), float32], %v: Tensor[(64, 256), float32]) {
  %0 = nn.dense(%x, %w, units=256);
  %1 = multiply(%0, 2f);
  %2 = nn.softmax(%1, axis=-1);
  nn.dense(%2, %v, units=64)
})";

TEST(RunCli, InSequenceKernelFiguresAddUpToTheWhole) {
  const std::string graph = testing::WriteTempFile("in_sequence.relay", kDenseSoftmaxDense);
  auto seq = RunFusetune("run --json --repeat 5 --plan unfused --in-sequence " + graph);
  ASSERT_EQ(seq.exit_code, 0) << seq.err;
  const nlohmann::json j = nlohmann::json::parse(seq.out);
  EXPECT_EQ(j["kernel_times"], "in sequence");
  ASSERT_EQ(j["kernels"].size(), 4u);
  double sum = 0;
  for (const auto& k : j["kernels"]) {
    EXPECT_GT(k["us"].get<double>(), 0.0);
    // Every kernel's figure comes from the whole's repeats, so from as many calls.
    EXPECT_EQ(k["calls_per_repeat"], j["kernels"][0]["calls_per_repeat"]);
    sum += k["us"].get<double>();
  }
  // Read from the whole's repeats, the kernels' medians add up to about the whole's median.
  const double total = j["total_us"].get<double>();
  EXPECT_GT(sum, 0.8 * total);
  EXPECT_LT(sum, 1.1 * total);
  // Each repeat's figure, for scripts that want the spread: five, with the median among them.
  const auto repeats = j["total_repeats_us"].get<std::vector<double>>();
  ASSERT_EQ(repeats.size(), 5u);
  EXPECT_LE(*std::min_element(repeats.begin(), repeats.end()), total);
  EXPECT_GE(*std::max_element(repeats.begin(), repeats.end()), total);
  // The error comes with the size of the outputs it was measured on.
  EXPECT_LE(j["max_abs_error"].get<double>(), 1e-4 * j["max_output_magnitude"].get<double>());
  EXPECT_GT(j["max_output_magnitude"].get<double>(), 0.0);

  auto alone = RunFusetune("run --json --repeat 1 --plan unfused " + graph);
  ASSERT_EQ(alone.exit_code, 0) << alone.err;
  const nlohmann::json a = nlohmann::json::parse(alone.out);
  EXPECT_EQ(a["kernel_times"], "alone");
  // Alone, each kernel's repeat grows to the repeat length on its own: the scaling multiply makes
  // more calls than the dense before it.
  EXPECT_GT(a["kernels"][1]["calls_per_repeat"].get<int>(),
            a["kernels"][0]["calls_per_repeat"].get<int>());
  auto text = RunFusetune("run --repeat 1 --plan unfused --in-sequence " + graph);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("in sequence us"), std::string::npos) << text.out;
}

TEST(RunCli, SetsTheMatmulsAgainstTheFmaPeak) {
  const std::string graph = testing::WriteTempFile("peak.relay", kDenseSoftmaxDense);
  auto run = RunFusetune("run --json --repeat 3 " + graph);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json j = nlohmann::json::parse(run.out);
  // 2·M·N·K of each dense: 64 x 256 by 256 x 256, then 64 x 256 by 64 x 256.
  EXPECT_DOUBLE_EQ(j["matmul_gflop"].get<double>(),
                   (2.0 * 64 * 256 * 256 + 2.0 * 64 * 64 * 256) / 1e9);
  const double peak = j["fma_peak_gflops"].get<double>();
  EXPECT_GT(peak, 0.0);
  // The whole plan's fastest repeat against the peak's fastest call.
  const auto repeats = j["total_repeats_us"].get<std::vector<double>>();
  const double fastest = *std::min_element(repeats.begin(), repeats.end());
  EXPECT_NEAR(j["matmul_fraction_of_peak"].get<double>(),
              j["matmul_gflop"].get<double>() * 1e6 / fastest / peak, 1e-9);
  auto text = RunFusetune("run --repeat 1 " + graph);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("of the FMA peak of 1 thread"), std::string::npos) << text.out;

  // No matmul, no peak: nothing to set against it.
  const std::string no_matmul =
      testing::WriteTempFile("no_matmul.relay", "fn (%x: Tensor[(100, 120), float32]) { exp(%x) }");
  auto none = RunFusetune("run --json --repeat 1 " + no_matmul);
  ASSERT_EQ(none.exit_code, 0) << none.err;
  const nlohmann::json n = nlohmann::json::parse(none.out);
  EXPECT_EQ(n["matmul_gflop"], 0.0);
  EXPECT_FALSE(n.contains("fma_peak_gflops"));
  EXPECT_FALSE(n.contains("matmul_fraction_of_peak"));
  auto none_text = RunFusetune("run --repeat 1 " + no_matmul);
  EXPECT_EQ(none_text.out.find("FMA peak"), std::string::npos) << none_text.out;
}

TEST(RunCli, AgainstTimesASecondPlanInPairedRounds) {
  const std::string graph = testing::WriteTempFile("against.relay", kDenseSoftmaxDense);
  auto run =
      RunFusetune("run --json --repeat 2 --plan greedy --against unfused --rounds 3 " + graph);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json j = nlohmann::json::parse(run.out);
  const nlohmann::json& a = j.at("against");
  EXPECT_EQ(a["plan"], "unfused");
  EXPECT_EQ(a["kernels"], 4) << "one kernel per op";
  ASSERT_EQ(a["groups"].size(), 4u);
  EXPECT_EQ(a["groups"][0], nlohmann::json::parse(R"(["%0"])"));
  EXPECT_LE(a["max_abs_error"].get<double>(), 1e-4 * j["max_output_magnitude"].get<double>());
  ASSERT_EQ(a["rounds"].size(), 3u);
  std::vector<double> ratios;
  int faster = 0;
  for (const auto& r : a["rounds"]) {
    const double plan = r["plan_us"].get<double>(), against = r["against_us"].get<double>();
    EXPECT_GT(plan, 0.0);
    EXPECT_GT(against, 0.0);
    ratios.push_back(plan / against);
    faster += plan < against;
  }
  std::sort(ratios.begin(), ratios.end());
  EXPECT_DOUBLE_EQ(a["ratio_median"].get<double>(), ratios[1]);
  EXPECT_EQ(a["plan_faster_rounds"], faster);
  // One-sided for whichever side won more of 3: 2 of 3 (p = 0.5) or 3 of 3 (p = 0.125).
  EXPECT_DOUBLE_EQ(a["sign_test_p"].get<double>(), faster == 0 || faster == 3 ? 0.125 : 0.5);

  auto text = RunFusetune("run --repeat 1 --plan greedy --against greedy --rounds 1 " + graph);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("plan / against"), std::string::npos) << text.out;
}

TEST(RunCli, AgainstNamesWhatIsWrongWithIt) {
  const std::string graph = testing::WriteTempFile("against_bad.relay", kDenseSoftmaxDense);
  auto missing = RunFusetune("run --plan greedy --against /nonexistent/plan.json " + graph);
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find(
                "--against '/nonexistent/plan.json' is not unfused, greedy, tuned or a readable "
                "plan file"),
            std::string::npos)
      << missing.err;
  auto rounds = RunFusetune("run --plan greedy --against unfused --rounds 0 " + graph);
  EXPECT_NE(rounds.exit_code, 0);
  EXPECT_NE(rounds.err.find("--rounds must be at least 1"), std::string::npos) << rounds.err;
}

}  // namespace
}  // namespace fusetune
