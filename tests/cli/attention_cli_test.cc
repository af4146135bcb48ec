// Attention groups end to end: a plan file naming batch_matmul, scale, mask, softmax and
// batch_matmul as one kernel runs through `fusetune run --plan FILE` (compiled, checked against
// the reference interpreter) at 1 and 2 threads; `kernel` shows its LLVM IR; `tune
// --no-attention` never puts both products in one kernel.
#include <fstream>

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

// Sizes that are not multiples of 16 or of the key block.
const char* kAttention =
    R"(fn (%q: Tensor[(3, 37, 24), float32], %k: Tensor[(3, 45, 24), float32],
    %vt: Tensor[(3, 20, 45), float32], %mask: Tensor[(1, 37, 45), float32]) {
  %0 = nn.batch_matmul(%q, %k);
  %1 = multiply(%0, 0.2f);
  %2 = add(%1, %mask);
  %3 = nn.softmax(%2, axis=-1);
  nn.batch_matmul(%3, %vt)
}
)";

TEST(AttentionCli, APlanFileWithAnAttentionGroupRunsAndIsChecked) {
  const std::string graph = WriteTempFile("attn.relay", kAttention);
  const std::string plan = WriteTempFile(
      "attn_plan.json",
      R"({"groups":[{"nodes":["%0","%1","%2","%3","%4"],"schedule":"k_block=16,rows=3"}]})");
  for (int threads : {1, 2}) {
    auto run = RunPlanFile(plan, graph, threads);
    ASSERT_EQ(run.exit_code, 0) << run.err;
    auto j = nlohmann::json::parse(run.out);
    EXPECT_EQ(j["groups"], nlohmann::json::parse(R"([["%0","%1","%2","%3","%4"]])"));
    ASSERT_EQ(j["kernels"].size(), 1u);
    EXPECT_LT(j["max_abs_error"].get<double>(), 1e-4);
  }
  auto kernel = RunFusetune("kernel --print-llvm --group %0,%1,%2,%3,%4 " + graph);
  ASSERT_EQ(kernel.exit_code, 0) << kernel.err;
  EXPECT_NE(kernel.out.find("template attention"), std::string::npos) << kernel.out.substr(0, 400);

  // A knob the template does not accept is refused, naming it.
  const std::string bad =
      WriteTempFile("attn_bad.json",
                    R"({"groups":[{"nodes":["%0","%1","%2","%3","%4"],"schedule":"k_block=24"}]})");
  auto refused = RunFusetune("run --plan " + bad + " " + graph);
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("k_block"), std::string::npos) << refused.err;
}

// The templates that emit LLVM IR directly (attention, matmul) check a schedule in `kernel`'s
// default view too, not only with --print-llvm: a bad knob exits 2 naming it, printing nothing.
TEST(AttentionCli, TheKernelViewRefusesAKnobItsTemplateLacks) {
  const std::string graph = WriteTempFile("attn_view.relay", kAttention);
  struct Case {
    const char* group;
    const char* schedule;
    const char* named;
  };
  for (const Case& c : {Case{"%0,%1,%2,%3,%4", "k_block=24", "k_block"},
                        Case{"%0,%1,%2,%3,%4", "online=1,blocked=1", "blocked=1"},
                        Case{"%0", "k_block=16", "k_block"}}) {
    auto shown = RunFusetune(std::string("kernel --group ") + c.group + " --schedule " +
                             c.schedule + " " + graph);
    EXPECT_EQ(shown.exit_code, 2) << c.schedule;
    EXPECT_NE(shown.err.find(c.named), std::string::npos) << shown.err;
    EXPECT_EQ(shown.out, "") << c.schedule;
  }
  auto good = RunFusetune("kernel --group %0,%1,%2,%3,%4 --schedule k_block=16 " + graph);
  ASSERT_EQ(good.exit_code, 0) << good.err;
  EXPECT_NE(good.out.find("// schedule 'k_block=16'"), std::string::npos) << good.out;
  EXPECT_NE(good.out.find("//   online=1\n"), std::string::npos) << good.out;
}

// The GPT-2 block example: its scores get a leading 1 for the causal mask (expand_dims), the
// softmax is over that rank-4 tensor, P loses it again (squeeze); the whole chain is one attention
// kernel, and the mask's lengths are the sequence's.
TEST(AttentionCli, TheGpt2BlockExampleHasOneAttentionKernel) {
  const std::string graph = std::string(FUSETUNE_SOURCE_DIR) + "/examples/gpt2_block_dyn.relay";
  auto check = RunFusetune("check " + graph);
  ASSERT_EQ(check.exit_code, 0) << check.err;
  EXPECT_NE(check.out.find("x.0          %x axis 0, %causal axis 2, %causal axis 3"),
            std::string::npos)
      << check.out;
  auto kernel =
      RunFusetune("kernel --print-llvm --dim x.0=37 --group %12,%13,%14,%15,%16,%17,%18 " + graph);
  ASSERT_EQ(kernel.exit_code, 0) << kernel.err;
  EXPECT_NE(kernel.out.find("template attention"), std::string::npos) << kernel.out.substr(0, 400);
}

TEST(AttentionCli, NoAttentionNeverPutsBothProductsInOneKernel) {
  TempDb db("attention_cli");
  const std::string graph = WriteTempFile("attn_tune.relay", kAttention);
  auto tune = RunFusetune("tune --local --json --no-attention --db " + db.path() + kFast + graph);
  ASSERT_EQ(tune.exit_code, 0) << tune.err;
  auto j = nlohmann::json::parse(tune.out);
  for (const auto& region : j["regions"]) {
    for (const auto& group : region["plan"]) {
      int products = 0;
      for (const auto& n : group) products += n == "%0" || n == "%4";
      EXPECT_LE(products, 1) << group;
    }
  }
  EXPECT_LT(j["max_abs_error"].get<double>(), 1e-4);
}

}  // namespace
}  // namespace fusetune
