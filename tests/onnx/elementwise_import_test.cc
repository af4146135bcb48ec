// Element-wise ONNX ops: each imports as its catalog op and computes what ONNX defines.
#include <cmath>
#include <functional>

#include <gtest/gtest.h>

#include "ir/interpreter.h"
#include "model_builder.h"

namespace fusetune::testing {
namespace {

std::vector<float> Run1(const Graph& g, const Tensor& x) {
  std::vector<Tensor> out = Interpret(g, std::vector<Tensor>{x});
  return Values(out.at(0));
}

TEST(OnnxElementwise, BinaryOpsBroadcastLikeNumpy) {
  struct Case {
    const char* onnx;
    const char* ir;
    std::function<float(float, float)> f;
  };
  for (const Case& c :
       {Case{"Add", "add", std::plus<float>()}, Case{"Sub", "subtract", std::minus<float>()},
        Case{"Mul", "multiply", std::multiplies<float>()},
        Case{"Div", "divide", std::divides<float>()}}) {
    SCOPED_TRACE(c.onnx);
    ModelBuilder m;
    m.Input("a", {2, 3}).Input("b", {3}).Output("y", {2, 3});
    m.Node(c.onnx, {"a", "b"}, {"y"});
    Graph g = m.Import();
    EXPECT_EQ(OpNames(g), std::vector<std::string>{c.ir});
    std::vector<float> a = Ramp(6), b = {0.5f, -2.0f, 4.0f};
    std::vector<Tensor> out = Interpret(g, std::vector<Tensor>{F32({2, 3}, a), F32({3}, b)});
    std::vector<float> y = Values(out[0]);
    for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(y[i], c.f(a[i], b[i % 3])) << i;
  }
}

TEST(OnnxElementwise, UnaryOpsMatchTheirDefinitions) {
  struct Case {
    const char* onnx;
    const char* ir;
    double (*f)(double);
  };
  const Case cases[] = {
      {"Sqrt", "sqrt", [](double x) { return std::sqrt(std::fabs(x)); }},
      {"Exp", "exp", [](double x) { return std::exp(x); }},
      {"Log", "log", [](double x) { return std::log(std::fabs(x)); }},
      {"Tanh", "tanh", [](double x) { return std::tanh(x); }},
      {"Erf", "erf", [](double x) { return std::erf(x); }},
      {"Sigmoid", "sigmoid", [](double x) { return 1 / (1 + std::exp(-x)); }},
      {"Relu", "nn.relu", [](double x) { return x > 0 ? x : 0.0; }},
      {"Neg", "negative", [](double x) { return -x; }},
      {"Abs", "abs", [](double x) { return std::fabs(x); }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.onnx);
    ModelBuilder m;
    m.Input("x", {5}).Output("y", {5});
    m.Node(c.onnx, {"x"}, {"y"});
    Graph g = m.Import();
    EXPECT_EQ(OpNames(g), std::vector<std::string>{c.ir});
    // Sqrt and Log get positive inputs.
    std::vector<float> x = Ramp(5, 0.3f);
    if (std::string(c.onnx) == "Sqrt" || std::string(c.onnx) == "Log")
      for (float& v : x) v = std::fabs(v);
    std::vector<float> y = Run1(g, F32({5}, x));
    for (int i = 0; i < 5; ++i) EXPECT_NEAR(y[i], c.f(x[i]), 1e-6) << i;
  }
}

TEST(OnnxElementwise, ReciprocalIsOneOverX) {
  ModelBuilder m;
  m.Input("x", {3}).Output("y");
  m.Node("Reciprocal", {"x"}, {"y"});
  Graph g = m.Import();
  EXPECT_EQ(OpNames(g), std::vector<std::string>{"divide"});
  EXPECT_EQ(Run1(g, F32({3}, {2, -4, 0.5f})), (std::vector<float>{0.5f, -0.25f, 2.0f}));
}

TEST(OnnxElementwise, PowByTwoIsAMultiplyAndOtherExponentsArePower) {
  for (auto [exponent, op] :
       {std::pair{2.0f, "multiply"}, std::pair{0.5f, "sqrt"}, std::pair{3.0f, "power"}}) {
    SCOPED_TRACE(exponent);
    ModelBuilder m;
    m.Input("x", {3}).Output("y", {3});
    m.FloatConstant("e", {}, {exponent});
    m.Node("Pow", {"x", "e"}, {"y"});
    Graph g = m.Import();
    EXPECT_EQ(OpNames(g), std::vector<std::string>{op});
    std::vector<float> y = Run1(g, F32({3}, {1.5f, 2.0f, 4.0f}));
    EXPECT_NEAR(y[0], std::pow(1.5, exponent), 1e-6);
    EXPECT_NEAR(y[2], std::pow(4.0, exponent), 1e-5);
  }
}

TEST(OnnxElementwise, PowWithAnIntegerExponentCastsItToTheBase) {
  ModelBuilder m;
  m.Input("x", {2}).Output("y");
  m.IntConstant("e", {}, {3});
  m.Node("Pow", {"x", "e"}, {"y"});
  Graph g = m.Import();
  EXPECT_EQ(OpNames(g), std::vector<std::string>{"power"});
  EXPECT_EQ(Run1(g, F32({2}, {2, -1})), (std::vector<float>{8.0f, -1.0f}));
}

TEST(OnnxElementwise, WhereSelectsByABoolInput) {
  ModelBuilder m;
  m.Input("c", {3}, onnx::TensorProto::BOOL).Input("a", {3}).Input("b", {3}).Output("y");
  m.Node("Where", {"c", "a", "b"}, {"y"});
  Graph g = m.Import();
  EXPECT_EQ(OpNames(g), std::vector<std::string>{"where"});
  Tensor c(TensorType{DType::kBool, {3}});
  c.Set(0, 1);
  c.Set(2, 1);
  std::vector<Tensor> out =
      Interpret(g, std::vector<Tensor>{c, F32({3}, {1, 2, 3}), F32({3}, {-1, -2, -3})});
  EXPECT_EQ(Values(out[0]), (std::vector<float>{1.0f, -2.0f, 3.0f}));
}

TEST(OnnxElementwise, WhereOnAMaskBuiltFromConstantsFoldsToOneWhere) {
  // A causal mask: Where(Less(col, row + 1), x, -inf-ish) with the comparison folded.
  ModelBuilder m;
  m.Input("x", {2, 2}).Output("y");
  m.IntConstant("row", {2, 1}, {0, 1}).IntConstant("col", {2}, {0, 1});
  m.Node("LessOrEqual", {"col", "row"}, {"mask"});
  m.FloatConstant("neg", {}, {-100.0f});
  m.Node("Where", {"mask", "x", "neg"}, {"y"});
  Graph g = m.Import();
  EXPECT_EQ(OpNames(g), std::vector<std::string>{"where"});
  EXPECT_EQ(Run1(g, F32({2, 2}, {1, 2, 3, 4})), (std::vector<float>{1.0f, -100.0f, 3.0f, 4.0f}));
}

TEST(OnnxElementwise, CastToInt32TruncatesAndCastToItsOwnTypeVanishes) {
  ModelBuilder m;
  m.Input("x", {3}).TypedOutput("i", onnx::TensorProto::INT32).Output("f");
  SetAttr(m.Node("Cast", {"x"}, {"i"}), "to", int64_t{onnx::TensorProto::INT32});
  SetAttr(m.Node("Cast", {"x"}, {"f"}), "to", int64_t{onnx::TensorProto::FLOAT});
  Graph g = m.Import();
  EXPECT_EQ(OpNames(g), std::vector<std::string>{"cast"});
  std::vector<Tensor> out = Interpret(g, std::vector<Tensor>{F32({3}, {1.7f, -2.5f, 3})});
  EXPECT_EQ(out[0].dtype(), DType::kInt32);
  EXPECT_EQ(Values(out[0]), (std::vector<float>{1.0f, -2.0f, 3.0f}));
  EXPECT_EQ(Values(out[1]), (std::vector<float>{1.7f, -2.5f, 3.0f}));
}

TEST(OnnxElementwise, ClipFromInputsAndFromAttributes) {
  {
    ModelBuilder m(13);
    m.Input("x", {4}).Output("y");
    m.FloatConstant("lo", {}, {-1.0f}).FloatConstant("hi", {}, {2.0f});
    m.Node("Clip", {"x", "lo", "hi"}, {"y"});
    Graph g = m.Import();
    EXPECT_EQ(OpNames(g), std::vector<std::string>{"clip"});
    EXPECT_EQ(Run1(g, F32({4}, {-3, 0.5f, 1, 5})), (std::vector<float>{-1.0f, 0.5f, 1.0f, 2.0f}));
  }
  {
    ModelBuilder m(9);  // before opset 11 the bounds are attributes
    m.Input("x", {3}).Output("y");
    SetAttr(m.Node("Clip", {"x"}, {"y"}), "min", 0.0f);
    Graph g = m.Import();
    EXPECT_EQ(OpNames(g), std::vector<std::string>{"maximum"});
    EXPECT_EQ(Run1(g, F32({3}, {-3, 0.5f, 7})), (std::vector<float>{0.0f, 0.5f, 7.0f}));
  }
}

TEST(OnnxElementwise, VariadicMaxMinSumChain) {
  ModelBuilder m;
  m.Input("a", {2}).Input("b", {2}).Input("c", {2}).Output("mx").Output("mn").Output("s");
  m.Node("Max", {"a", "b", "c"}, {"mx"});
  m.Node("Min", {"a", "b", "c"}, {"mn"});
  m.Node("Sum", {"a", "b", "c"}, {"s"});
  Graph g = m.Import();
  std::vector<Tensor> out =
      Interpret(g, std::vector<Tensor>{F32({2}, {1, 5}), F32({2}, {3, -2}), F32({2}, {2, 4})});
  EXPECT_EQ(Values(out[0]), (std::vector<float>{3.0f, 5.0f}));
  EXPECT_EQ(Values(out[1]), (std::vector<float>{1.0f, -2.0f}));
  EXPECT_EQ(Values(out[2]), (std::vector<float>{6.0f, 7.0f}));
  EXPECT_TRUE(g.tuple_output());
}

TEST(OnnxElementwise, ScalarConstantsBecomeLiteralsAndWeightsParametersWithData) {
  ModelBuilder m;
  m.Input("x", {3}).Output("y");
  m.Initializer("onnx::bias", {3}, {1, 2, 3});
  m.FloatConstant("half", {}, {0.5f});
  m.Node("Add", {"x", "onnx::bias"}, {"t"});
  m.Node("Mul", {"t", "half"}, {"y"});
  Graph g = m.Import();
  ASSERT_EQ(g.params().size(), 2u);
  EXPECT_EQ(g.value(g.params()[0]).name, "x");
  const Value& bias = g.value(g.params()[1]);
  EXPECT_EQ(bias.name, "onnx__bias");
  ASSERT_NE(bias.data, nullptr);
  EXPECT_EQ(Values(*bias.data), (std::vector<float>{1.0f, 2.0f, 3.0f}));
  const Value& mul = g.value(g.outputs()[0]);
  EXPECT_EQ(g.value(mul.inputs[1]).kind, ValueKind::kConst);
  // Only the input without data is passed; the bias comes from the model.
  EXPECT_EQ(Run1(g, F32({3}, {1, 1, 1})), (std::vector<float>{1.0f, 1.5f, 2.0f}));
}

TEST(OnnxElementwise, ScalarInitialisersAreLiteralsToo) {
  ModelBuilder m;
  m.Input("x", {2}).Output("y");
  m.Initializer("scale", {}, {3.0f});
  m.Node("Mul", {"x", "scale"}, {"y"});
  Graph g = m.Import();
  EXPECT_EQ(g.params().size(), 1u);
  EXPECT_EQ(g.value(g.value(g.outputs()[0]).inputs[1]).kind, ValueKind::kConst);
  EXPECT_EQ(Run1(g, F32({2}, {1, -2})), (std::vector<float>{3, -6}));
}

TEST(OnnxElementwise, IdentityAndDropoutPassTheirInputThrough) {
  ModelBuilder m(13);
  m.Input("x", {2}).Output("y");
  m.Node("Identity", {"x"}, {"i"});
  m.Node("Dropout", {"i"}, {"d"});
  m.Node("Relu", {"d"}, {"y"});
  Graph g = m.Import();
  EXPECT_EQ(OpNames(g), std::vector<std::string>{"nn.relu"});
}

}  // namespace
}  // namespace fusetune::testing
