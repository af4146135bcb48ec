// The op catalog: every op of issue 2 is registered with its arity, attribute schema, fusion
// pattern and kind; attributes normalise; type inference broadcasts and reports errors clearly.
#include <gtest/gtest.h>

#include "ir/error.h"
#include "ir/op.h"

namespace fusetune {
namespace {

TensorType F32(Shape s) { return TensorType{DType::kFloat32, std::move(s)}; }
TensorType I32(Shape s) { return TensorType{DType::kInt32, std::move(s)}; }

// Infers `op` on `inputs` with `attrs` (normalised first).
TensorType Infer(const std::string& op, std::vector<TensorType> inputs, Attrs attrs = {}) {
  const OpDef* def = FindOp(op);
  EXPECT_NE(def, nullptr) << op;
  return def->infer(inputs, NormalizeAttrs(*def, attrs));
}

// The UserError message of inferring `op`, or "" when it succeeds.
std::string InferError(const std::string& op, std::vector<TensorType> inputs, Attrs attrs = {}) {
  try {
    Infer(op, std::move(inputs), std::move(attrs));
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

struct Expected {
  const char* name;
  OpPattern pattern;
  OpKind kind;
  int min_inputs, max_inputs;
};

TEST(OpCatalog, EveryOpHasItsPatternKindAndArity) {
  using P = OpPattern;
  using K = OpKind;
  const Expected expected[] = {
      {"add", P::kBroadcast, K::kElementwise, 2, 2},
      {"subtract", P::kBroadcast, K::kElementwise, 2, 2},
      {"multiply", P::kBroadcast, K::kElementwise, 2, 2},
      {"divide", P::kBroadcast, K::kElementwise, 2, 2},
      {"power", P::kBroadcast, K::kElementwise, 2, 2},
      {"maximum", P::kBroadcast, K::kElementwise, 2, 2},
      {"minimum", P::kBroadcast, K::kElementwise, 2, 2},
      {"negative", P::kElemWise, K::kElementwise, 1, 1},
      {"abs", P::kElemWise, K::kElementwise, 1, 1},
      {"exp", P::kElemWise, K::kElementwise, 1, 1},
      {"fast_exp", P::kElemWise, K::kElementwise, 1, 1},
      {"log", P::kElemWise, K::kElementwise, 1, 1},
      {"sqrt", P::kElemWise, K::kElementwise, 1, 1},
      {"rsqrt", P::kElemWise, K::kElementwise, 1, 1},
      {"tanh", P::kElemWise, K::kElementwise, 1, 1},
      {"fast_tanh", P::kElemWise, K::kElementwise, 1, 1},
      {"sigmoid", P::kElemWise, K::kElementwise, 1, 1},
      {"erf", P::kElemWise, K::kElementwise, 1, 1},
      {"nn.relu", P::kElemWise, K::kElementwise, 1, 1},
      {"clip", P::kElemWise, K::kElementwise, 1, 1},
      {"cast", P::kElemWise, K::kElementwise, 1, 1},
      {"ones_like", P::kElemWise, K::kElementwise, 1, 1},
      {"zeros_like", P::kElemWise, K::kElementwise, 1, 1},
      {"where", P::kBroadcast, K::kElementwise, 3, 3},
      {"nn.bias_add", P::kBroadcast, K::kElementwise, 2, 2},
      {"sum", P::kCommReduce, K::kReduce, 1, 1},
      {"max", P::kCommReduce, K::kReduce, 1, 1},
      {"min", P::kCommReduce, K::kReduce, 1, 1},
      {"mean", P::kCommReduce, K::kReduce, 1, 1},
      {"reshape", P::kInjective, K::kInjective, 1, 1},
      {"transpose", P::kInjective, K::kInjective, 1, 1},
      {"expand_dims", P::kBroadcast, K::kInjective, 1, 1},
      {"squeeze", P::kInjective, K::kInjective, 1, 1},
      {"broadcast_to", P::kBroadcast, K::kInjective, 1, 1},
      {"strided_slice", P::kInjective, K::kInjective, 1, 1},
      {"concatenate", P::kInjective, K::kInjective, 1, -1},
      {"nn.dense", P::kOutEWiseFusable, K::kMatmul, 2, 2},
      {"nn.batch_matmul", P::kOutEWiseFusable, K::kMatmul, 2, 2},
      {"nn.matmul", P::kOutEWiseFusable, K::kMatmul, 2, 2},
      {"nn.softmax", P::kOpaque, K::kComposite, 1, 1},
      {"nn.layer_norm", P::kOpaque, K::kComposite, 3, 3},
  };
  EXPECT_EQ(AllOps().size(), std::size(expected));
  for (const Expected& e : expected) {
    const OpDef* def = FindOp(e.name);
    ASSERT_NE(def, nullptr) << e.name;
    EXPECT_EQ(def->pattern, e.pattern) << e.name;
    EXPECT_EQ(def->kind, e.kind) << e.name;
    EXPECT_EQ(def->min_inputs, e.min_inputs) << e.name;
    EXPECT_EQ(def->max_inputs, e.max_inputs) << e.name;
    EXPECT_TRUE(def->infer != nullptr) << e.name;
    EXPECT_TRUE(def->flops != nullptr) << e.name;
    if (def->kind == OpKind::kElementwise) {
      EXPECT_TRUE(def->scalar && def->access) << e.name;
    }
    if (def->kind == OpKind::kInjective) {
      EXPECT_TRUE(def->access != nullptr) << e.name;
    }
    if (def->kind == OpKind::kMatmul) {
      EXPECT_TRUE(def->matmul != nullptr) << e.name;
    }
  }
  EXPECT_TRUE(FindOp("concatenate")->tuple_input);
  EXPECT_EQ(FindOp("nn.conv2d"), nullptr);
  EXPECT_EQ(PatternName(OpPattern::kOutEWiseFusable), "OutEWiseFusable");
}

TEST(NormalizeAttrs, FillsDefaultsInSchemaOrder) {
  const OpDef& bmm = *FindOp("nn.batch_matmul");
  Attrs a = NormalizeAttrs(bmm, Attrs({{"transpose_a", true}}));
  ASSERT_EQ(a.items().size(), 3u);
  EXPECT_EQ(a.items()[0].first, "out_dtype");
  EXPECT_EQ(a.GetString("out_dtype"), "");
  EXPECT_TRUE(a.GetBool("transpose_a"));
  EXPECT_TRUE(a.GetBool("transpose_b"));  // the seed's meaning: x . y^T
  // Two spellings of the same call normalise equal.
  EXPECT_EQ(NormalizeAttrs(bmm, Attrs({{"transpose_b", true}, {"transpose_a", false}})),
            NormalizeAttrs(bmm, {}));

  const OpDef& ln = *FindOp("nn.layer_norm");
  Attrs l = NormalizeAttrs(ln, Attrs({{"epsilon", int64_t{1}}}));  // ints accepted as floats
  EXPECT_EQ(l.GetFloat("epsilon"), 1.0);
  EXPECT_EQ(l.GetInt("axis"), -1);
  EXPECT_EQ(NormalizeAttrs(ln, {}).GetFloat("epsilon"), 1e-5);

  const OpDef& sum = *FindOp("sum");
  EXPECT_TRUE(NormalizeAttrs(sum, {}).IsNone("axis"));
  EXPECT_EQ(NormalizeAttrs(sum, Attrs({{"axis", int64_t{-1}}})).GetIntList("axis"), (IntList{-1}));
}

std::string AttrError(const std::string& op, Attrs attrs) {
  try {
    NormalizeAttrs(*FindOp(op), attrs);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(NormalizeAttrs, ReportsUnknownWrongAndMissing) {
  EXPECT_EQ(AttrError("nn.softmax", Attrs({{"axes", int64_t{1}}})),
            "nn.softmax has no attribute 'axes' (it has: axis)");
  EXPECT_EQ(AttrError("exp", Attrs({{"axis", int64_t{1}}})),
            "exp has no attribute 'axis' (it has: none)");
  EXPECT_EQ(AttrError("transpose", Attrs({{"axes", 1.5}})),
            "transpose: attribute 'axes' must be a list of ints, got 1.5f");
  EXPECT_EQ(AttrError("nn.layer_norm", Attrs({{"center", int64_t{1}}})),
            "nn.layer_norm: attribute 'center' must be True or False, got 1");
  EXPECT_EQ(AttrError("concatenate", Attrs({{"axis", std::string("x")}})),
            "concatenate: attribute 'axis' must be an int, got \"x\"");
  EXPECT_EQ(AttrError("reshape", {}), "reshape: missing required attribute 'newshape'");
  EXPECT_EQ(AttrError("cast", {}), "cast: missing required attribute 'dtype'");
  EXPECT_EQ(AttrError("clip", Attrs({{"a_min", 0.0}})), "clip: missing required attribute 'a_max'");
  EXPECT_EQ(AttrError("nn.softmax", Attrs({{"axis", int64_t{1}}, {"axis", int64_t{2}}})),
            "nn.softmax: attribute 'axis' is given twice");
}

TEST(TypeInference, BroadcastsLikeNumpy) {
  EXPECT_EQ(Infer("add", {F32({2, 3}), F32({3})}), F32({2, 3}));
  EXPECT_EQ(Infer("add", {F32({4, 1, 5}), F32({3, 1})}), F32({4, 3, 5}));
  EXPECT_EQ(Infer("multiply", {F32({}), F32({7})}), F32({7}));
  EXPECT_EQ(Infer("subtract", {F32({100, 120, 120}), F32({100, 120, 1})}), F32({100, 120, 120}));
  EXPECT_EQ(Infer("where", {F32({12, 256, 256}), F32({12, 256, 256}), F32({1})}),
            F32({12, 256, 256}));
  EXPECT_EQ(Infer("where", {TensorType{DType::kBool, {3, 1}}, I32({1, 4}), I32({})}), I32({3, 4}));
  EXPECT_EQ(InferError("add", {F32({2, 3}), F32({4})}),
            "add: cannot broadcast Tensor[(2, 3), float32] with Tensor[(4,), float32]");
  EXPECT_EQ(InferError("where", {F32({2, 3}), F32({3}), F32({2, 1, 2})}),
            "where: cannot broadcast Tensor[(2, 3), float32] with Tensor[(2, 1, 2), float32]");
  EXPECT_EQ(InferError("add", {F32({3}), I32({3})}),
            "add: operand dtypes differ: Tensor[(3,), float32] and Tensor[(3,), int32]");
  EXPECT_EQ(InferError("exp", {I32({3})}),
            "exp: expects a float32 tensor, got Tensor[(3,), int32]");
}

TEST(TypeInference, ElementwiseSpecials) {
  EXPECT_EQ(Infer("cast", {F32({2})}, Attrs({{"dtype", std::string("int32")}})), I32({2}));
  EXPECT_EQ(InferError("cast", {F32({2})}, Attrs({{"dtype", std::string("float64")}})),
            "cast: unknown dtype \"float64\" (known: float32, int32, bool, float16, bfloat16)");
  EXPECT_EQ(Infer("ones_like", {I32({2, 2})}), I32({2, 2}));
  EXPECT_EQ(Infer("nn.bias_add", {F32({2, 3, 4}), F32({3})}), F32({2, 3, 4}));
  EXPECT_EQ(Infer("nn.bias_add", {F32({2, 3, 4}), F32({4})}, Attrs({{"axis", int64_t{-1}}})),
            F32({2, 3, 4}));
  EXPECT_EQ(InferError("nn.bias_add", {F32({2, 3, 4}), F32({4})}),
            "nn.bias_add: bias Tensor[(4,), float32] must have shape (3,) to match axis 1 of "
            "Tensor[(2, 3, 4), float32]");
  EXPECT_EQ(Infer("clip", {F32({5})}, Attrs({{"a_min", 0.0}, {"a_max", int64_t{6}}})), F32({5}));
}

TEST(TypeInference, Reductions) {
  Attrs axis1({{"axis", IntList{1}}});
  EXPECT_EQ(Infer("sum", {F32({2, 3, 4})}), F32({}));
  EXPECT_EQ(Infer("sum", {F32({2, 3, 4})}, axis1), F32({2, 4}));
  EXPECT_EQ(Infer("max", {F32({2, 3, 4})}, Attrs({{"axis", IntList{-1}}, {"keepdims", true}})),
            F32({2, 3, 1}));
  EXPECT_EQ(Infer("mean", {F32({2, 3, 4})}, Attrs({{"axis", IntList{1}}, {"exclude", true}})),
            F32({3}));
  EXPECT_EQ(Infer("min", {F32({2, 3, 4})}, Attrs({{"axis", IntList{0, 2}}})), F32({3}));
  EXPECT_EQ(InferError("sum", {F32({2, 3})}, Attrs({{"axis", IntList{2}}})),
            "sum: axis 2 is out of range for a tensor of rank 2 (valid: -2 to 1)");
  EXPECT_EQ(InferError("sum", {F32({2, 3})}, Attrs({{"axis", IntList{1, -1}}})),
            "sum: axis -1 appears twice");
  EXPECT_EQ(
      ReduceAxes(F32({2, 3, 4}),
                 NormalizeAttrs(*FindOp("sum"), Attrs({{"axis", IntList{1}}, {"exclude", true}}))),
      (std::vector<int>{0, 2}));
}

TEST(TypeInference, Injective) {
  auto newshape = [](IntList s) { return Attrs({{"newshape", s}}); };
  EXPECT_EQ(Infer("reshape", {F32({2, 3, 4})}, newshape({6, -1})), F32({6, 4}));
  EXPECT_EQ(Infer("reshape", {F32({2, 3, 4})}, newshape({0, -1})), F32({2, 12}));
  EXPECT_EQ(Infer("reshape", {F32({2, 3, 4})}, newshape({0, 0, 2, 2})), F32({2, 3, 2, 2}));
  EXPECT_EQ(
      Infer("reshape", {F32({0, 3})}, Attrs({{"newshape", IntList{0, 5}}, {"allowzero", true}})),
      F32({0, 5}));
  EXPECT_EQ(InferError("reshape", {F32({2, 3})}, newshape({0, 0, 0})),
            "reshape: newshape code 0 at position 2 copies a dimension that Tensor[(2, 3), "
            "float32] does not have");
  EXPECT_EQ(InferError("reshape", {F32({2, 3})}, newshape({4, 2})),
            "reshape: cannot reshape Tensor[(2, 3), float32] (6 elements) to (4, 2) (8 elements)");
  EXPECT_EQ(InferError("reshape", {F32({2, 3})}, newshape({-1, -1})),
            "reshape: newshape may contain -1 only once");
  EXPECT_EQ(InferError("reshape", {F32({2, 3})}, newshape({-2})),
            "reshape: newshape code -2 is not supported (supported: positive sizes, 0 and -1)");

  EXPECT_EQ(Infer("transpose", {F32({2, 3, 4})}), F32({4, 3, 2}));
  EXPECT_EQ(Infer("transpose", {F32({2, 3, 4})}, Attrs({{"axes", IntList{0, 2, 1}}})),
            F32({2, 4, 3}));
  EXPECT_EQ(Infer("transpose", {F32({2, 3, 4})}, Attrs({{"axes", IntList{0, -1, 1}}})),
            F32({2, 4, 3}));
  EXPECT_EQ(
      InferError("transpose", {F32({2, 3, 4})}, Attrs({{"axes", IntList{0, 1}}})),
      "transpose: axes [0, 1] must list each of the 3 axes of Tensor[(2, 3, 4), float32] once");

  EXPECT_EQ(Infer("expand_dims", {F32({2, 3})}, Attrs({{"axis", int64_t{1}}})), F32({2, 1, 3}));
  EXPECT_EQ(Infer("expand_dims", {F32({2, 3})},
                  Attrs({{"axis", int64_t{-1}}, {"num_newaxis", int64_t{2}}})),
            F32({2, 3, 1, 1}));
  EXPECT_EQ(Infer("squeeze", {F32({1, 3, 1})}), F32({3}));
  EXPECT_EQ(Infer("squeeze", {F32({1, 3, 1})}, Attrs({{"axis", IntList{-1}}})), F32({1, 3}));
  EXPECT_EQ(InferError("squeeze", {F32({1, 3, 1})}, Attrs({{"axis", IntList{1}}})),
            "squeeze: cannot squeeze axis 1 of Tensor[(1, 3, 1), float32]: its size is not 1");
  EXPECT_EQ(Infer("broadcast_to", {F32({3, 1})}, Attrs({{"shape", IntList{2, 3, 4}}})),
            F32({2, 3, 4}));
  EXPECT_EQ(InferError("broadcast_to", {F32({3, 2})}, Attrs({{"shape", IntList{3, 4}}})),
            "broadcast_to: cannot broadcast Tensor[(3, 2), float32] to shape (3, 4)");

  auto slice = [](IntList b, IntList e, AttrValue s = NoneAttr{}) {
    return Attrs({{"begin", b}, {"end", e}, {"strides", s}});
  };
  EXPECT_EQ(Infer("strided_slice", {F32({10, 6})}, slice({2, 1}, {8, 5})), F32({6, 4}));
  EXPECT_EQ(Infer("strided_slice", {F32({10, 6})}, slice({0}, {10}, IntList{3})), F32({4, 6}));
  EXPECT_EQ(Infer("strided_slice", {F32({10, 6})}, slice({-3}, {2147483647})), F32({3, 6}));
  EXPECT_EQ(Infer("strided_slice", {F32({10, 6})}, slice({9}, {-11}, IntList{-2})), F32({5, 6}));
  EXPECT_EQ(Infer("strided_slice", {F32({10, 6})}, slice({5}, {2})), F32({0, 6}));
  EXPECT_EQ(Infer("strided_slice", {F32({10, 6})},
                  Attrs({{"begin", IntList{1}}, {"end", IntList{2}}, {"axes", IntList{1}}})),
            F32({10, 1}));
  EXPECT_EQ(Infer("strided_slice", {F32({10, 6})},
                  Attrs({{"begin", IntList{1, 2}},
                         {"end", IntList{-1, 3}},
                         {"slice_mode", std::string("size")}})),
            F32({9, 3}));

  EXPECT_EQ(Infer("concatenate", {F32({2, 3}), F32({4, 3})}), F32({6, 3}));
  EXPECT_EQ(
      Infer("concatenate", {F32({2, 3}), F32({2, 1}), F32({2, 2})}, Attrs({{"axis", int64_t{-1}}})),
      F32({2, 6}));
  EXPECT_EQ(
      InferError("concatenate", {F32({2, 3}), F32({2, 4})}),
      "concatenate: input 1 Tensor[(2, 4), float32] does not match input 0 Tensor[(2, 3), float32] "
      "except along axis 0");
}

// A reshape's index map reads every output position at the input's row-major position, and keeps
// the trailing axes both shapes share as plain variables (the code generator's unit-stride lanes).
TEST(IndexMaps, ReshapeReadsTheSamePositionAndKeepsSharedTrailingAxes) {
  const OpDef& reshape = *FindOp("reshape");
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{4, 1, 6}, {4, 6}}, {{4, 6}, {1, 4, 6}}, {{2, 3, 4}, {6, 4}}, {{2, 3, 4}, {3, 8}},
      {{5, 7}, {35}},      {{12, 64}, {768}},   {{3, 1}, {1, 3, 1}}};
  for (const auto& [in, out] : cases) {
    const Attrs attrs = NormalizeAttrs(reshape, Attrs({{"newshape", IntList(out)}}));
    const std::vector<TensorType> ins = {F32(in)};
    const TensorType out_type = reshape.infer(ins, attrs);
    const AccessMap map = reshape.access(ins, out_type, attrs);
    const std::vector<IndexExpr>& index = map.inputs[0].index;
    ASSERT_EQ(index.size(), in.size());
    if (in.back() == out.back()) {
      EXPECT_EQ(index.back()->op, IndexOp::kVar) << FormatIndex(index.back());
      EXPECT_EQ(index.back()->var, static_cast<int>(out.size()) - 1);
    }
    const std::vector<int64_t> out_strides = RowMajorStrides(out), in_strides = RowMajorStrides(in);
    const int64_t n = out_type.NumElements();
    for (int64_t flat = 0; flat < n; ++flat) {
      std::vector<int64_t> coords(out.size());
      for (size_t d = 0; d < out.size(); ++d) coords[d] = flat / out_strides[d] % out[d];
      int64_t read = 0;
      for (size_t d = 0; d < in.size(); ++d) read += EvalIndex(index[d], coords) * in_strides[d];
      ASSERT_EQ(read, flat) << "reshape " << F32(in).ToString() << " to " << out_type.ToString();
    }
  }
}

TEST(TypeInference, Anchors) {
  EXPECT_EQ(Infer("nn.dense", {F32({128, 768}), F32({3072, 768})}), F32({128, 3072}));
  EXPECT_EQ(
      Infer("nn.dense", {F32({2, 128, 768}), F32({64, 768})}, Attrs({{"units", int64_t{64}}})),
      F32({2, 128, 64}));
  EXPECT_EQ(
      InferError("nn.dense", {F32({128, 768}), F32({64, 760})}),
      "nn.dense: reduction dimensions differ: data Tensor[(128, 768), float32] has k=768, weight "
      "Tensor[(64, 760), float32] has k=760");
  EXPECT_EQ(InferError("nn.dense", {F32({4, 8}), F32({16, 8})}, Attrs({{"units", int64_t{15}}})),
            "nn.dense: units=15 but weight Tensor[(16, 8), float32] has 16 rows");
  // The seed: x[12,256,64] . y[12,256,64]^T
  EXPECT_EQ(Infer("nn.batch_matmul", {F32({12, 256, 64}), F32({12, 256, 64})}),
            F32({12, 256, 256}));
  EXPECT_EQ(Infer("nn.batch_matmul", {F32({12, 256, 64}), F32({12, 64, 32})},
                  Attrs({{"transpose_b", false}})),
            F32({12, 256, 32}));
  EXPECT_EQ(Infer("nn.batch_matmul", {F32({12, 64, 256}), F32({12, 32, 64})},
                  Attrs({{"transpose_a", true}})),
            F32({12, 256, 32}));
  EXPECT_EQ(
      InferError("nn.batch_matmul", {F32({12, 256, 64}), F32({12, 64, 32})}),
      "nn.batch_matmul: reduction dimensions differ: Tensor[(12, 256, 64), float32] has k=64, "
      "Tensor[(12, 64, 32), float32] has k=32 (transpose_a=False, transpose_b=True)");
  EXPECT_EQ(Infer("nn.matmul", {F32({5, 7}), F32({7, 3})}), F32({5, 3}));
  EXPECT_EQ(Infer("nn.matmul", {F32({7, 5}), F32({3, 7})},
                  Attrs({{"transpose_a", true}, {"transpose_b", true}})),
            F32({5, 3}));
  EXPECT_EQ(
      Infer("nn.dense", {I32({2, 3}), I32({4, 3})}, Attrs({{"out_dtype", std::string("float32")}})),
      F32({2, 4}));

  MatmulLayout l = FindOp("nn.batch_matmul")
                       ->matmul(std::vector<TensorType>{F32({12, 256, 64}), F32({12, 256, 64})},
                                NormalizeAttrs(*FindOp("nn.batch_matmul"), {}));
  EXPECT_TRUE(l.batched);
  EXPECT_TRUE(l.transpose_b);
  EXPECT_EQ(l.batch, 12);
  EXPECT_EQ(l.m, 256);
  EXPECT_EQ(l.n, 256);
  EXPECT_EQ(l.k, 64);

  EXPECT_EQ(Infer("nn.softmax", {F32({2, 5})}), F32({2, 5}));
  EXPECT_EQ(InferError("nn.softmax", {F32({2, 5})}, Attrs({{"axis", int64_t{2}}})),
            "nn.softmax: axis 2 is out of range for a tensor of rank 2 (valid: -2 to 1)");
  EXPECT_EQ(Infer("nn.layer_norm", {F32({2, 5}), F32({5}), F32({5})}), F32({2, 5}));
  EXPECT_EQ(InferError("nn.layer_norm", {F32({2, 5}), F32({4}), F32({5})}),
            "nn.layer_norm: gamma Tensor[(4,), float32] must have shape (5,) to match axis 1 of "
            "Tensor[(2, 5), float32]");
}

TEST(OpCatalog, Flops) {
  auto flops = [](const std::string& op, std::vector<TensorType> in, Attrs attrs = {}) {
    const OpDef* def = FindOp(op);
    Attrs a = NormalizeAttrs(*def, attrs);
    TensorType out = def->infer(in, a);
    return def->flops(in, out, a);
  };
  EXPECT_EQ(flops("add", {F32({2, 3}), F32({3})}), 6.0);
  EXPECT_EQ(flops("clip", {F32({10})}, Attrs({{"a_min", 0.0}, {"a_max", 1.0}})), 20.0);
  EXPECT_EQ(flops("ones_like", {F32({10})}), 0.0);
  EXPECT_EQ(flops("nn.batch_matmul", {F32({12, 256, 64}), F32({12, 256, 64})}),
            2.0 * 12 * 256 * 256 * 64);
  EXPECT_EQ(flops("sum", {F32({4, 5})}), 20.0);
  EXPECT_EQ(flops("transpose", {F32({4, 5})}), 0.0);
}

}  // namespace
}  // namespace fusetune
