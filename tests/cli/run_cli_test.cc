// `fusetune run --in-sequence`: the per-kernel figures of a plan read between its kernels during
// the whole's own repeats, instead of each kernel timed alone.
#include <algorithm>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "run_command.h"

namespace fusetune {
namespace {

using testing::RunFusetune;

TEST(RunCli, InSequenceKernelFiguresAddUpToTheWhole) {
  const std::string graph = testing::WriteTempFile("in_sequence.relay", R"(
fn (%x: Tensor[(64, 256), float32], %w: Tensor[(256, 256), float32], %v: Tensor[(64, 256), float32]) {
  %0 = nn.dense(%x, %w, units=256);
  %1 = multiply(%0, 2f);
  %2 = nn.softmax(%1, axis=-1);
  nn.dense(%2, %v, units=64)
})");
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

}  // namespace
}  // namespace fusetune
