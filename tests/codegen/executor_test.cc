// The plan executor runs whole graphs under the unfused and greedy plans and agrees with the
// interpreter; the timing harness reports sane statistics; `fusetune run --json` has the shape
// of issue 3 §6, with its start-up.
#include <algorithm>
#include <array>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "group_check_util.h"
#include "ir/error.h"
#include "ir/interpreter.h"
#include "ir/plan.h"
#include "worker/codegen/jit.h"
#include "worker/executor.h"
#include "worker/output_check.h"
#include "worker/timing.h"

namespace fusetune::testing {
namespace {

const char* kSeed =
    "fn (%x: Tensor[(2, 32, 16), float32], %y: Tensor[(2, 32, 16), float32], %z: Tensor[(2, 32, "
    "32), float32]) {\n"
    "  %0 = nn.batch_matmul(%x, %y);\n  %1 = ones_like(%0);\n  where(%z, %0, %1)\n}";

const char* kBlock =
    "fn (%x: Tensor[(6, 40), float32], %w: Tensor[(24, 40), float32], %b: Tensor[(24), float32], "
    "%g: Tensor[(24), float32]) {\n"
    "  %0 = nn.dense(%x, %w);\n  %1 = nn.bias_add(%0, %b);\n  %2 = tanh(%1);\n  %3 = "
    "nn.softmax(%2);\n"
    "  %4 = nn.layer_norm(%3, %g, %b);\n  %5 = sum(%4, axis=[1]);\n  (%2, %5)\n}";

TEST(Executor, PlansAgreeWithInterpreter) {
  for (const char* text : {kSeed, kBlock}) {
    Graph graph = ParseGraph(text);
    std::vector<Tensor> inputs = RandomInputs(graph, 3);
    std::vector<Tensor> want = Interpret(graph, inputs);
    codegen::Jit jit;
    for (const Plan& plan : {UnfusedPlan(graph), GreedyPlan(graph)}) {
      for (int threads : {1, 2}) {
        PlanExecutor executor(graph, plan, jit, threads);
        EXPECT_EQ(executor.num_kernels(), static_cast<int>(plan.groups.size()));
        // The block's four values between kernels (%0, %1, %3, %4) take turns in two blocks.
        if (text == kBlock && plan.name == UnfusedPlan(graph).name) {
          EXPECT_EQ(executor.num_shared_blocks(), 2);
        }
        executor.SetInputs(inputs);
        executor.Run();
        EXPECT_LT(CompareOutputs(executor.Outputs(), want).max_abs_error, 1e-4)
            << plan.name << " at " << threads << " threads";
        TimingOptions quick;
        quick.warmup = 1;
        quick.repeat = 3;
        quick.min_repeat_ms = 1;
        PlanProfile timing = executor.Measure(quick);
        ASSERT_EQ(timing.kernels.size(), plan.groups.size());
        for (const KernelTiming& k : timing.kernels) EXPECT_GT(k.timing.median_us, 0.0);
        EXPECT_GT(timing.total.median_us, 0.0);
      }
    }
  }
}

// Two plans of one graph writing into the same output tensors (how `run --against` and a job's
// plans are timed): the second's results land in the first's tensors, and each plan's own run
// still gives the reference's values.
TEST(Executor, APlanWritesIntoAnotherPlansOutputs) {
  Graph graph = ParseGraph(kBlock);
  std::vector<Tensor> inputs = RandomInputs(graph, 5);
  const std::vector<Tensor> want = Interpret(graph, inputs);
  codegen::Jit jit;
  PlanExecutor first(graph, GreedyPlan(graph), jit, 1);
  PlanExecutor second(graph, UnfusedPlan(graph), jit, 1);
  const std::vector<Tensor> buffers = first.OutputBuffers();
  ASSERT_EQ(buffers.size(), 2u);
  second.UseOutputs(buffers);
  first.SetInputs(inputs);
  second.SetInputs(inputs);
  for (Tensor t : buffers) std::fill_n(t.as<float>(), t.size(), -1.0f);  // shares storage
  second.Run();
  // Only the second ran: the first's tensors hold its results.
  EXPECT_LT(CompareOutputs(first.Outputs(), want).max_abs_error, 1e-4);
  EXPECT_EQ(second.OutputBuffers()[0].data(), buffers[0].data());
  EXPECT_EQ(second.OutputBuffers()[1].data(), buffers[1].data());
  first.Run();
  EXPECT_LT(CompareOutputs(second.Outputs(), want).max_abs_error, 1e-4);
}

TEST(Executor, RejectsWrongInputs) {
  Graph graph = ParseGraph(kSeed);
  codegen::Jit jit;
  PlanExecutor executor(graph, UnfusedPlan(graph), jit, 1);
  std::vector<Tensor> inputs = RandomInputs(graph, 1);
  inputs.pop_back();
  EXPECT_THROW(executor.SetInputs(inputs), UserError);
}

TEST(Timing, GrowsNumberAndReportsOrderedStatistics) {
  int calls = 0;
  TimingOptions options;
  options.warmup = 1;
  options.repeat = 5;
  options.min_repeat_ms = 5;
  // A 20 us busy call (sleeping would measure the scheduler's timer slack instead).
  auto busy = [&] {
    ++calls;
    auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(20);
    while (std::chrono::steady_clock::now() < until) {
    }
  };
  Timing t = TimeCalls(busy, options);
  EXPECT_GT(t.number, 1);  // a 20 us call needs many per 5 ms repeat
  EXPECT_EQ(t.repeat, 5);
  EXPECT_EQ(t.samples_us.size(), 5u);
  EXPECT_LE(t.min_us, t.median_us);
  EXPECT_GE(t.min_us, 20.0);
  EXPECT_GE(calls, 1 + 5 * t.number);
}

// `fusetune run TEXT --plan greedy --threads 2 --json ARGS` on `text` written to `name`: its
// output.
void RunJson(const std::string& name, const std::string& text, const std::string& args,
             std::string& out) {
  const std::string path = ::testing::TempDir() + "/" + name;
  {
    FILE* f = std::fopen(path.c_str(), "w");
    std::fputs(text.c_str(), f);
    std::fclose(f);
  }
  const std::string cmd =
      std::string(FUSETUNE_BINARY) + " run " + path + " --plan greedy --threads 2 --json " + args;
  FILE* pipe = popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::array<char, 4096> buf;
  while (size_t n = fread(buf.data(), 1, buf.size(), pipe)) out.append(buf.data(), n);
  ASSERT_EQ(pclose(pipe), 0) << out;
}

TEST(RunCommand, JsonShape) {
  std::string out;
  ASSERT_NO_FATAL_FAILURE(RunJson("seed.relay", kSeed, "--repeat 2", out));
  auto j = nlohmann::ordered_json::parse(out);
  std::vector<std::string> keys;
  for (auto& [k, v] : j.items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{
                      "graph", "plan", "threads", "target", "groups", "kernels", "kernel_times",
                      "total_us", "total_repeats_us", "matmul_gflop", "max_abs_error",
                      "max_output_magnitude", "within_rounding_spread", "startup",
                      "fma_peak_gflops", "matmul_fraction_of_peak"}));
  EXPECT_EQ(j["kernel_times"], "alone");
  EXPECT_EQ(j["plan"], "greedy");
  EXPECT_EQ(j["threads"], 2);
  EXPECT_EQ(j["groups"], nlohmann::ordered_json::parse(R"([["%0", "%1", "%2"]])"));
  EXPECT_EQ(j["kernels"][0]["nodes"], j["groups"][0]);
  EXPECT_GT(j["kernels"][0]["us"].get<double>(), 0.0);
  EXPECT_GE(j["kernels"][0]["calls_per_repeat"].get<int>(), 1);
  EXPECT_GT(j["kernels"][0]["compile_ms"].get<double>(), 0.0);
  EXPECT_EQ(j["kernels"][0]["shared"], false);
  EXPECT_LT(j["max_abs_error"].get<double>(), 1e-4);
  EXPECT_EQ(j["within_rounding_spread"], false) << "the plain tolerance decided";
  // The start-up: its parts add up to the time to the first output; one kernel compiled.
  const auto& startup = j["startup"];
  double parts = 0;
  for (const char* part : {"load_ms", "plan_ms", "compile_ms", "bind_ms", "first_run_ms"}) {
    EXPECT_GE(startup[part].get<double>(), 0.0) << part;
    parts += startup[part].get<double>();
  }
  EXPECT_NEAR(startup["first_output_ms"].get<double>(), parts, 0.01);
  EXPECT_GT(startup["compile_ms"].get<double>(), 0.0);
  EXPECT_EQ(startup["kernels_compiled"], 1);
  EXPECT_GE(startup["compile_threads"].get<int>(), 1);
}

// Three layers alike with weights of their own, declared first as Relay text does (so the first
// layer's arguments are in another order): one kernel compiled, the others shown as sharing it,
// the outputs the interpreter's.
TEST(RunCommand, IdenticalLayersCompileOnce) {
  std::string text = "fn (%x: Tensor[(5, 32), float32]";
  for (int l = 0; l < 3; ++l)
    text += fmt::format(", %w{0}: Tensor[(32, 32), float32], %b{0}: Tensor[(32), float32]", l);
  text += ") {\n  %0 = nn.dense(%x, %w0);\n  %1 = nn.bias_add(%0, %b0);\n  %2 = tanh(%1);\n";
  text += "  %3 = nn.dense(%2, %w1);\n  %4 = nn.bias_add(%3, %b1);\n  %5 = tanh(%4);\n";
  text += "  %6 = nn.dense(%5, %w2);\n  %7 = nn.bias_add(%6, %b2);\n  tanh(%7)\n}";
  std::string out;
  ASSERT_NO_FATAL_FAILURE(RunJson("layers.relay", text, "--repeat 1", out));
  auto j = nlohmann::ordered_json::parse(out);
  ASSERT_EQ(j["kernels"].size(), 3u) << out;
  EXPECT_EQ(j["startup"]["kernels_compiled"], 1);
  EXPECT_EQ(j["kernels"][0]["shared"], false);
  EXPECT_GT(j["kernels"][0]["compile_ms"].get<double>(), 0.0);
  for (int k : {1, 2}) {
    EXPECT_EQ(j["kernels"][k]["shared"], true) << k;
    EXPECT_EQ(j["kernels"][k]["compile_ms"].get<double>(), 0.0) << k;
  }
  EXPECT_LT(j["max_abs_error"].get<double>(), 1e-4);
}

}  // namespace
}  // namespace fusetune::testing
