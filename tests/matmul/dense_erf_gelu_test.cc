// BERT's FFN 1 with the bias and erf-GELU fused as the dense's epilogue, spelled as PyTorch's ONNX
// export spells it (add, divide by sqrt 2, erf, add 1, multiply, multiply by 0.5): the heavy
// epilogue that runs once per tile from the spilled accumulators. Checked against the reference
// interpreter at odd sizes (ragged m and n tiles, one and several k blocks), on the schedules the
// BERT benchmarks use (weights packed at bind or in the call), at 1 and 2 threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "ir/interpreter.h"
#include "ir/matmul_schedule.h"
#include "ir/text/relay_parser.h"
#include "tests/matmul/group_fixture.h"
#include "tests/matmul/weighted_product.h"
#include "worker/codegen/compile.h"

namespace fusetune::codegen {
namespace {

using test::CompiledMaxError;
using test::TheJit;
using test_graphs::WholeGroup;

std::string DenseErfGelu(int64_t m, int64_t k, int64_t n) {
  return fmt::format(
      "fn (%x: Tensor[({}, {}), float32], %w: Tensor[({}, {}), float32], %b: Tensor[({}), "
      "float32]) {{\n  %0 = nn.dense(%x, %w);\n  %1 = add(%0, %b);\n  %2 = divide(%1, "
      "1.41421f);\n  %3 = erf(%2);\n  %4 = add(%3, 1f);\n  %5 = multiply(%1, %4);\n  "
      "multiply(%5, 0.5f)\n}}",
      m, k, n, k, n);
}

// The largest |kernel - reference| relative to the output's largest magnitude, the kernel bound
// (wpack packs the weights here) and run at `threads` over a NaN-poisoned output.
double RelativeError(const Graph& graph, const FusedGroup& group, const Schedule& s, int threads) {
  auto kernel = CompileGroup(graph, group, s, TheJit(), {.threads = threads});
  EXPECT_EQ(kernel->packs_weights_ahead(), s.Get("wpack", 0) == 1) << s.ToString();
  const std::vector<Tensor> values = InterpretAll(graph, RandomInputs(graph, 5));
  const Tensor& want = values[group.outputs[0]];
  double magnitude = 0;
  for (int64_t i = 0; i < want.size(); ++i) magnitude = std::max(magnitude, std::abs(want.Get(i)));
  return CompiledMaxError(graph, group, *kernel, values, threads, /*bind=*/true) /
         std::max(magnitude, 1e-30);
}

TEST(DenseErfGelu, FusedEpilogueAgreesWithReference) {
  // K = 96 is one k block on every schedule below; K = 257 and 300 are several with kc = 64 / 100
  // (a ragged last one); m and n leave ragged tiles.
  const std::tuple<int64_t, int64_t, int64_t> shapes[] = {
      {13, 96, 70}, {37, 257, 150}, {7, 300, 33}};
  const char* schedules[] = {"", "wpack=1", "kc=100,mr=6,nr=64,wpack=1", "kc=64,mr=8,nr=32",
                             "kc=768,mr=6,nr=64,wpack=1"};
  for (auto [m, k, n] : shapes) {
    Graph graph = ParseRelay(DenseErfGelu(m, k, n), "gelu.relay");
    const FusedGroup group = WholeGroup(graph);
    ASSERT_EQ(group.templ, GroupTemplate::kMatmul);
    for (const char* text : schedules) {
      Schedule s = Schedule::Parse(text);
      for (int threads : {1, 2}) {
        // Float accumulation over K plus erf's 4.5e-7: far inside the service's 1e-4.
        EXPECT_LE(RelativeError(graph, group, s, threads), 2e-6)
            << m << "x" << k << "x" << n << " schedule '" << text << "' threads " << threads;
      }
    }
  }
}

}  // namespace
}  // namespace fusetune::codegen
