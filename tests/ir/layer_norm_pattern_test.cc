// Layer norms written out op by op (PyTorch's ONNX export before opset 17) put back as one
// nn.layer_norm: the rewritten graph computes the same values, keeps its weights shared, and
// leaves alone every chain whose inner values are read elsewhere or that is not over the last
// axis.
#include "ir/layer_norm_pattern.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "ir/interpreter.h"

namespace fusetune {
namespace {

TensorType F32(Shape s) { return TensorType{DType::kFloat32, std::move(s)}; }

struct Built {
  Graph graph;
  ValueId d = -1;  // x - mean(x)
};

// (x + r) -> mean, subtract, d * d, mean, + eps, sqrt, divide, * gamma, + beta -> tanh, as the
// export writes nn.LayerNorm; `axis` the reductions' axis, `leak_d` makes d a second output.
Built Decomposed(int64_t axis = -1, bool leak_d = false, bool gamma_first = false) {
  GraphBuilder b;
  ValueId x = b.AddParam("x", F32({3, 5, 24}));
  x = b.AddNode("add", {x, b.AddParam("r", F32({3, 5, 24}))}, Attrs{});
  const Shape w{24};
  ValueId gamma = b.AddParamWithData("gamma", Tensor::Random(F32(w), 3));
  ValueId beta = b.AddParamWithData("beta", Tensor::Random(F32(w), 4));
  const Attrs mean_attrs({{"axis", IntList{axis}}, {"keepdims", true}});
  ValueId m = b.AddNode("mean", {x}, mean_attrs);
  ValueId d = b.AddNode("subtract", {x, m}, Attrs{});
  ValueId v = b.AddNode("mean", {b.AddNode("multiply", {d, d}, Attrs{})}, mean_attrs);
  Tensor eps(F32({}));
  eps.Set(0, 1e-5);
  ValueId sd = b.AddNode("sqrt", {b.AddNode("add", {v, b.AddConst(eps)}, Attrs{})}, Attrs{});
  ValueId y = b.AddNode("divide", {d, sd}, Attrs{});
  ValueId scaled = gamma_first ? b.AddNode("multiply", {gamma, y}, Attrs{})
                               : b.AddNode("multiply", {y, gamma}, Attrs{});
  ValueId out = b.AddNode("tanh", {b.AddNode("add", {scaled, beta}, Attrs{})}, Attrs{});
  std::vector<ValueId> outputs{out};
  if (leak_d) outputs.push_back(d);
  b.SetOutputs(outputs, leak_d);
  return {std::move(b).Build(), d};
}

int Count(const Graph& g, const std::string& op) {
  return static_cast<int>(std::count_if(g.values().begin(), g.values().end(), [&](const Value& v) {
    return v.kind == ValueKind::kNode && v.op->name == op;
  }));
}

TEST(LayerNormPattern, TheExportersChainBecomesOneNormWithTheSameValues) {
  for (bool gamma_first : {false, true}) {
    const Graph before = Decomposed(-1, false, gamma_first).graph;
    int fused = 0;
    const Graph after = FuseDecomposedLayerNorms(before, {}, &fused);
    EXPECT_EQ(fused, 1);
    EXPECT_EQ(Count(after, "nn.layer_norm"), 1);
    EXPECT_EQ(Count(after, "mean"), 0);
    EXPECT_EQ(Count(after, "sqrt"), 0);
    EXPECT_EQ(after.num_nodes(), 3) << "add, nn.layer_norm, tanh";
    for (const Value& v : after.values()) {
      if (v.kind == ValueKind::kNode && v.op->name == "nn.layer_norm") {
        EXPECT_DOUBLE_EQ(v.attrs.GetFloat("epsilon"), static_cast<double>(1e-5f));
      }
    }
    EXPECT_EQ(after.value(*after.FindByName("gamma")).data,
              before.value(*before.FindByName("gamma")).data)
        << "the weights are shared, not copied";
    const auto inputs = RandomInputs(before, 9);
    const Tensor want = InterpretAll(before, inputs)[before.outputs()[0]];
    const Tensor got = InterpretAll(after, RandomInputs(after, 9))[after.outputs()[0]];
    ASSERT_EQ(got.size(), want.size());
    double worst = 0;
    for (int64_t i = 0; i < want.size(); ++i)
      worst = std::max(worst, std::abs(got.Get(i) - want.Get(i)));
    EXPECT_LT(worst, 1e-6);
  }
}

TEST(LayerNormPattern, ChainsThatAreNotANormAreLeftAlone) {
  int fused = -1;
  const Built leaked = Decomposed(-1, /*leak_d=*/true);
  EXPECT_EQ(FuseDecomposedLayerNorms(leaked.graph, {}, &fused), leaked.graph);
  EXPECT_EQ(fused, 0) << "x - mean(x) is also an output";
  const Built first_axis = Decomposed(0);
  EXPECT_EQ(FuseDecomposedLayerNorms(first_axis.graph, {}, &fused), first_axis.graph);
  EXPECT_EQ(fused, 0) << "normalised over axis 0";
}

}  // namespace
}  // namespace fusetune
