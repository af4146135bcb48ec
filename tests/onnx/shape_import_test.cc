// Shape computations fold at import; data movement becomes reshape / transpose / strided_slice /
// concatenate / expand_dims / squeeze / broadcast_to with the values ONNX defines.
#include <gtest/gtest.h>

#include "ir/interpreter.h"
#include "model_builder.h"

namespace fusetune::testing {
namespace {

std::vector<float> Run1(const Graph& g, const Tensor& x) {
  return Values(Interpret(g, std::vector<Tensor>{x}).at(0));
}

TEST(OnnxShapeFolding, ShapeGatherUnsqueezeConcatReshapeChainFoldsToOneReshape) {
  // What exporters emit for x.view(x.size(0), -1, 2): every int64 op is folded away.
  ModelBuilder m(13);
  m.Input("x", {2, 3, 2}).Output("y", {2, 3, 2});
  m.Node("Shape", {"x"}, {"s"});
  m.IntConstant("zero", {}, {0});
  m.Node("Gather", {"s", "zero"}, {"n"});
  m.IntConstant("axes", {1}, {0});
  m.Node("Unsqueeze", {"n", "axes"}, {"n1"});
  m.IntConstant("rest", {2}, {-1, 2});
  SetAttr(m.Node("Concat", {"n1", "rest"}, {"shape"}), "axis", int64_t{0});
  m.Node("Reshape", {"x", "shape"}, {"r"});
  m.Node("Relu", {"r"}, {"y"});
  Graph g = m.Import();
  EXPECT_EQ(OpNames(g), std::vector<std::string>{"nn.relu"});  // the reshape is a no-op
}

TEST(OnnxShapeFolding, PyTorchSplitOfAFusedProjectionFoldsToSlices) {
  // torch's MultiheadAttention: Shape -> Gather(-1) -> (+2) / 3 -> Mul -> Slice(last axis).
  ModelBuilder m(13);
  m.Input("qkv", {2, 6}).Output("q", {2, 2}).Output("k", {2, 2});
  m.Node("Shape", {"qkv"}, {"s"});
  m.IntConstant("last", {1}, {-1});
  SetAttr(m.Node("Gather", {"s", "last"}, {"d"}), "axis", int64_t{0});
  m.IntConstant("two", {1}, {2}).IntConstant("three", {1}, {3}).IntConstant("z", {1}, {0});
  m.Node("Add", {"d", "two"}, {"d2"});
  m.Node("Div", {"d2", "three"}, {"third"});  // (6 + 2) / 3 = 2 in integer division
  m.Node("Mul", {"third", "two"}, {"two_thirds"});
  m.Node("Slice", {"qkv", "z", "third", "last"}, {"q"});
  m.Node("Slice", {"qkv", "third", "two_thirds", "last"}, {"k"});
  Graph g = m.Import();
  EXPECT_EQ(OpNames(g), (std::vector<std::string>{"strided_slice", "strided_slice"}));
  const std::vector<float> r = Ramp(12);
  std::vector<Tensor> out = Interpret(g, std::vector<Tensor>{F32({2, 6}, r)});
  EXPECT_EQ(Values(out[0]), (std::vector<float>{r[0], r[1], r[6], r[7]}));
  EXPECT_EQ(Values(out[1]), (std::vector<float>{r[2], r[3], r[8], r[9]}));
}

TEST(OnnxShapeFolding, ConstantOfShapeRangeAndCastFold) {
  ModelBuilder m(13);
  m.Input("x", {3}).Output("y");
  m.IntConstant("shape", {1}, {3});
  m.Node("ConstantOfShape", {"shape"}, {"zeros"});  // float zeros by default
  m.IntConstant("start", {}, {1}).IntConstant("limit", {}, {7}).IntConstant("delta", {}, {2});
  m.Node("Range", {"start", "limit", "delta"}, {"r"});  // 1, 3, 5
  SetAttr(m.Node("Cast", {"r"}, {"rf"}), "to", int64_t{onnx::TensorProto::FLOAT});
  m.Node("Add", {"zeros", "rf"}, {"c"});
  m.Node("Mul", {"x", "c"}, {"y"});
  Graph g = m.Import();
  EXPECT_EQ(OpNames(g), std::vector<std::string>{"multiply"});
  EXPECT_EQ(Run1(g, F32({3}, {1, 1, 2})), (std::vector<float>{1, 3, 10}));
}

TEST(OnnxShapeOps, ReshapeCopiesZerosAndInfersMinusOne) {
  ModelBuilder m(14);
  m.Input("x", {2, 3, 4}).Output("y", {2, 12});
  m.IntConstant("shape", {2}, {0, -1});
  m.Node("Reshape", {"x", "shape"}, {"y"});
  Graph g = m.Import();
  ASSERT_EQ(OpNames(g), std::vector<std::string>{"reshape"});
  EXPECT_EQ(g.value(g.outputs()[0]).attrs.GetIntList("newshape"), (IntList{2, 12}));
}

TEST(OnnxShapeOps, TransposeMovesDataAndAUnitAxisMoveIsAReshape) {
  ModelBuilder m(13);
  m.Input("x", {2, 3}).Input("u", {1, 2, 3}).Output("y", {3, 2}).Output("v", {2, 1, 3});
  m.Node("Transpose", {"x"}, {"y"});  // default perm reverses
  SetAttr(m.Node("Transpose", {"u"}, {"v"}), "perm", std::vector<int64_t>{1, 0, 2});
  Graph g = m.Import();
  EXPECT_EQ(OpNames(g), (std::vector<std::string>{"transpose", "reshape"}));
  std::vector<Tensor> out =
      Interpret(g, std::vector<Tensor>{F32({2, 3}, {1, 2, 3, 4, 5, 6}), F32({1, 2, 3}, Ramp(6))});
  EXPECT_EQ(Values(out[0]), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(Values(out[1]), Ramp(6));
}

TEST(OnnxShapeOps, SliceWithStepsAndNegativeIndices) {
  ModelBuilder m(13);
  m.Input("x", {2, 5}).Output("y", {2, 2}).Output("r", {1, 5});
  m.IntConstant("s", {2}, {0, 1}).IntConstant("e", {2}, {INT64_MAX, -1});
  m.IntConstant("a", {2}, {0, 1}).IntConstant("st", {2}, {1, 2});
  m.Node("Slice", {"x", "s", "e", "a", "st"}, {"y"});  // x[:, 1:-1:2]
  // x[-1:, ::-1]: the reversed last row.
  m.IntConstant("s2", {2}, {-1, -1}).IntConstant("e2", {2}, {INT64_MAX, INT64_MIN});
  m.IntConstant("st2", {2}, {1, -1});
  m.Node("Slice", {"x", "s2", "e2", "a", "st2"}, {"r"});
  Graph g = m.Import();
  std::vector<float> x = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<Tensor> out = Interpret(g, std::vector<Tensor>{F32({2, 5}, x)});
  EXPECT_EQ(Values(out[0]), (std::vector<float>{1, 3, 6, 8}));
  EXPECT_EQ(Values(out[1]), (std::vector<float>{9, 8, 7, 6, 5}));
}

TEST(OnnxShapeOps, SliceBeforeOpset10TakesAttributes) {
  ModelBuilder m(9);
  m.Input("x", {4}).Output("y", {2});
  auto& node = m.Node("Slice", {"x"}, {"y"});
  SetAttr(node, "starts", std::vector<int64_t>{1});
  SetAttr(node, "ends", std::vector<int64_t>{3});
  Graph g = m.Import();
  EXPECT_EQ(Run1(g, F32({4}, {5, 6, 7, 8})), (std::vector<float>{6, 7}));
}

TEST(OnnxShapeOps, GatherOnRunTimeDataWithConstantIndices) {
  ModelBuilder m(13);
  m.Input("x", {3, 4}).Output("row").Output("cols").Output("pick");
  m.IntConstant("one", {}, {1});
  m.Node("Gather", {"x", "one"}, {"row"});  // scalar index drops the axis: x[1]
  m.IntConstant("even", {2}, {0, 2});
  SetAttr(m.Node("Gather", {"x", "even"}, {"cols"}), "axis", int64_t{1});  // x[:, [0, 2]]
  m.IntConstant("any", {3}, {2, -3, 2});
  m.Node("Gather", {"x", "any"}, {"pick"});  // x[[2, 0, 2]]
  Graph g = m.Import();
  std::vector<float> x = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  std::vector<Tensor> out = Interpret(g, std::vector<Tensor>{F32({3, 4}, x)});
  EXPECT_EQ(out[0].shape(), (Shape{4}));
  EXPECT_EQ(Values(out[0]), (std::vector<float>{4, 5, 6, 7}));
  EXPECT_EQ(Values(out[1]), (std::vector<float>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(Values(out[2]), (std::vector<float>{8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10, 11}));
}

TEST(OnnxShapeOps, ConcatOfRunTimeAndConstantParts) {
  ModelBuilder m(13);
  m.Input("x", {2, 1}).Output("y", {2, 3});
  m.Initializer("pad", {2, 2}, {7, 8, 9, 10});
  SetAttr(m.Node("Concat", {"x", "pad"}, {"y"}), "axis", int64_t{-1});
  Graph g = m.Import();
  EXPECT_EQ(OpNames(g), std::vector<std::string>{"concatenate"});
  EXPECT_EQ(Run1(g, F32({2, 1}, {1, 2})), (std::vector<float>{1, 7, 8, 2, 9, 10}));
}

TEST(OnnxShapeOps, UnsqueezeSqueezeFlattenExpand) {
  ModelBuilder m(13);
  m.Input("x", {3})
      .Output("u", {1, 3})
      .Output("uu", {1, 3, 1})
      .Output("s", {3})
      .Output("f", {1, 3})
      .Output("e", {2, 3});
  m.IntConstant("a0", {1}, {0}).IntConstant("a02", {2}, {0, -1});
  m.Node("Unsqueeze", {"x", "a0"}, {"u"});
  m.Node("Unsqueeze", {"x", "a02"}, {"uu"});
  m.Node("Squeeze", {"uu"}, {"s"});
  SetAttr(m.Node("Flatten", {"uu"}, {"f"}), "axis", int64_t{1});
  m.IntConstant("shape", {2}, {2, 1});
  m.Node("Expand", {"x", "shape"}, {"e"});
  Graph g = m.Import();
  EXPECT_EQ(OpNames(g), (std::vector<std::string>{"expand_dims", "reshape", "reshape", "reshape",
                                                  "broadcast_to"}));
  std::vector<Tensor> out = Interpret(g, std::vector<Tensor>{F32({3}, {1, 2, 3})});
  EXPECT_EQ(out[1].shape(), (Shape{1, 3, 1}));
  EXPECT_EQ(out[2].shape(), (Shape{3}));
  EXPECT_EQ(out[3].shape(), (Shape{1, 3}));
  EXPECT_EQ(Values(out[4]), (std::vector<float>{1, 2, 3, 1, 2, 3}));
}

TEST(OnnxShapeOps, UnsqueezeBeforeOpset13TakesAnAttribute) {
  ModelBuilder m(11);
  m.Input("x", {3}).Output("y", {3, 1});
  SetAttr(m.Node("Unsqueeze", {"x"}, {"y"}), "axes", std::vector<int64_t>{1});
  Graph g = m.Import();
  EXPECT_EQ(OpNames(g), std::vector<std::string>{"expand_dims"});
}

TEST(OnnxShapeOps, SplitIntoSizesAndEqualParts) {
  ModelBuilder m(13);
  m.Input("x", {6}).Output("a", {2}).Output("b", {4}).Output("p").Output("q").Output("r");
  m.IntConstant("sizes", {2}, {2, 4});
  m.Node("Split", {"x", "sizes"}, {"a", "b"});
  m.Node("Split", {"x"}, {"p", "q", "r"});
  Graph g = m.Import();
  std::vector<Tensor> out = Interpret(g, std::vector<Tensor>{F32({6}, {0, 1, 2, 3, 4, 5})});
  EXPECT_EQ(Values(out[0]), (std::vector<float>{0, 1}));
  EXPECT_EQ(Values(out[1]), (std::vector<float>{2, 3, 4, 5}));
  EXPECT_EQ(Values(out[3]), (std::vector<float>{2, 3}));
  EXPECT_EQ(Values(out[4]), (std::vector<float>{4, 5}));
}

TEST(OnnxShapeOps, ConstantAttributeKinds) {
  ModelBuilder m(13);
  m.Input("x", {2}).Output("y");
  auto& c = m.Node("Constant", {}, {"fs"});
  SetAttr(c, "value_float", 3.0f);
  m.Node("Mul", {"x", "fs"}, {"y"});
  Graph g = m.Import();
  EXPECT_EQ(Run1(g, F32({2}, {1, 2})), (std::vector<float>{3, 6}));
}

TEST(OnnxShapeOps, AWeightTransposedTwiceIsStoredOnce) {
  ModelBuilder m(13);
  m.Input("a", {1, 2}).Input("b", {1, 2}).Output("y");
  m.Initializer("w", {2, 2}, {1, 2, 3, 4});
  m.Node("MatMul", {"a", "w"}, {"ya"});
  m.Node("MatMul", {"b", "w"}, {"yb"});
  m.Node("Add", {"ya", "yb"}, {"y"});
  Graph g = m.Import();
  EXPECT_EQ(g.params().size(), 3u);
}

TEST(OnnxNames, ParameterNamesAreRelayIdentifiersAndUnique) {
  ModelBuilder m(13);
  m.Input("input.1", {1}).Input("onnx::x", {1}).Input("onnx__x", {1}).Input("0", {1});
  m.Output("y");
  m.Node("Sum", {"input.1", "onnx::x", "onnx__x", "0"}, {"y"});
  Graph g = m.Import();
  std::vector<std::string> names;
  for (ValueId p : g.params()) names.push_back(g.value(p).name);
  EXPECT_EQ(names, (std::vector<std::string>{"input.1", "onnx__x", "onnx__x_1", "_0"}));
}

TEST(OnnxGraph, DeadNodesAreNotImported) {
  ModelBuilder m(13);
  m.Input("x", {2}).Output("y");
  m.Node("NonMaxSuppression", {"x"}, {"unused"});  // unsupported, but nothing reads it
  m.Node("Relu", {"x"}, {"y"});
  Graph g = m.Import();
  EXPECT_EQ(OpNames(g), std::vector<std::string>{"nn.relu"});
}

}  // namespace
}  // namespace fusetune::testing
