// A product with a weight the graph holds (an ONNX initialiser: a parameter with data), the shape
// the wpack knob (weights packed at bind) is offered for; shared by the codegen and matmul tests.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "ir/fusion.h"
#include "ir/graph.h"

namespace fusetune::test_graphs {

inline TensorType F32(Shape shape) { return TensorType{DType::kFloat32, std::move(shape)}; }

// x · Wᵀ (+ bias, GELU by tanh when `epilogue`), as ONNX imports nn.Linear. batch > 1:
// nn.batch_matmul against a [batch, n, k] (or [batch, k, n] when !transpose_b) weight.
inline Graph WeightedProduct(int64_t batch, int64_t m, int64_t n, int64_t k, bool epilogue,
                             bool transpose_b = true) {
  GraphBuilder b;
  ValueId out;
  if (batch == 1) {
    ValueId x = b.AddParam("x", F32({m, k}));
    ValueId w = b.AddParamWithData("w", Tensor::Random(F32({n, k}), 11));
    out = b.AddNode("nn.dense", {x, w}, Attrs{});
  } else {
    ValueId x = b.AddParam("x", F32({batch, m, k}));
    ValueId w = b.AddParamWithData(
        "w", Tensor::Random(F32(transpose_b ? Shape{batch, n, k} : Shape{batch, k, n}), 11));
    out = b.AddNode("nn.batch_matmul", {x, w},
                    Attrs({{"transpose_a", false}, {"transpose_b", transpose_b}}));
  }
  if (epilogue) {
    ValueId bias = b.AddParamWithData("bias", Tensor::Random(F32({n}), 12));
    out = b.AddNode("nn.bias_add", {out, bias}, Attrs({{"axis", int64_t{-1}}}));
    out = b.AddNode("tanh", {out}, Attrs{});
  }
  b.SetOutputs({out}, false);
  return std::move(b).Build();
}

// The whole graph as one group.
inline FusedGroup WholeGroup(const Graph& graph) {
  std::vector<ValueId> nodes;
  for (ValueId v = 0; v < static_cast<ValueId>(graph.values().size()); ++v)
    if (graph.value(v).kind == ValueKind::kNode) nodes.push_back(v);
  std::string why;
  auto group = AnalyzeGroup(graph, nodes, &why);
  EXPECT_TRUE(group.has_value()) << why;
  return *group;
}

}  // namespace fusetune::test_graphs
