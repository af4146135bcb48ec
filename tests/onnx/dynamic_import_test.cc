// ONNX models with dynamic input dimensions (dim_param, or no value at all) imported under a
// binding (ir/dims.h): shape computations fold at the bound sizes, and each kind of bad binding
// is a clear error naming the dimension.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "ir/dims.h"
#include "ir/error.h"
#include "ir/interpreter.h"
#include "ir/onnx/onnx_import.h"
#include "model_builder.h"

namespace fusetune::testing {
namespace {

DimImporter Onnx(const ModelBuilder& m) {
  std::string bytes = m.Bytes();
  return [bytes](const DimResolver& r) { return ImportOnnx(bytes, "dyn.onnx", {}, &r); };
}

std::string BindError(const ModelBuilder& m, const DimBinding& binding) {
  DimImporter import = Onnx(m);
  try {
    BindDims(import, DiscoverDims(import), binding);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

// x: [1, seq, 16] -> view(1, seq, 4, 4) through Shape/Gather/Concat -> transpose(0, 2, 1, 3).
ModelBuilder SplitHeads() {
  ModelBuilder m(13);
  m.DynamicInput("x", {1, 8, 16}, 1, "seq").Output("y");
  m.Node("Shape", {"x"}, {"s"});
  m.IntConstant("one", {}, {1});
  m.Node("Gather", {"s", "one"}, {"n"});
  m.IntConstant("axes", {1}, {0});
  m.Node("Unsqueeze", {"n", "axes"}, {"n1"});
  m.IntConstant("batch", {1}, {1});
  m.IntConstant("heads", {2}, {4, 4});
  SetAttr(m.Node("Concat", {"batch", "n1", "heads"}, {"shape"}), "axis", int64_t{0});
  m.Node("Reshape", {"x", "shape"}, {"r"});
  SetAttr(m.Node("Transpose", {"r"}, {"y"}), "perm", std::vector<int64_t>{0, 2, 1, 3});
  return m;
}

TEST(OnnxDynamicDims, DimParamIsANamedDimension) {
  std::vector<DynamicDim> dims = DiscoverDims(Onnx(SplitHeads()));
  ASSERT_EQ(dims.size(), 1u);
  EXPECT_EQ(dims[0].name, "seq");
  EXPECT_FALSE(dims[0].anonymous);
  EXPECT_EQ(dims[0].sites, (std::vector<DimSite>{{"x", 1}}));
}

TEST(OnnxDynamicDims, ShapeComputationsFoldAtTheBoundSize) {
  DimImporter import = Onnx(SplitHeads());
  std::vector<DynamicDim> dims = DiscoverDims(import);
  for (int64_t seq : {1, 5, 8, 13}) {
    Graph g = BindDims(import, dims, {{"seq", seq}});
    EXPECT_EQ(g.value(g.params()[0]).type.ToString(),
              fmt::format("Tensor[(1, {}, 16), float32]", seq));
    EXPECT_EQ(g.value(g.outputs()[0]).type.ToString(),
              fmt::format("Tensor[(1, 4, {}, 4), float32]", seq));
    // The values: y[0, h, s, d] = x[0, s, 4h + d].
    Tensor x(g.value(g.params()[0]).type);
    for (int64_t i = 0; i < x.size(); ++i) x.Set(i, static_cast<double>(i));
    Tensor y = Interpret(g, std::vector<Tensor>{x}).at(0);
    for (int64_t h = 0; h < 4; ++h)
      for (int64_t s = 0; s < seq; ++s)
        for (int64_t d = 0; d < 4; ++d)
          ASSERT_EQ(y.Get((h * seq + s) * 4 + d), static_cast<double>(s * 16 + 4 * h + d));
  }
}

TEST(OnnxDynamicDims, AnonymousDimsAreNamedByPositionAndTiedByTypes) {
  // Two inputs whose unnamed axis meets in an Add: one dimension, named after the first.
  ModelBuilder m(13);
  m.Input("a", {2, 8}).Input("b", {2, 8}).Output("y");
  for (int i = 0; i < 2; ++i)
    m.model.mutable_graph()
        ->mutable_input(i)
        ->mutable_type()
        ->mutable_tensor_type()
        ->mutable_shape()
        ->mutable_dim(1)
        ->clear_dim_value();
  m.Node("Add", {"a", "b"}, {"y"});
  std::vector<DynamicDim> dims = DiscoverDims(Onnx(m));
  ASSERT_EQ(dims.size(), 1u) << DimsText(dims);
  EXPECT_EQ(dims[0].name, "a.1");
  EXPECT_TRUE(dims[0].anonymous);
  EXPECT_EQ(dims[0].sites, (std::vector<DimSite>{{"a", 1}, {"b", 1}}));
  Graph g = BindDims(Onnx(m), dims, {{"a.1", 3}});
  EXPECT_EQ(g.value(g.outputs()[0]).type.ToString(), "Tensor[(2, 3), float32]");
}

TEST(OnnxDynamicDims, EachKindOfBadBindingIsAClearError) {
  EXPECT_NE(BindError(SplitHeads(), {})
                .find("dimension 'seq' (%x axis 1) has no size: bind it "
                      "with --dim seq=SIZE"),
            std::string::npos);
  EXPECT_NE(
      BindError(SplitHeads(), {{"seq", 4}, {"batch", 2}})
          .find("--dim batch: the graph has no dimension named 'batch' (its dimensions: seq)"),
      std::string::npos);
  EXPECT_NE(BindError(SplitHeads(), {{"seq", -3}}).find("--dim seq=-3: a size must be a positive"),
            std::string::npos);
  // A reshape to a fixed shape fits one size only.
  ModelBuilder m(13);
  m.DynamicInput("x", {1, 8, 16}, 1, "seq").Output("y");
  m.IntConstant("shape", {2}, {8, 16});
  m.Node("Reshape", {"x", "shape"}, {"y"}, "flatten");
  EXPECT_EQ(BindError(m, {{"seq", 8}}), "");
  std::string e = BindError(m, {{"seq", 9}});
  EXPECT_NE(
      e.find("seq=9 does not fit the graph: dyn.onnx: node 1 'flatten' (Reshape): cannot reshape"),
      std::string::npos)
      << e;
  // A broadcast against a fixed size.
  ModelBuilder b(13);
  b.DynamicInput("x", {4, 8}, 0, "rows").Input("bias", {4, 8}).Output("y");
  b.Node("Add", {"x", "bias"}, {"y"});
  EXPECT_EQ(BindError(b, {{"rows", 4}}), "");
  e = BindError(b, {{"rows", 6}});
  EXPECT_NE(e.find("rows=6 does not fit the graph"), std::string::npos) << e;
  EXPECT_NE(e.find("cannot broadcast"), std::string::npos) << e;
}

}  // namespace
}  // namespace fusetune::testing
