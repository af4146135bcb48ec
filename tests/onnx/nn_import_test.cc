// MatMul, Gemm, Softmax, LayerNormalization and the reductions: the catalog ops they become and
// their values against loops written here from the ONNX definitions.
#include <cmath>

#include <gtest/gtest.h>

#include "ir/fusion.h"
#include "ir/interpreter.h"
#include "ir/norm_pattern.h"
#include "model_builder.h"

namespace fusetune::testing {
namespace {

// C[b][i][j] = sum_k A[b][i][k] * B[b][k][j] for row-major operands (batch stride 0 = shared).
std::vector<float> MatMulRef(const std::vector<float>& a, const std::vector<float>& b,
                             int64_t batch, int64_t m, int64_t k, int64_t n, bool a_shared = false,
                             bool b_shared = false) {
  std::vector<float> c(static_cast<size_t>(batch * m * n));
  for (int64_t t = 0; t < batch; ++t)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t q = 0; q < k; ++q)
          s += static_cast<double>(a[(a_shared ? 0 : t * m * k) + i * k + q]) *
               b[(b_shared ? 0 : t * k * n) + q * n + j];
        c[t * m * n + i * n + j] = static_cast<float>(s);
      }
  return c;
}

void ExpectNear(const std::vector<float>& got, const std::vector<float>& want, double tol = 1e-5) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "at " << i;
}

TEST(OnnxMatMul, ConstantWeightBecomesDenseWithTheWeightTransposed) {
  ModelBuilder m;
  m.Input("x", {2, 1, 3}).Output("y", {2, 1, 4});
  std::vector<float> w = Ramp(12);
  m.Initializer("w", {3, 4}, w);
  m.Node("MatMul", {"x", "w"}, {"y"});
  Graph g = m.Import();
  EXPECT_EQ(OpNames(g), std::vector<std::string>{"nn.dense"});
  const Value& weight = g.value(g.params()[1]);
  EXPECT_EQ(weight.type.shape, (Shape{4, 3}));                     // nn.dense's [units, k]
  EXPECT_FLOAT_EQ(static_cast<float>(weight.data->Get(1)), w[4]);  // [0][1] = w[1][0]
  std::vector<float> x = Ramp(6, 0.5f);
  std::vector<Tensor> out = Interpret(g, std::vector<Tensor>{F32({2, 1, 3}, x)});
  EXPECT_EQ(out[0].shape(), (Shape{2, 1, 4}));
  ExpectNear(Values(out[0]), MatMulRef(x, w, 1, 2, 3, 4));
}

TEST(OnnxMatMul, TwoRunTimeMatricesUseNnMatmul) {
  ModelBuilder m;
  m.Input("a", {2, 3}).Input("b", {3, 2}).Output("y", {2, 2});
  m.Node("MatMul", {"a", "b"}, {"y"});
  Graph g = m.Import();
  EXPECT_EQ(OpNames(g), std::vector<std::string>{"nn.matmul"});
  std::vector<float> a = Ramp(6), b = Ramp(6, 0.3f);
  std::vector<Tensor> out = Interpret(g, std::vector<Tensor>{F32({2, 3}, a), F32({3, 2}, b)});
  ExpectNear(Values(out[0]), MatMulRef(a, b, 1, 2, 3, 2));
}

TEST(OnnxMatMul, RunTimeMatrixWithBatchedLeftOperandReshapesAroundNnMatmul) {
  ModelBuilder m;
  m.Input("a", {2, 2, 3}).Input("b", {3, 2}).Output("y", {2, 2, 2});
  m.Node("MatMul", {"a", "b"}, {"y"});
  Graph g = m.Import();
  EXPECT_EQ(OpNames(g), (std::vector<std::string>{"reshape", "nn.matmul", "reshape"}));
  std::vector<float> a = Ramp(12), b = Ramp(6, 0.3f);
  std::vector<Tensor> out = Interpret(g, std::vector<Tensor>{F32({2, 2, 3}, a), F32({3, 2}, b)});
  ExpectNear(Values(out[0]), MatMulRef(a, b, 1, 4, 3, 2));
}

TEST(OnnxMatMul, AttentionScoresUseBatchMatmulWithoutTransposingB) {
  ModelBuilder m;
  m.Input("q", {2, 3, 4}).Input("kt", {2, 4, 3}).Output("y", {2, 3, 3});
  m.Node("MatMul", {"q", "kt"}, {"y"});
  Graph g = m.Import();
  EXPECT_EQ(OpNames(g), std::vector<std::string>{"nn.batch_matmul"});
  EXPECT_FALSE(g.value(g.outputs()[0]).attrs.GetBool("transpose_b"));
  std::vector<float> q = Ramp(24), k = Ramp(24, 0.2f);
  std::vector<Tensor> out = Interpret(g, std::vector<Tensor>{F32({2, 3, 4}, q), F32({2, 4, 3}, k)});
  ExpectNear(Values(out[0]), MatMulRef(q, k, 2, 3, 4, 3));
}

TEST(OnnxMatMul, FourDimensionalBatchesFlattenAndBroadcast) {
  ModelBuilder m;
  m.Input("a", {2, 3, 2, 4}).Input("b", {3, 4, 5}).Output("y", {2, 3, 2, 5});
  m.Node("MatMul", {"a", "b"}, {"y"});
  Graph g = m.Import();
  EXPECT_EQ(OpNames(g), (std::vector<std::string>{"reshape", "broadcast_to", "reshape",
                                                  "nn.batch_matmul", "reshape"}));
  std::vector<float> a = Ramp(48), b = Ramp(60, 0.05f);
  std::vector<Tensor> out =
      Interpret(g, std::vector<Tensor>{F32({2, 3, 2, 4}, a), F32({3, 4, 5}, b)});
  std::vector<float> want;
  for (int t = 0; t < 2; ++t) {  // b is shared by the leading batch axis
    std::vector<float> at(a.begin() + t * 24, a.begin() + (t + 1) * 24);
    std::vector<float> part = MatMulRef(at, b, 3, 2, 4, 5);
    want.insert(want.end(), part.begin(), part.end());
  }
  ExpectNear(Values(out[0]), want, 1e-4);
}

TEST(OnnxMatMul, OneDimensionalOperandsFollowNumpy) {
  ModelBuilder m;
  m.Input("v", {3}).Input("mtx", {2, 3, 2}).Output("y", {2, 2});
  m.Node("MatMul", {"v", "mtx"}, {"y"});
  Graph g = m.Import();
  std::vector<float> v = {1, 2, 3}, mtx = Ramp(12);
  std::vector<Tensor> out = Interpret(g, std::vector<Tensor>{F32({3}, v), F32({2, 3, 2}, mtx)});
  EXPECT_EQ(out[0].shape(), (Shape{2, 2}));
  ExpectNear(Values(out[0]), MatMulRef(v, mtx, 2, 1, 3, 2, /*a_shared=*/true));
}

TEST(OnnxGemm, TransposedWeightAndBiasAreDensePlusAdd) {
  ModelBuilder m;
  m.Input("x", {2, 3}).Output("y", {2, 4});
  std::vector<float> w = Ramp(12), bias = {1, 2, 3, 4};
  m.Initializer("w", {4, 3}, w).Initializer("b", {4}, bias);
  SetAttr(m.Node("Gemm", {"x", "w", "b"}, {"y"}), "transB", int64_t{1});
  Graph g = m.Import();
  EXPECT_EQ(OpNames(g), (std::vector<std::string>{"nn.dense", "add"}));
  std::vector<float> x = Ramp(6, 0.5f);
  std::vector<Tensor> out = Interpret(g, std::vector<Tensor>{F32({2, 3}, x)});
  std::vector<float> got = Values(out[0]);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) {
      double s = bias[j];
      for (int k = 0; k < 3; ++k) s += x[i * 3 + k] * w[j * 3 + k];
      EXPECT_NEAR(got[i * 4 + j], s, 1e-5);
    }
}

TEST(OnnxGemm, AlphaBetaAndTransposedA) {
  ModelBuilder m;
  m.Input("a", {3, 2}).Input("b", {3, 4}).Input("c", {4}).Output("y", {2, 4});
  auto& node = m.Node("Gemm", {"a", "b", "c"}, {"y"});
  SetAttr(node, "transA", int64_t{1});
  SetAttr(node, "alpha", 2.0f);
  SetAttr(node, "beta", 0.5f);
  Graph g = m.Import();
  EXPECT_EQ(OpNames(g), (std::vector<std::string>{"nn.matmul", "multiply", "multiply", "add"}));
  std::vector<float> a = Ramp(6), b = Ramp(12, 0.2f), c = {1, 2, 3, 4};
  std::vector<Tensor> out =
      Interpret(g, std::vector<Tensor>{F32({3, 2}, a), F32({3, 4}, b), F32({4}, c)});
  std::vector<float> got = Values(out[0]);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) {
      double s = 0;
      for (int k = 0; k < 3; ++k) s += a[k * 2 + i] * b[k * 4 + j];
      EXPECT_NEAR(got[i * 4 + j], 2 * s + 0.5 * c[j], 1e-5);
    }
}

TEST(OnnxGemm, UntransposedConstantWeightIsTransposedAtImport) {
  ModelBuilder m;
  m.Input("x", {1, 2}).Output("y", {1, 3});
  m.Initializer("w", {2, 3}, {1, 2, 3, 4, 5, 6});
  m.Node("Gemm", {"x", "w"}, {"y"});
  Graph g = m.Import();
  EXPECT_EQ(OpNames(g), std::vector<std::string>{"nn.dense"});
  std::vector<Tensor> out = Interpret(g, std::vector<Tensor>{F32({1, 2}, {1, 10})});
  EXPECT_EQ(Values(out[0]), (std::vector<float>{41, 52, 63}));
}

std::vector<float> SoftmaxRows(const std::vector<float>& x, int64_t row) {
  std::vector<float> y(x.size());
  for (size_t r = 0; r < x.size() / row; ++r) {
    double mx = -1e30, s = 0;
    for (int64_t i = 0; i < row; ++i) mx = std::max<double>(mx, x[r * row + i]);
    for (int64_t i = 0; i < row; ++i) s += std::exp(x[r * row + i] - mx);
    for (int64_t i = 0; i < row; ++i) y[r * row + i] = std::exp(x[r * row + i] - mx) / s;
  }
  return y;
}

TEST(OnnxSoftmax, Opset13NormalisesOneAxis) {
  ModelBuilder m(13);
  m.Input("x", {2, 3}).Output("y");
  m.Node("Softmax", {"x"}, {"y"});
  Graph g = m.Import();
  EXPECT_EQ(OpNames(g), std::vector<std::string>{"nn.softmax"});
  std::vector<float> x = Ramp(6);
  std::vector<Tensor> out = Interpret(g, std::vector<Tensor>{F32({2, 3}, x)});
  ExpectNear(Values(out[0]), SoftmaxRows(x, 3));
}

TEST(OnnxSoftmax, BeforeOpset13TheAxesFromAxisOnAreFlattened) {
  ModelBuilder m(11);
  m.Input("x", {2, 2, 3}).Output("y", {2, 2, 3});
  SetAttr(m.Node("Softmax", {"x"}, {"y"}), "axis", int64_t{1});
  Graph g = m.Import();
  EXPECT_EQ(OpNames(g), (std::vector<std::string>{"reshape", "nn.softmax", "reshape"}));
  std::vector<float> x = Ramp(12);
  std::vector<Tensor> out = Interpret(g, std::vector<Tensor>{F32({2, 2, 3}, x)});
  ExpectNear(Values(out[0]), SoftmaxRows(x, 6));
}

TEST(OnnxSoftmax, LogSoftmaxIsLogOfSoftmax) {
  ModelBuilder m(13);
  m.Input("x", {4}).Output("y");
  m.Node("LogSoftmax", {"x"}, {"y"});
  Graph g = m.Import();
  std::vector<float> x = Ramp(4);
  std::vector<Tensor> out = Interpret(g, std::vector<Tensor>{F32({4}, x)});
  std::vector<float> want = SoftmaxRows(x, 4);
  for (float& v : want) v = std::log(v);
  ExpectNear(Values(out[0]), want);
}

std::vector<float> LayerNormRows(const std::vector<float>& x, int64_t row,
                                 const std::vector<float>& gamma, const std::vector<float>& beta,
                                 double eps) {
  std::vector<float> y(x.size());
  for (size_t r = 0; r < x.size() / row; ++r) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < row; ++i) mean += x[r * row + i];
    mean /= row;
    for (int64_t i = 0; i < row; ++i) var += (x[r * row + i] - mean) * (x[r * row + i] - mean);
    var /= row;
    for (int64_t i = 0; i < row; ++i)
      y[r * row + i] = (x[r * row + i] - mean) / std::sqrt(var + eps) * gamma[i] +
                       (beta.empty() ? 0.0 : beta[i]);
  }
  return y;
}

TEST(OnnxLayerNorm, LastAxisWithScaleAndBias) {
  ModelBuilder m(17);
  m.Input("x", {2, 4}).Output("y");
  std::vector<float> gamma = {1, 2, 0.5f, -1}, beta = {0, 0.1f, 0.2f, 0.3f};
  m.Initializer("g", {4}, gamma).Initializer("b", {4}, beta);
  SetAttr(m.Node("LayerNormalization", {"x", "g", "b"}, {"y"}), "epsilon", 1e-3f);
  Graph g = m.Import();
  EXPECT_EQ(OpNames(g), std::vector<std::string>{"nn.layer_norm"});
  std::vector<float> x = Ramp(8);
  std::vector<Tensor> out = Interpret(g, std::vector<Tensor>{F32({2, 4}, x)});
  ExpectNear(Values(out[0]), LayerNormRows(x, 4, gamma, beta, 1e-3));
}

TEST(OnnxLayerNorm, SeveralAxesWithoutBias) {
  ModelBuilder m(17);
  m.Input("x", {2, 2, 3}).Output("y", {2, 2, 3});
  std::vector<float> gamma = Ramp(6, 0.5f);
  m.Initializer("g", {2, 3}, gamma);
  SetAttr(m.Node("LayerNormalization", {"x", "g"}, {"y"}), "axis", int64_t{1});
  Graph g = m.Import();
  EXPECT_EQ(OpNames(g), (std::vector<std::string>{"reshape", "nn.layer_norm", "reshape"}));
  std::vector<float> x = Ramp(12);
  std::vector<Tensor> out = Interpret(g, std::vector<Tensor>{F32({2, 2, 3}, x)});
  ExpectNear(Values(out[0]), LayerNormRows(x, 6, gamma, {}, 1e-5), 1e-4);
}

// LLaMA's RMS norm as PyTorch exports it (ONNX has no Rsqrt: torch.rsqrt is a Reciprocal of a
// Sqrt, or a Div of 1, by exporter version): the import keeps the ops, and the search's row
// kernel (ir/norm_pattern.h) takes them as one RMS norm.
TEST(OnnxRmsNorm, PyTorchsExportIsOneRowKernelForTheSearch) {
  for (const bool reciprocal : {true, false}) {
    ModelBuilder m(13);
    m.Input("x", {2, 4}).Output("y");
    const std::vector<float> w = {1, 2, 0.5f, -1};
    m.Initializer("w", {4}, w).Initializer("two", {}, {2}).Initializer("eps", {}, {1e-6f});
    m.Initializer("one", {}, {1});
    m.Node("Pow", {"x", "two"}, {"sq"});
    SetAttr(m.Node("ReduceMean", {"sq"}, {"ms"}), "axes", std::vector<int64_t>{-1});
    m.Node("Add", {"ms", "eps"}, {"t"});
    m.Node("Sqrt", {"t"}, {"r"});
    if (reciprocal)
      m.Node("Reciprocal", {"r"}, {"inv"});
    else
      m.Node("Div", {"one", "r"}, {"inv"});
    m.Node("Mul", {"x", "inv"}, {"n"});
    m.Node("Mul", {"n", "w"}, {"y"});
    Graph g = m.Import();
    const std::vector<NormOpByOp> norms = FindNormOpByOp(g);
    ASSERT_EQ(norms.size(), 1u) << reciprocal;
    EXPECT_EQ(norms[0].kind, RowNorm::kRmsNorm);
    EXPECT_FLOAT_EQ(static_cast<float>(norms[0].epsilon), 1e-6f);
    std::vector<ValueId> nodes;
    for (ValueId v = 0; v < static_cast<ValueId>(g.values().size()); ++v)
      if (g.value(v).kind == ValueKind::kNode) nodes.push_back(v);
    std::string why;
    const std::optional<FusedGroup> group = AnalyzeGroup(g, nodes, &why);
    ASSERT_TRUE(group) << why;
    EXPECT_EQ(group->templ, GroupTemplate::kComposite);
    const std::vector<float> x = Ramp(8);
    std::vector<float> want(8);
    for (int r = 0; r < 2; ++r) {
      double ms = 0;
      for (int j = 0; j < 4; ++j) ms += x[r * 4 + j] * x[r * 4 + j] / 4.0;
      for (int j = 0; j < 4; ++j)
        want[r * 4 + j] = static_cast<float>(x[r * 4 + j] / std::sqrt(ms + 1e-6) * w[j]);
    }
    ExpectNear(Values(Interpret(g, std::vector<Tensor>{F32({2, 4}, x)})[0]), want);
  }
}

TEST(OnnxReduce, ReduceMeanAxesAttributeKeepsDims) {
  ModelBuilder m(13);
  m.Input("x", {2, 3}).Output("y", {2, 1}).Output("z", {3});
  SetAttr(m.Node("ReduceMean", {"x"}, {"y"}), "axes", std::vector<int64_t>{-1});
  auto& node = m.Node("ReduceMean", {"x"}, {"z"});
  SetAttr(node, "axes", std::vector<int64_t>{0});
  SetAttr(node, "keepdims", int64_t{0});
  Graph g = m.Import();
  EXPECT_EQ(OpNames(g), (std::vector<std::string>{"mean", "mean"}));
  std::vector<Tensor> out = Interpret(g, std::vector<Tensor>{F32({2, 3}, {1, 2, 3, 4, 5, 9})});
  EXPECT_EQ(Values(out[0]), (std::vector<float>{2, 6}));
  EXPECT_EQ(Values(out[1]), (std::vector<float>{2.5f, 3.5f, 6}));
}

TEST(OnnxReduce, ReduceSumTakesAxesAsAnInputFromOpset13) {
  ModelBuilder m(13);
  m.Input("x", {2, 3}).Output("y", {1, 3});
  m.IntConstant("axes", {1}, {0});
  m.Node("ReduceSum", {"x", "axes"}, {"y"});
  m.Node("ReduceMax", {"x"}, {"all"});
  Graph g = m.Import();
  std::vector<Tensor> out = Interpret(g, std::vector<Tensor>{F32({2, 3}, {1, 2, 3, 4, 5, 9})});
  EXPECT_EQ(Values(out[0]), (std::vector<float>{5, 7, 12}));
}

TEST(OnnxReduce, ReduceMaxWithoutAxesReducesEverything) {
  ModelBuilder m(13);
  m.Input("x", {2, 3}).Output("y", {1, 1});
  m.Node("ReduceMax", {"x"}, {"y"});
  Graph g = m.Import();
  std::vector<Tensor> out = Interpret(g, std::vector<Tensor>{F32({2, 3}, {1, 2, 3, 4, 5, -9})});
  EXPECT_EQ(Values(out[0]), (std::vector<float>{5}));
}

}  // namespace
}  // namespace fusetune::testing
