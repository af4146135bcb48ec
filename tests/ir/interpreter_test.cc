// The reference interpreter on whole graphs: values, input binding, intermediates, errors.
#include <cmath>

#include <gtest/gtest.h>

#include "ir/error.h"
#include "ir/interpreter.h"

namespace fusetune {
namespace {

TensorType F32(Shape s) { return TensorType{DType::kFloat32, std::move(s)}; }

Tensor T(Shape shape, std::vector<double> values) {
  Tensor t(F32(std::move(shape)));
  for (size_t i = 0; i < values.size(); ++i) t.Set(static_cast<int64_t>(i), values[i]);
  return t;
}

std::vector<double> Values(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.size(); ++i) v.push_back(t.Get(i));
  return v;
}

using V = std::vector<double>;

// A small seed: where(z, batch_matmul(x, y), ones_like(.)) with batch 1, m = n = 2, k = 2.
Graph SmallSeed() {
  GraphBuilder b;
  ValueId x = b.AddParam("x", F32({1, 2, 2}));
  ValueId y = b.AddParam("y", F32({1, 2, 2}));
  ValueId z = b.AddParam("z", F32({1, 2, 2}));
  ValueId mm = b.AddNode("nn.batch_matmul", {x, y}, {});
  ValueId ones = b.AddNode("ones_like", {mm}, {});
  b.SetOutputs({b.AddNode("where", {z, mm, ones}, {})}, false);
  return std::move(b).Build();
}

TEST(Interpreter, EvaluatesTheSeed) {
  Graph g = SmallSeed();
  std::vector<Tensor> in = {T({1, 2, 2}, {1, 2, 3, 4}), T({1, 2, 2}, {1, 0, 1, 1}),
                            T({1, 2, 2}, {1, 0, 0, -2})};
  // x . y^T = [[1, 3], [3, 7]]; where z != 0 keep it, else 1.
  std::vector<Tensor> out = Interpret(g, in);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Values(out[0]), (V{1, 1, 1, 7}));

  std::vector<Tensor> all = InterpretAll(g, in);
  ASSERT_EQ(all.size(), g.values().size());
  EXPECT_EQ(Values(all[3]), (V{1, 3, 3, 7}));
  EXPECT_EQ(Values(all[4]), (V{1, 1, 1, 1}));
  EXPECT_EQ(Values(all[0]), (V{1, 2, 3, 4}));
}

TEST(Interpreter, TupleOutputsConstantsAndChains) {
  GraphBuilder b;
  ValueId x = b.AddParam("x", F32({2, 3}));
  ValueId two = b.AddConst(Tensor::Scalar(DType::kFloat32, 2.0));
  ValueId m = b.AddNode("multiply", {x, two}, {});
  ValueId s = b.AddNode("sum", {m}, Attrs({{"axis", int64_t{1}}, {"keepdims", true}}));
  ValueId d = b.AddNode("subtract", {m, s}, {});
  ValueId r = b.AddNode("reshape", {d}, Attrs({{"newshape", IntList{-1}}}));
  b.SetOutputs({r, s, x}, true);
  Graph g = std::move(b).Build();
  std::vector<Tensor> in = {T({2, 3}, {1, 2, 3, 0, 0, 1})};
  std::vector<Tensor> out = Interpret(g, in);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(Values(out[0]), (V{-10, -8, -6, -2, -2, 0}));
  EXPECT_EQ(Values(out[1]), (V{12, 2}));
  EXPECT_EQ(Values(out[2]), (V{1, 2, 3, 0, 0, 1}));  // a parameter can be an output
}

TEST(Interpreter, ChecksInputs) {
  Graph g = SmallSeed();
  std::vector<Tensor> two = {T({1, 2, 2}, {1, 2, 3, 4}), T({1, 2, 2}, {1, 0, 1, 1})};
  try {
    Interpret(g, two);
    FAIL() << "expected an error";
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "the graph has 3 parameters (3 without data) but 2 inputs were given");
  }
  std::vector<Tensor> wrong = {T({1, 2, 2}, {1, 2, 3, 4}), T({1, 2, 2}, {1, 0, 1, 1}),
                               T({4}, {0, 0, 0, 0})};
  try {
    Interpret(g, wrong);
    FAIL() << "expected an error";
  } catch (const UserError& e) {
    EXPECT_STREQ(
        e.what(),
        "input 2 for %z has type Tensor[(4,), float32], expected Tensor[(1, 2, 2), float32]");
  }
}

TEST(Interpreter, ParamsWithDataAndRandomInputs) {
  // dense(x, w) + b where w carries data (a weight) and b does not.
  GraphBuilder builder;
  ValueId x = builder.AddParam("x", F32({1, 2}));
  ValueId w = builder.AddParamWithData("w", T({3, 2}, {1, 0, 0, 1, 1, 1}));
  ValueId bias = builder.AddParam("b", F32({3}));
  ValueId d = builder.AddNode("nn.dense", {x, w}, {});
  builder.SetOutputs({builder.AddNode("add", {d, bias}, {})}, false);
  Graph g = std::move(builder).Build();
  Tensor xin = T({1, 2}, {2, 5}), bin = T({3}, {0, 0, 100});
  // Only the parameters without data, in order.
  std::vector<Tensor> short_form = {xin, bin};
  EXPECT_EQ(Values(Interpret(g, short_form)[0]), (V{2, 5, 107}));
  // One per parameter, an empty tensor standing for "use the data".
  std::vector<Tensor> full_form = {xin, Tensor(), bin};
  EXPECT_EQ(Values(Interpret(g, full_form)[0]), (V{2, 5, 107}));
  // Or an override of the data.
  std::vector<Tensor> override_form = {xin, T({3, 2}, {0, 0, 0, 0, 1, 0}), bin};
  EXPECT_EQ(Values(Interpret(g, override_form)[0]), (V{0, 0, 102}));
  // An empty tensor for a parameter without data is an error.
  std::vector<Tensor> missing = {Tensor(), Tensor(), bin};
  EXPECT_THROW(Interpret(g, missing), UserError);
  std::vector<Tensor> random = RandomInputs(g, 1);
  ASSERT_EQ(random.size(), 3u);
  EXPECT_EQ(Values(random[1]), (V{1, 0, 0, 1, 1, 1}));

  Graph seed = SmallSeed();
  std::vector<Tensor> r1 = RandomInputs(seed, 7), r2 = RandomInputs(seed, 7),
                      r3 = RandomInputs(seed, 8);
  ASSERT_EQ(r1.size(), 3u);
  EXPECT_EQ(Values(r1[0]), Values(r2[0]));
  EXPECT_NE(Values(r1[0]), Values(r1[1]));  // parameters differ from each other
  EXPECT_NE(Values(r1[0]), Values(r3[0]));  // and across seeds
  for (double v : Values(r1[2])) {
    EXPECT_GE(v, -1.0);
    EXPECT_LT(v, 1.0);
  }
}

TEST(Interpreter, PerturbedMovesEveryValueByAtMostOneUlp) {
  // negative(x) then x' + w where w carries data: every node's float32 value may move by one ulp,
  // the weights and the inputs never do, an infinity stays one.
  GraphBuilder builder;
  ValueId x = builder.AddParam("x", F32({4096}));
  Tensor weights = Tensor::Random(F32({4096}), 3);
  ValueId w = builder.AddParamWithData("w", weights);
  ValueId negated = builder.AddNode("negative", {x}, {});
  builder.SetOutputs({negated, builder.AddNode("add", {negated, w}, {})}, true);
  Graph g = std::move(builder).Build();
  Tensor in = Tensor::Random(F32({4096}), 5);
  in.Set(7, INFINITY);
  const std::vector<Tensor> inputs = {in};
  const std::vector<double> x_before = Values(in), w_before = Values(weights);
  const std::vector<Tensor> exact = Interpret(g, inputs);
  const std::vector<Tensor> moved = InterpretPerturbed(g, inputs, 1);
  ASSERT_EQ(moved.size(), 2u);
  int up = 0, down = 0;
  for (int64_t i = 0; i < 4096; ++i) {
    const float e = exact[0].as<float>()[i], m = moved[0].as<float>()[i];
    if (!std::isfinite(e)) {
      EXPECT_EQ(m, e) << i;
      continue;
    }
    up += m == std::nextafter(e, INFINITY);
    down += m == std::nextafter(e, -INFINITY);
    EXPECT_TRUE(m == e || m == std::nextafter(e, INFINITY) || m == std::nextafter(e, -INFINITY))
        << i << ": " << e << " became " << m;
  }
  // Each of down, none, up about a quarter or half of the elements.
  EXPECT_GT(up, 700);
  EXPECT_GT(down, 700);
  // The second output adds to the moved first: it differs by about an ulp of its own magnitude.
  EXPECT_GT(MaxAbsDifference(moved[1], exact[1]), 0);
  EXPECT_LT(MaxAbsDifference(moved[1], exact[1]), 1e-6);
  EXPECT_EQ(Values(in), x_before);
  EXPECT_EQ(Values(weights), w_before);
  // Deterministic by seed.
  EXPECT_EQ(MaxAbsDifference(InterpretPerturbed(g, inputs, 1)[1], moved[1]), 0);
  EXPECT_GT(MaxAbsDifference(InterpretPerturbed(g, inputs, 2)[1], moved[1]), 0);
}

}  // namespace
}  // namespace fusetune
