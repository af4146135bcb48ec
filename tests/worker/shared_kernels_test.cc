// A plan whose groups repeat (a deep model's identical layers) compiles one kernel per distinct
// group, shared by the groups (whatever order their inputs were numbered in), and still gives the
// reference interpreter's outputs although each layer has weights of its own: each group binds the
// shared kernel to its own buffers, and with
// wpack (weights packed at bind time) keeps its own packed copy. A group whose B another kernel
// computes is another kernel under wpack, never the weights' one. Compiling on several threads
// gives the same kernels and the same first error.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ir/error.h"
#include "ir/fusion.h"
#include "ir/graph.h"
#include "ir/interpreter.h"
#include "ir/plan.h"
#include "worker/codegen/jit.h"
#include "worker/executor.h"
#include "worker/output_check.h"

namespace fusetune {
namespace {

TensorType F32(Shape shape) { return TensorType{DType::kFloat32, std::move(shape)}; }

// `layers` layers of tanh(x · W_lᵀ + b_l) * 0.5, as ONNX imports nn.Linear: W_l and b_l are
// parameters with data (initialisers), different in every layer, each declared where its layer
// starts, with the layer's own constant. With `computed_w` at layer `computed_w`, that layer's W
// is exp(W') instead: computed by the graph, not a weight. With `declared_first`, as in Relay
// text: every weight and one constant shared by all layers are declared before any node, so the
// first layer's kernel arguments (in ValueId order) are in another order than the others'.
Graph Stack(int layers, int computed_w = -1, bool declared_first = false) {
  const int64_t n = 24, k = 24, m = 7;
  GraphBuilder b;
  ValueId h = b.AddParam("x", F32({m, k}));
  std::vector<ValueId> ws, biases, halves;
  auto declare = [&](int l) {
    ws.push_back(b.AddParamWithData("w" + std::to_string(l),
                                    Tensor::Random(F32({n, k}), static_cast<uint64_t>(100 + l))));
    biases.push_back(b.AddParamWithData("b" + std::to_string(l),
                                        Tensor::Random(F32({n}), static_cast<uint64_t>(200 + l))));
    if (!declared_first || l == 0)
      halves.push_back(b.AddConst(Tensor::Scalar(DType::kFloat32, 0.5)));
  };
  if (declared_first)
    for (int l = 0; l < layers; ++l) declare(l);
  for (int l = 0; l < layers; ++l) {
    if (!declared_first) declare(l);
    ValueId w = ws[l];
    if (l == computed_w) w = b.AddNode("exp", {w}, Attrs{});
    h = b.AddNode("nn.dense", {h, w}, Attrs{});
    h = b.AddNode("nn.bias_add", {h, biases[l]}, Attrs({{"axis", int64_t{-1}}}));
    h = b.AddNode("tanh", {h}, Attrs{});
    h = b.AddNode("multiply", {h, halves[declared_first ? 0 : l]}, Attrs{});
  }
  b.SetOutputs({h}, false);
  return std::move(b).Build();
}

// `plan` with wpack=1 on every group with a dense in it.
Plan WithWpack(const Graph& graph, Plan plan) {
  for (PlanGroup& g : plan.groups)
    for (ValueId v : g.nodes)
      if (graph.value(v).op->name == "nn.dense") g.schedule.Set("wpack", 1);
  return plan;
}

// Runs `plan` and checks it against the interpreter, twice (new inputs rebind the kernels);
// returns the kernels compiled.
int RunAndCheck(const Graph& graph, const Plan& plan, int threads, int compile_threads) {
  static codegen::Jit jit;
  PlanExecutor executor(graph, plan, jit, threads, nullptr, compile_threads);
  EXPECT_EQ(executor.num_kernels(), static_cast<int>(plan.groups.size()));
  for (uint64_t seed : {1, 2}) {
    std::vector<Tensor> inputs = RandomInputs(graph, seed);
    executor.SetInputs(inputs);
    executor.Run();
    OutputComparison check = CompareOutputs(executor.Outputs(), Interpret(graph, inputs));
    EXPECT_TRUE(check.ok()) << plan.name << " at " << threads << " threads, " << compile_threads
                            << " compiling, seed " << seed << ": error " << check.max_abs_error;
  }
  return executor.num_compiled();
}

TEST(SharedKernels, OneKernelPerDistinctGroupWithEachLayersWeights) {
  const Graph graph = Stack(4);
  const Plan greedy = GreedyPlan(graph);
  ASSERT_EQ(greedy.groups.size(), 4u);  // dense + bias + tanh + multiply per layer
  const Plan unfused = UnfusedPlan(graph);
  for (int threads : {1, 2}) {
    for (int compile_threads : {1, 2}) {
      // The first layer reads the graph's input, the others a kernel's output: one kernel still.
      EXPECT_EQ(RunAndCheck(graph, greedy, threads, compile_threads), 1);
      EXPECT_EQ(RunAndCheck(graph, unfused, threads, compile_threads), 4);
      // Packed at bind time: one kernel, four packed copies (one per layer's W).
      EXPECT_EQ(RunAndCheck(graph, WithWpack(graph, greedy), threads, compile_threads), 1);
      EXPECT_EQ(RunAndCheck(graph, WithWpack(graph, unfused), threads, compile_threads), 4);
    }
  }
}

TEST(SharedKernels, ArgumentsInAnotherOrderStillShare) {
  // Declared first, the first layer's arguments are (x, w0, b0, 0.5), the others' (0.5, w, b, h):
  // the kernel compiled for the first serves them all, each group's buffers in its order.
  const Graph graph = Stack(4, -1, /*declared_first=*/true);
  const Plan greedy = GreedyPlan(graph);
  ASSERT_EQ(greedy.groups.size(), 4u);
  for (int threads : {1, 2}) {
    EXPECT_EQ(RunAndCheck(graph, greedy, threads, 2), 1);
    EXPECT_EQ(RunAndCheck(graph, UnfusedPlan(graph), threads, 2), 4);
    EXPECT_EQ(RunAndCheck(graph, WithWpack(graph, greedy), threads, 2), 1);
  }
}

TEST(SharedKernels, ComputedWeightsAreAnotherKernelUnderWpack) {
  // Layer 2's W is computed by another kernel: packed at bind time it would be stale (the bind
  // precedes the kernel computing it), so its dense is a kernel of its own that packs per call.
  const Graph graph = Stack(4, /*computed_w=*/2);
  const Plan unfused = UnfusedPlan(graph);  // exp, then per layer dense, bias_add, tanh, multiply
  ASSERT_EQ(unfused.groups.size(), 17u);
  EXPECT_EQ(RunAndCheck(graph, unfused, 1, 2), 5);
  EXPECT_EQ(RunAndCheck(graph, WithWpack(graph, unfused), 1, 2), 6);
}

TEST(SharedKernels, ParallelCompileReportsTheFirstRefusalInPlanOrder) {
  // Every layer's dense fused with the exp computing its W, under wpack: refused (wpack needs B
  // to be a kernel input), each with its own node named; the error is the first group's. The
  // layers' widths differ, so the three are distinct kernels, compiled at once.
  GraphBuilder b;
  int64_t width = 24;
  ValueId h = b.AddParam("x", F32({7, width}));
  for (int l = 0; l < 3; ++l) {
    const int64_t next = width + 8;
    ValueId w = b.AddParam("w" + std::to_string(l), F32({next, width}));
    width = next;
    ValueId e = b.AddNode("exp", {w}, Attrs{});
    h = b.AddNode("nn.dense", {h, e}, Attrs{});
    h = b.AddNode("tanh", {h}, Attrs{});
  }
  b.SetOutputs({h}, false);
  const Graph graph = std::move(b).Build();
  Plan plan = UnfusedPlan(graph);
  Plan fused{"fused", {}};
  for (const PlanGroup& g : plan.groups) {
    const std::string& op = graph.value(g.nodes[0]).op->name;
    if (op == "exp") fused.groups.push_back({g.nodes, Schedule{}});
    if (op == "nn.dense") {
      fused.groups.back().nodes.push_back(g.nodes[0]);
      fused.groups.back().schedule.Set("wpack", 1);
    }
    if (op == "tanh") fused.groups.push_back(g);
  }
  const std::string first_exp = graph.RefName(fused.groups[0].nodes[0]);
  for (int compile_threads : {1, 3}) {
    codegen::Jit jit;
    try {
      PlanExecutor executor(graph, fused, jit, 1, nullptr, compile_threads);
      FAIL() << "a wpack dense with a prologue on B compiled";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("needs B (" + first_exp + ")"), std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace fusetune
