// `tune --no-softmax-rows` / `--no-layer-norm-rows` never put both reductions of a softmax or
// layer norm written op by op in one kernel, and without them the tuned plan does. The tuned
// plans are measurements, so this binary runs alone (SERIAL): beside another test binary's load
// a 1.5x row kernel lost its duel on an AMD Zen 4 (2 of 4 full parallel runs).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/cli/run_command.h"

namespace fusetune {
namespace {

using testing::RunFusetune;
using testing::TempDb;

const std::string kExamples = std::string(FUSETUNE_SOURCE_DIR) + "/examples/";

// Whether a kernel of `example`'s tuned plan (with `flags`) holds both `a` and `b`.
bool OneKernelHoldsBoth(const std::string& example, const std::string& flags, const std::string& a,
                        const std::string& b) {
  TempDb db("norm_rows_" + example.substr(0, 7) + std::to_string(flags.size()));
  // Full timing: with two repeats a loaded core could keep greedy over a kernel 2x faster.
  auto r = RunFusetune("tune --json " + flags + " --db " + db.path() + " " + kExamples + example);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  if (r.exit_code != 0) return false;
  const nlohmann::json report = nlohmann::json::parse(r.out);
  bool both = false;
  for (const auto& region : report["regions"]) {
    for (const auto& group : region["plan"]) {
      int held = 0;
      for (const auto& n : group) held += n == a || n == b;
      both |= held == 2;
    }
  }
  return both;
}

// At the examples' sizes the row kernels win (1.5-3x over the rules' kernels): each flag takes them
// out of the request. The layer norm's runs leave out recomputation, whose plan (2x) a loaded
// core's figures could rank above the row kernel's (2.7x), so the first run could fail for it.
TEST(NormRowsCli, TheirFlagsKeepBothReductionsApart) {
  EXPECT_TRUE(OneKernelHoldsBoth("softmax_decomposed.relay", "", "%0", "%3"));
  EXPECT_FALSE(OneKernelHoldsBoth("softmax_decomposed.relay", "--no-softmax-rows", "%0", "%3"));
  EXPECT_TRUE(OneKernelHoldsBoth("layer_norm_ops.relay", "--no-recompute", "%0", "%3"));
  EXPECT_FALSE(OneKernelHoldsBoth("layer_norm_ops.relay", "--no-recompute --no-layer-norm-rows",
                                  "%0", "%3"));
}

}  // namespace
}  // namespace fusetune
