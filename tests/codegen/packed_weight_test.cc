// Weights packed once at load (ExecutorOptions::pack_weights): matmul kernels that read a packed
// weight agree with the interpreter and, bit for bit, with the kernels that pack in every call,
// over layouts, ragged sizes and schedules; operands that are not weights are never packed.
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "group_check_util.h"
#include "ir/interpreter.h"
#include "ir/plan.h"
#include "worker/codegen/jit.h"
#include "worker/executor.h"

namespace fusetune::testing {
namespace {

// The parsed graph with the named parameters carrying random values (weights), as the ONNX
// importer builds them.
Graph WithWeights(const Graph& parsed, const std::set<std::string>& weights) {
  GraphBuilder builder;
  std::vector<ValueId> id(parsed.values().size());
  uint64_t seed = 11;
  for (ValueId v = 0; v < static_cast<ValueId>(parsed.values().size()); ++v) {
    const Value& value = parsed.value(v);
    if (value.kind == ValueKind::kParam) {
      id[v] = weights.count(value.name)
                  ? builder.AddParamWithData(value.name, Tensor::Random(value.type, seed++))
                  : builder.AddParam(value.name, value.type);
    } else if (value.kind == ValueKind::kConst) {
      id[v] = builder.AddConst(*value.data, value.name);
    } else {
      std::vector<ValueId> inputs;
      for (ValueId in : value.inputs) inputs.push_back(id[in]);
      id[v] = builder.AddNode(value.op->name, inputs, value.attrs, value.name);
    }
  }
  std::vector<ValueId> outputs;
  for (ValueId out : parsed.outputs()) outputs.push_back(id[out]);
  builder.SetOutputs(outputs, parsed.tuple_output());
  return std::move(builder).Build();
}

std::vector<Tensor> RunPlan(const Graph& graph, const Plan& plan, int threads, bool pack,
                            int* packed_count) {
  codegen::Jit jit;
  PlanExecutor executor(graph, plan, jit, threads, {.pack_weights = pack});
  executor.SetInputs(RandomInputs(graph, 5));
  executor.Run();
  if (packed_count) *packed_count = executor.num_packed_weights();
  return executor.Outputs();
}

bool BitwiseEqual(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].type() != b[i].type() ||
        std::memcmp(a[i].data(), b[i].data(), static_cast<size_t>(a[i].type().NumBytes())) != 0)
      return false;
  }
  return true;
}

// dense + bias + tanh in one kernel, the weight [N, K] (k contiguous: the transposing pack).
std::string DenseText(int m, int n, int k) {
  return "fn (%x: Tensor[(" + std::to_string(m) + ", " + std::to_string(k) +
         "), float32], %w: Tensor[(" + std::to_string(n) + ", " + std::to_string(k) +
         "), float32], %b: Tensor[(" + std::to_string(n) +
         "), float32]) {\n  %0 = nn.dense(%x, %w);\n  %1 = nn.bias_add(%0, %b);\n  tanh(%1)\n}";
}

// nn.matmul with the weight [K, N] (n contiguous: the copying pack).
std::string MatmulText(int m, int n, int k) {
  return "fn (%x: Tensor[(" + std::to_string(m) + ", " + std::to_string(k) +
         "), float32], %w: Tensor[(" + std::to_string(k) + ", " + std::to_string(n) +
         "), float32]) {\n  %0 = nn.matmul(%x, %w);\n  add(%0, 1f)\n}";
}

Plan OneGroup(const Graph& graph, const Schedule& schedule) {
  Plan plan{"one", {PlanGroup{{}, schedule}}};
  for (ValueId v = 0; v < static_cast<ValueId>(graph.values().size()); ++v)
    if (graph.value(v).kind == ValueKind::kNode) plan.groups[0].nodes.push_back(v);
  return plan;
}

Schedule Knobs(std::initializer_list<std::pair<const char*, int64_t>> knobs) {
  Schedule s;
  for (const auto& [key, value] : knobs) s.Set(key, value);
  return s;
}

TEST(PackedWeights, AgreeWithInterpreterAndWithPackingInEveryCall) {
  const std::vector<Schedule> schedules = {
      {},
      Knobs({{"kc", 16}}),  // several k blocks: panels are entered at k0 > 0
      Knobs({{"mr", 4}, {"nr", 16}, {"loop", 1}}),
      Knobs({{"mr", 6}, {"nr", 48}, {"nc", 48}, {"kc", 24}}),  // several n blocks
  };
  struct Case {
    std::string text;
    const char* what;
  };
  const std::vector<Case> cases = {{DenseText(37, 70, 53), "dense, ragged m, n and k"},
                                   {DenseText(16, 64, 32), "dense, whole tiles"},
                                   {MatmulText(9, 45, 40), "matmul, weight [K, N]"}};
  for (const Case& c : cases) {
    Graph graph = WithWeights(ParseGraph(c.text), {"w"});
    std::vector<Tensor> want = Interpret(graph, RandomInputs(graph, 5));
    for (const Schedule& schedule : schedules) {
      for (int threads : {1, 2}) {
        Plan plan = OneGroup(graph, schedule);
        int packed = -1;
        std::vector<Tensor> got = RunPlan(graph, plan, threads, true, &packed);
        std::vector<Tensor> every_call = RunPlan(graph, plan, threads, false, nullptr);
        SCOPED_TRACE(std::string(c.what) + " schedule '" + schedule.ToString() + "' threads " +
                     std::to_string(threads));
        EXPECT_EQ(packed, 1);
        EXPECT_LT(MaxAbsError(got, want), 1e-4);
        EXPECT_TRUE(BitwiseEqual(got, every_call));
      }
    }
  }
}

TEST(PackedWeights, OnlyWeightsReadDirectlyByABatchOneProductArePacked) {
  // %w has no data: an activation, packed by the kernel in each call.
  Graph no_weight = ParseGraph(DenseText(8, 32, 16));
  int packed = -1;
  RunPlan(no_weight, GreedyPlan(no_weight), 1, true, &packed);
  EXPECT_EQ(packed, 0);

  // A weight transposed by a fused prologue is computed while packing, not packed at load.
  Graph prologue = WithWeights(ParseGraph("fn (%x: Tensor[(8, 16), float32], %w: Tensor[(16, 32), "
                                          "float32]) {\n  %0 = transpose(%w, axes=[1, 0]);\n"
                                          "  nn.dense(%x, %0)\n}"),
                               {"w"});
  std::vector<Tensor> got = RunPlan(prologue, OneGroup(prologue, {}), 1, true, &packed);
  EXPECT_EQ(packed, 0);
  EXPECT_LT(MaxAbsError(got, Interpret(prologue, RandomInputs(prologue, 5))), 1e-4);

  // batch_matmul over a batch of 2: not packed (the packed layout is for batch 1).
  Graph batched = WithWeights(ParseGraph("fn (%x: Tensor[(2, 8, 16), float32], %w: Tensor[(2, 32, "
                                         "16), float32]) {\n  nn.batch_matmul(%x, %w)\n}"),
                              {"w"});
  RunPlan(batched, GreedyPlan(batched), 1, true, &packed);
  EXPECT_EQ(packed, 0);

  // Two kernels reading the same weight with the same layout share one packed copy.
  Graph shared = WithWeights(ParseGraph("fn (%x: Tensor[(8, 16), float32], %w: Tensor[(32, 16), "
                                        "float32]) {\n  %0 = nn.dense(%x, %w);\n  %1 = tanh(%0);\n"
                                        "  %2 = nn.dense(%x, %w);\n  (%1, %2)\n}"),
                             {"w"});
  got = RunPlan(shared, UnfusedPlan(shared), 1, true, &packed);
  EXPECT_EQ(packed, 1);
  EXPECT_LT(MaxAbsError(got, Interpret(shared, RandomInputs(shared, 5))), 1e-4);
}

}  // namespace
}  // namespace fusetune::testing
