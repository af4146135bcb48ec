// Softmaxes and layer norms written op by op end to end: a plan file holding one as one kernel
// (with a layer norm's scale and shift) runs through `fusetune run` (compiled and checked
// against the reference interpreter) at 1 and 2 threads and `kernel` names its row kernel
// (`tune`'s flags that take them out: norm_rows_flags_serial_test.cc).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/cli/run_command.h"

namespace fusetune {
namespace {

using testing::RunFusetune;
using testing::RunPlanFile;
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

// As TVM imports a PyTorch export at opset 14.
const char* kLayerNorm =
    R"(fn (%x: Tensor[(6, 45), float32], %g: Tensor[(45), float32], %b: Tensor[(45), float32]) {
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

// Runs `plan_groups` (one group) at 1 and 2 threads and returns `kernel`'s view of it.
std::string RunsAsOneCheckedKernel(const std::string& name, const char* relay,
                                   const std::string& nodes) {
  const std::string graph = WriteTempFile(name + ".relay", relay);
  std::string json_nodes;
  for (size_t at = 0; at < nodes.size();) {
    const size_t comma = std::min(nodes.find(',', at), nodes.size());
    json_nodes += (json_nodes.empty() ? "\"" : ",\"") + nodes.substr(at, comma - at) + "\"";
    at = comma + 1;
  }
  const std::string plan =
      WriteTempFile(name + "_plan.json", R"({"groups":[{"nodes":[)" + json_nodes + "]}]}");
  for (int threads : {1, 2}) {
    auto run = RunPlanFile(plan, graph, threads);
    EXPECT_EQ(run.exit_code, 0) << run.err;
    if (run.exit_code != 0) return "";
    auto j = nlohmann::json::parse(run.out);
    EXPECT_EQ(j["kernels"].size(), 1u);
    EXPECT_LT(j["max_abs_error"].get<double>(), 1e-5);
  }
  auto kernel = RunFusetune("kernel --group " + nodes + " " + graph);
  EXPECT_EQ(kernel.exit_code, 0) << kernel.err;
  return kernel.out;
}

TEST(NormRowsCli, ASoftmaxAsOneKernelRunsAndIsChecked) {
  const std::string kernel = RunsAsOneCheckedKernel("softmax_rows", kSoftmax, "%0,%1,%2,%3,%4,%5");
  EXPECT_NE(kernel.find("template composite; anchor %5"), std::string::npos) << kernel;
}

TEST(NormRowsCli, ALayerNormWithItsScaleAndShiftAsOneKernelRunsAndIsChecked) {
  const std::string kernel =
      RunsAsOneCheckedKernel("layer_norm_rows", kLayerNorm, "%0,%1,%2,%3,%4,%5,%6,%7,%8");
  EXPECT_NE(kernel.find("template composite; anchor %6"), std::string::npos) << kernel;
  EXPECT_NE(kernel.find("online=1"), std::string::npos) << "one pass is in its space\n" << kernel;
}

}  // namespace
}  // namespace fusetune
