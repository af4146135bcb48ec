// Reference semantics of every op on small hand-computed cases.
#include <cmath>

#include <gtest/gtest.h>

#include "ir/error.h"
#include "ir/op.h"

namespace fusetune {
namespace {

Tensor T(Shape shape, std::vector<double> values, DType dtype = DType::kFloat32) {
  Tensor t(TensorType{dtype, std::move(shape)});
  EXPECT_EQ(static_cast<int64_t>(values.size()), t.size());
  for (size_t i = 0; i < values.size(); ++i) t.Set(static_cast<int64_t>(i), values[i]);
  return t;
}

std::vector<double> Values(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.size(); ++i) v.push_back(t.Get(i));
  return v;
}

// Runs `op` through type inference and EvalOp.
Tensor Apply(const std::string& op, std::vector<Tensor> inputs, Attrs attrs = {}) {
  const OpDef* def = FindOp(op);
  EXPECT_NE(def, nullptr) << op;
  Attrs a = NormalizeAttrs(*def, attrs);
  std::vector<TensorType> types;
  std::vector<const Tensor*> ptrs;
  for (const Tensor& t : inputs) {
    types.push_back(t.type());
    ptrs.push_back(&t);
  }
  TensorType out = def->infer(types, a);
  Tensor r = EvalOp(*def, ptrs, out, a);
  EXPECT_EQ(r.type(), out);
  return r;
}

void ExpectNear(const Tensor& t, std::vector<double> expected, double tol = 1e-6) {
  ASSERT_EQ(t.size(), static_cast<int64_t>(expected.size()));
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(t.Get(static_cast<int64_t>(i)), expected[i], tol) << "element " << i;
  }
}

using V = std::vector<double>;

TEST(Eval, BinaryBroadcast) {
  Tensor a = T({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor row = T({3}, {10, 20, 30});
  Tensor col = T({2, 1}, {100, 200});
  EXPECT_EQ(Values(Apply("add", {a, row})), (V{11, 22, 33, 14, 25, 36}));
  EXPECT_EQ(Values(Apply("subtract", {a, col})), (V{-99, -98, -97, -196, -195, -194}));
  EXPECT_EQ(Values(Apply("multiply", {col, row})), (V{1000, 2000, 3000, 2000, 4000, 6000}));
  ExpectNear(Apply("divide", {a, T({}, {4})}), {0.25, 0.5, 0.75, 1, 1.25, 1.5});
  EXPECT_EQ(Values(Apply("power", {a, T({}, {2})})), (V{1, 4, 9, 16, 25, 36}));
  EXPECT_EQ(Values(Apply("maximum", {a, T({3}, {2, 2, 7})})), (V{2, 2, 7, 4, 5, 7}));
  EXPECT_EQ(Values(Apply("minimum", {a, T({3}, {2, 2, 7})})), (V{1, 2, 3, 2, 2, 6}));
  // Integer division truncates toward zero.
  Tensor i = T({4}, {7, -7, 6, -1}, DType::kInt32);
  EXPECT_EQ(Values(Apply("divide", {i, T({}, {2}, DType::kInt32)})), (V{3, -3, 3, 0}));
}

TEST(Eval, Unary) {
  Tensor x = T({4}, {-2, -0.5, 0.5, 2});
  EXPECT_EQ(Values(Apply("negative", {x})), (V{2, 0.5, -0.5, -2}));
  EXPECT_EQ(Values(Apply("abs", {x})), (V{2, 0.5, 0.5, 2}));
  EXPECT_EQ(Values(Apply("nn.relu", {x})), (V{0, 0, 0.5, 2}));
  Tensor p = T({3}, {0.25, 1, 4});
  ExpectNear(Apply("log", {p}), {std::log(0.25), 0, std::log(4)});
  ExpectNear(Apply("sqrt", {p}), {0.5, 1, 2});
  ExpectNear(Apply("rsqrt", {p}), {2, 1, 0.5});
  for (const char* op : {"exp", "fast_exp"})
    ExpectNear(Apply(op, {x}), {std::exp(-2), std::exp(-0.5), std::exp(0.5), std::exp(2)});
  for (const char* op : {"tanh", "fast_tanh"})
    ExpectNear(Apply(op, {x}), {std::tanh(-2), std::tanh(-0.5), std::tanh(0.5), std::tanh(2)});
  ExpectNear(Apply("sigmoid", {x}), {1 / (1 + std::exp(2)), 1 / (1 + std::exp(0.5)),
                                     1 / (1 + std::exp(-0.5)), 1 / (1 + std::exp(-2))});
  ExpectNear(Apply("erf", {x}), {std::erf(-2), std::erf(-0.5), std::erf(0.5), std::erf(2)});
  // Results are float32: exp(1) is stored rounded.
  EXPECT_EQ(Apply("exp", {T({}, {1})}).Get(0),
            static_cast<double>(static_cast<float>(std::exp(1.0))));
}

TEST(Eval, ClipCastLikeWhereBias) {
  Tensor x = T({5}, {-3, -0.5, 0.5, 3, 7});
  EXPECT_EQ(Values(Apply("clip", {x}, Attrs({{"a_min", -1.0}, {"a_max", int64_t{4}}}))),
            (V{-1, -0.5, 0.5, 3, 4}));
  Tensor c = Apply("cast", {x}, Attrs({{"dtype", std::string("int32")}}));
  EXPECT_EQ(c.dtype(), DType::kInt32);
  EXPECT_EQ(Values(c), (V{-3, 0, 0, 3, 7}));
  Tensor b = Apply("cast", {x}, Attrs({{"dtype", std::string("bool")}}));
  EXPECT_EQ(Values(b), (V{1, 1, 1, 1, 1}));
  EXPECT_EQ(Values(Apply("cast", {T({2}, {0, 5}, DType::kInt32)},
                         Attrs({{"dtype", std::string("float32")}}))),
            (V{0, 5}));

  Tensor ones = Apply("ones_like", {T({2}, {4, 5}, DType::kInt32)});
  EXPECT_EQ(ones.dtype(), DType::kInt32);
  EXPECT_EQ(Values(ones), (V{1, 1}));
  EXPECT_EQ(Values(Apply("zeros_like", {x})), (V{0, 0, 0, 0, 0}));

  // A float condition counts non-zero as true (the seed example).
  Tensor cond = T({2, 2}, {0, 0.5, -1, 0});
  EXPECT_EQ(Values(Apply("where", {cond, T({2, 2}, {1, 2, 3, 4}), T({}, {9})})), (V{9, 2, 3, 9}));
  Tensor bcond = T({2, 1}, {1, 0}, DType::kBool);
  EXPECT_EQ(Values(Apply("where", {bcond, T({3}, {1, 2, 3}), T({3}, {-1, -2, -3})})),
            (V{1, 2, 3, -1, -2, -3}));

  Tensor data = T({2, 3, 2}, {0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1});
  EXPECT_EQ(Values(Apply("nn.bias_add", {data, T({3}, {10, 20, 30})})),
            (V{10, 10, 20, 20, 30, 30, 11, 11, 21, 21, 31, 31}));
  EXPECT_EQ(Values(Apply("nn.bias_add", {data, T({2}, {5, 6})}, Attrs({{"axis", int64_t{-1}}}))),
            (V{5, 6, 5, 6, 5, 6, 6, 7, 6, 7, 6, 7}));
}

TEST(Eval, Reductions) {
  Tensor x = T({2, 3}, {1, 5, 3, -4, 2, 8});
  EXPECT_EQ(Values(Apply("sum", {x})), (V{15}));
  EXPECT_EQ(Values(Apply("sum", {x}, Attrs({{"axis", IntList{0}}}))), (V{-3, 7, 11}));
  EXPECT_EQ(Values(Apply("sum", {x}, Attrs({{"axis", IntList{-1}}, {"keepdims", true}}))),
            (V{9, 6}));
  EXPECT_EQ(Values(Apply("max", {x}, Attrs({{"axis", IntList{1}}}))), (V{5, 8}));
  EXPECT_EQ(Values(Apply("min", {x}, Attrs({{"axis", IntList{1}}}))), (V{1, -4}));
  EXPECT_EQ(Values(Apply("min", {x}, Attrs({{"axis", IntList{1}}, {"exclude", true}}))),
            (V{-4, 2, 3}));
  EXPECT_EQ(Values(Apply("mean", {x}, Attrs({{"axis", IntList{1}}}))), (V{3, 2}));
  EXPECT_EQ(Values(Apply("mean", {x})), (V{2.5}));
  Tensor y = T({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  EXPECT_EQ(Values(Apply("sum", {y}, Attrs({{"axis", IntList{0, 2}}}))), (V{14, 22}));
  EXPECT_EQ(Values(Apply("max", {y}, Attrs({{"axis", IntList{1}}, {"keepdims", true}}))),
            (V{3, 4, 7, 8}));
  // Accumulation in double: 1 + 1e8 copies of tiny values would drift in float; here 2^24 + 1 + 1.
  EXPECT_EQ(Values(Apply("sum", {T({3}, {16777216, 1, 1})})), (V{16777218}));
}

TEST(Eval, ReshapeTransposeExpandSqueeze) {
  Tensor x = T({2, 3}, {0, 1, 2, 3, 4, 5});
  Tensor r = Apply("reshape", {x}, Attrs({{"newshape", IntList{3, -1}}}));
  EXPECT_EQ(r.shape(), (Shape{3, 2}));
  EXPECT_EQ(Values(r), (V{0, 1, 2, 3, 4, 5}));
  Tensor t = Apply("transpose", {x});
  EXPECT_EQ(t.shape(), (Shape{3, 2}));
  EXPECT_EQ(Values(t), (V{0, 3, 1, 4, 2, 5}));
  Tensor y = T({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  EXPECT_EQ(Values(Apply("transpose", {y}, Attrs({{"axes", IntList{1, 0, 2}}}))),
            (V{0, 1, 4, 5, 2, 3, 6, 7}));
  EXPECT_EQ(Values(Apply("transpose", {y}, Attrs({{"axes", IntList{0, 2, 1}}}))),
            (V{0, 2, 1, 3, 4, 6, 5, 7}));
  // reshape of a transposed value: reshape reads in row-major order of its input.
  EXPECT_EQ(Values(Apply("reshape", {t}, Attrs({{"newshape", IntList{2, 3}}}))),
            (V{0, 3, 1, 4, 2, 5}));
  Tensor e = Apply("expand_dims", {x}, Attrs({{"axis", int64_t{1}}}));
  EXPECT_EQ(e.shape(), (Shape{2, 1, 3}));
  EXPECT_EQ(Values(e), Values(x));
  Tensor s = Apply("squeeze", {e});
  EXPECT_EQ(s.shape(), (Shape{2, 3}));
  EXPECT_EQ(Values(s), Values(x));
}

TEST(Eval, BroadcastToSliceConcat) {
  Tensor col = T({2, 1}, {1, 2});
  Tensor b = Apply("broadcast_to", {col}, Attrs({{"shape", IntList{2, 2, 3}}}));
  EXPECT_EQ(Values(b), (V{1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2}));

  Tensor x = T({3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  auto slice = [&](Attrs a) { return Values(Apply("strided_slice", {x}, a)); };
  EXPECT_EQ(slice(Attrs({{"begin", IntList{1, 1}}, {"end", IntList{3, 3}}})), (V{5, 6, 9, 10}));
  EXPECT_EQ(
      slice(Attrs({{"begin", IntList{0, 0}}, {"end", IntList{3, 4}}, {"strides", IntList{2, 3}}})),
      (V{0, 3, 8, 11}));
  // Negative stride walks backwards; -5 clamps to "before the start".
  EXPECT_EQ(
      slice(Attrs(
          {{"begin", IntList{-1, 3}}, {"end", IntList{-5, 0}}, {"strides", IntList{-1, -2}}})),
      (V{11, 9, 7, 5, 3, 1}));
  EXPECT_EQ(slice(Attrs({{"begin", IntList{1}}, {"end", IntList{100}}, {"axes", IntList{1}}})),
            (V{1, 2, 3, 5, 6, 7, 9, 10, 11}));
  EXPECT_EQ(slice(Attrs({{"begin", IntList{1, 2}},
                         {"end", IntList{1, -1}},
                         {"slice_mode", std::string("size")}})),
            (V{6, 7}));

  Tensor a = T({2, 2}, {1, 2, 3, 4});
  Tensor c = T({2, 1}, {5, 6});
  EXPECT_EQ(Values(Apply("concatenate", {a, c}, Attrs({{"axis", int64_t{1}}}))),
            (V{1, 2, 5, 3, 4, 6}));
  EXPECT_EQ(Values(Apply("concatenate", {a, T({1, 2}, {7, 8}), a})),
            (V{1, 2, 3, 4, 7, 8, 1, 2, 3, 4}));
}

TEST(Eval, Matmuls) {
  Tensor x = T({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor w = T({2, 3}, {1, 0, -1, 2, 1, 0});  // [n=2, k=3]
  EXPECT_EQ(Values(Apply("nn.dense", {x, w})), (V{-2, 4, -2, 13}));
  Tensor b = T({3, 2}, {1, 2, 0, 1, -1, 0});  // [k=3, n=2]
  EXPECT_EQ(Values(Apply("nn.matmul", {x, b})), (V{-2, 4, -2, 13}));
  EXPECT_EQ(Values(Apply("nn.matmul", {x, w}, Attrs({{"transpose_b", true}}))), (V{-2, 4, -2, 13}));
  Tensor xt = T({3, 2}, {1, 4, 2, 5, 3, 6});  // x transposed
  EXPECT_EQ(Values(Apply("nn.matmul", {xt, b}, Attrs({{"transpose_a", true}}))),
            (V{-2, 4, -2, 13}));

  // batch 2: batch 0 = x . w^T, batch 1 = identity-ish
  Tensor bx = T({2, 2, 3}, {1, 2, 3, 4, 5, 6, 1, 0, 0, 0, 1, 0});
  Tensor by = T({2, 2, 3}, {1, 0, -1, 2, 1, 0, 7, 8, 9, 1, 2, 3});
  EXPECT_EQ(Values(Apply("nn.batch_matmul", {bx, by})), (V{-2, 4, -2, 13, 7, 1, 8, 2}));
  Tensor byt = T({2, 3, 2}, {1, 2, 0, 1, -1, 0, 7, 1, 8, 2, 9, 3});  // by transposed per batch
  EXPECT_EQ(Values(Apply("nn.batch_matmul", {bx, byt}, Attrs({{"transpose_b", false}}))),
            (V{-2, 4, -2, 13, 7, 1, 8, 2}));
  Tensor bxt = T({2, 3, 2}, {1, 4, 2, 5, 3, 6, 1, 0, 0, 1, 0, 0});
  EXPECT_EQ(Values(Apply("nn.batch_matmul", {bxt, by}, Attrs({{"transpose_a", true}}))),
            (V{-2, 4, -2, 13, 7, 1, 8, 2}));
}

TEST(Eval, MatmulsWithTilesEdgesAndBlocks) {
  // m = 7 (a tile of 4 rows and 3 edge rows), n = 150 (a block of 128 and one of 22; 16-wide
  // tiles and a 6-column edge), k = 300 (blocks of 256 and 44), every transpose: small integers,
  // so the double product is exact and equals a plain triple loop's.
  const int64_t m = 7, n = 150, k = 300;
  auto value = [](int64_t i, int64_t j, int seed) {
    return double((i * 7 + j * 3 + seed) % 11) - 5;
  };
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      Tensor a(TensorType{DType::kFloat32, ta ? Shape{k, m} : Shape{m, k}});
      Tensor b(TensorType{DType::kFloat32, tb ? Shape{n, k} : Shape{k, n}});
      for (int64_t i = 0; i < m; ++i)
        for (int64_t kk = 0; kk < k; ++kk) a.Set(ta ? kk * m + i : i * k + kk, value(i, kk, 1));
      for (int64_t kk = 0; kk < k; ++kk)
        for (int64_t j = 0; j < n; ++j) b.Set(tb ? j * k + kk : kk * n + j, value(kk, j, 2));
      const Tensor c =
          Apply("nn.matmul", {a, b}, Attrs({{"transpose_a", ta}, {"transpose_b", tb}}));
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          double want = 0;
          for (int64_t kk = 0; kk < k; ++kk) want += value(i, kk, 1) * value(kk, j, 2);
          ASSERT_EQ(c.Get(i * n + j), want)
              << "transpose_a " << ta << " transpose_b " << tb << " at " << i << ", " << j;
        }
      }
    }
  }
}

TEST(Eval, SoftmaxAndLayerNorm) {
  Tensor x = T({2, 3}, {1, 2, 3, 0, 0, 0});
  double z = std::exp(1) + std::exp(2) + std::exp(3);
  ExpectNear(Apply("nn.softmax", {x}),
             {std::exp(1) / z, std::exp(2) / z, std::exp(3) / z, 1. / 3, 1. / 3, 1. / 3});
  // Along axis 0: columns.
  double e1 = 1 / (1 + std::exp(-1)), e2 = 1 / (1 + std::exp(-2)), e3 = 1 / (1 + std::exp(-3));
  ExpectNear(Apply("nn.softmax", {x}, Attrs({{"axis", int64_t{0}}})),
             {e1, e2, e3, 1 - e1, 1 - e2, 1 - e3});
  // Large values do not overflow (max subtracted).
  ExpectNear(Apply("nn.softmax", {T({2}, {1000, 1000})}), {0.5, 0.5});

  Tensor d = T({2, 2}, {1, 3, 5, 5});
  Tensor gamma = T({2}, {2, 1});
  Tensor beta = T({2}, {0.5, -1});
  // Row 0: mean 2, var 1 -> (-1, 1) * (2, 1) + (0.5, -1); row 1: var 0 -> 0 * gamma + beta.
  double s = 1 / std::sqrt(1 + 1e-5);
  ExpectNear(Apply("nn.layer_norm", {d, gamma, beta}), {-2 * s + 0.5, s - 1, 0.5, -1}, 1e-6);
  ExpectNear(Apply("nn.layer_norm", {d, gamma, beta}, Attrs({{"center", false}, {"scale", false}})),
             {-s, s, 0, 0});
  // axis 0 with epsilon 0: columns (1,5) and (3,5) both normalise to (-1, 1); gamma and beta
  // are indexed along axis 0, so row 0 gets 2x+0.5 and row 1 gets x-1.
  ExpectNear(
      Apply("nn.layer_norm", {d, gamma, beta}, Attrs({{"axis", int64_t{0}}, {"epsilon", 0.0}})),
      {-1.5, -1.5, 0, 0});
}

TEST(Eval, ScalarsAndEmptyTensors) {
  EXPECT_EQ(Values(Apply("add", {T({}, {2}), T({}, {3})})), (V{5}));
  EXPECT_EQ(Values(Apply("multiply", {T({}, {2}), T({3}, {1, 2, 3})})), (V{2, 4, 6}));
  Tensor empty = Apply("exp", {T({0, 3}, {})});
  EXPECT_EQ(empty.shape(), (Shape{0, 3}));
  EXPECT_EQ(Apply("sum", {T({0, 3}, {})}, Attrs({{"axis", IntList{0}}})).shape(), (Shape{3}));
  EXPECT_EQ(Values(Apply("sum", {T({0, 3}, {})}, Attrs({{"axis", IntList{0}}}))), (V{0, 0, 0}));
  // Reductions over no axes (axis=[]) copy; exclude=True with axis=[] reduces everything.
  EXPECT_EQ(Values(Apply("sum", {T({2}, {1, 2})}, Attrs({{"axis", IntList{}}}))), (V{1, 2}));
  EXPECT_EQ(Values(Apply("sum", {T({2}, {1, 2})}, Attrs({{"axis", IntList{}}, {"exclude", true}}))),
            (V{3}));
}

TEST(Eval, RefusesUnsupportedDtypes) {
  Tensor h(TensorType{DType::kFloat16, {2}});
  const OpDef* exp = FindOp("exp");
  const Tensor* in[] = {&h};
  EXPECT_THROW(EvalOp(*exp, in, h.type(), {}), UserError);
}

}  // namespace
}  // namespace fusetune

namespace fusetune {
namespace {

// Reads the output of a single-input injective op through its access map, element by element
// with EvalIndex: the meaning kernels use. Must agree with EvalOp (reshape evaluates by copy).
Tensor ThroughAccessMap(const std::string& op, const Tensor& in, Attrs attrs) {
  const OpDef* def = FindOp(op);
  Attrs a = NormalizeAttrs(*def, attrs);
  std::vector<TensorType> types{in.type()};
  TensorType out = def->infer(types, a);
  AccessMap map = def->access(types, out, a);
  Tensor result(out);
  std::vector<int64_t> in_strides = RowMajorStrides(in.shape());
  std::vector<int64_t> out_strides = RowMajorStrides(out.shape);
  std::vector<int64_t> coords(out.rank());
  for (int64_t flat = 0; flat < out.NumElements(); ++flat) {
    for (int d = 0; d < out.rank(); ++d) coords[d] = flat / out_strides[d] % out.shape[d];
    int64_t at = 0;
    for (int j = 0; j < in.type().rank(); ++j)
      at += EvalIndex(map.inputs[0].index[j], coords) * in_strides[j];
    result.Set(flat, in.Get(at));
  }
  return result;
}

TEST(Eval, AccessMapsAgreeWithEval) {
  Tensor x = Tensor::Random(TensorType{DType::kFloat32, {4, 6, 5}}, 11);
  struct Case {
    const char* op;
    Attrs attrs;
  };
  const Case cases[] = {
      {"reshape", Attrs({{"newshape", IntList{6, -1}}})},
      {"reshape", Attrs({{"newshape", IntList{0, 5, 6}}})},
      {"reshape", Attrs({{"newshape", IntList{2, 2, 3, 1, 10}}})},
      {"transpose", Attrs({{"axes", IntList{2, 0, 1}}})},
      {"expand_dims", Attrs({{"axis", int64_t{-2}}, {"num_newaxis", int64_t{2}}})},
      {"broadcast_to", Attrs({{"shape", IntList{3, 4, 6, 5}}})},
      {"strided_slice", Attrs({{"begin", IntList{3, 1, -1}},
                               {"end", IntList{0, 6, -6}},
                               {"strides", IntList{-2, 2, -1}}})},
  };
  for (const Case& c : cases) {
    Tensor expected = ThroughAccessMap(c.op, x, c.attrs);
    Tensor actual = Apply(c.op, {x}, c.attrs);
    EXPECT_EQ(MaxAbsDifference(expected, actual), 0.0) << c.op;
  }
  // The reshape map unravels the flat index with floordiv/mod.
  const OpDef* reshape = FindOp("reshape");
  Attrs a = NormalizeAttrs(*reshape, Attrs({{"newshape", IntList{30, 4}}}));
  std::vector<TensorType> types{TensorType{DType::kFloat32, {4, 6, 5}}};
  AccessMap map = reshape->access(types, reshape->infer(types, a), a);
  EXPECT_EQ(FormatIndex(map.inputs[0].index[0]), "floordiv((i0*4 + i1), 30)");
  EXPECT_EQ(FormatIndex(map.inputs[0].index[2]), "floormod((i0*4 + i1), 5)");
}

}  // namespace
}  // namespace fusetune
