// The LLaMA block example (examples/llama_block_dyn.relay) end to end: its dynamic lengths all
// follow the sequence, and a plan of the kernels no rule forms there (the RMS norms as row
// kernels, Q/K/V and gate/up as horizontal GEMMs, rotary embeddings with their concatenation as
// one kernel, attention as one kernel) runs at an odd length at 1 and 2 threads, checked against
// the reference interpreter.
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/cli/run_command.h"

namespace fusetune {
namespace {

using testing::RunFusetune;
using testing::WriteTempFile;

const std::string kGraph = std::string(FUSETUNE_SOURCE_DIR) + "/examples/llama_block_dyn.relay";

TEST(LlamaBlockCli, EveryDynamicLengthIsTheSequences) {
  auto check = RunFusetune("check " + kGraph);
  ASSERT_EQ(check.exit_code, 0) << check.err;
  EXPECT_NE(check.out.find("x.0          %x axis 0, %causal axis 0, %causal axis 1, %cos axis 0, "
                           "%sin axis 0"),
            std::string::npos)
      << check.out;
}

TEST(LlamaBlockCli, ItsSearchedKernelsRunAtAnOddLengthAndMatchTheInterpreter) {
  // In the order the kernels run: norm, Q/K/V, rotary q, rotary k, V's heads, attention, heads
  // back, output projection and residual, norm, gate/up with SiLU on the gate, SwiGLU's product
  // read by the down projection with the residual as its epilogue.
  const char* kGroups[] = {
      R"(["%0","%1","%2","%3","%4","%5"])",
      R"(["%6","%9","%12"])",
      R"(["%7","%8","%15","%16","%17","%18","%19","%20","%21"])",
      R"(["%10","%11","%22","%23","%24","%25","%26","%27","%28"])",
      R"(["%13","%14"])",
      R"(["%29","%30","%31","%32","%33"])",
      R"(["%34","%35"])",
      R"(["%36","%37"])",
      R"(["%38","%39","%40","%41","%42","%43"])",
      R"(["%44","%45","%46","%47"])",
      R"(["%48","%49","%50"])",
  };
  std::string groups;
  nlohmann::json want = nlohmann::json::array();
  for (const char* g : kGroups) {
    groups += std::string(groups.empty() ? "" : ",") + R"({"nodes":)" + g + "}";
    want.push_back(nlohmann::json::parse(g));
  }
  const std::string plan = WriteTempFile("llama_plan.json", R"({"groups":[)" + groups + "]}");
  for (int threads : {1, 2}) {
    auto run = RunFusetune("run --json --repeat 2 --dim x.0=37 --threads " +
                           std::to_string(threads) + " --plan " + plan + " " + kGraph);
    ASSERT_EQ(run.exit_code, 0) << run.err;
    auto j = nlohmann::json::parse(run.out);
    EXPECT_EQ(j["groups"], want) << threads << " threads";
    // Random weights make outputs in the thousands: the error is judged against them.
    EXPECT_LT(j["max_abs_error"].get<double>(), 1e-4 * j["max_output_magnitude"].get<double>())
        << threads << " threads";
  }
}

}  // namespace
}  // namespace fusetune
