#include <gtest/gtest.h>

#include "ir/text/relay_parser.h"
#include "ir/text/relay_printer.h"
#include "tests/text/text_test_util.h"

namespace fusetune {
namespace {

using testing::Parse;

// Verbatim from DESIGN.md.
const char* kSeed =
    R"(fn (%x: Tensor[(12, 256, 64), float32], %y: Tensor[(12, 256, 64), float32], %z: Tensor[(12, 256, 256), float32]) {
  %0 = nn.batch_matmul(%x, %y);
  %1 = ones_like(%0);
  where(%z, %0, %1)
}
)";

TEST(RelayParser, SeedParsesVerbatim) {
  Graph g = Parse(kSeed);
  ASSERT_EQ(g.params().size(), 3u);
  EXPECT_EQ(g.value(g.params()[0]).name, "x");
  EXPECT_EQ(g.value(g.params()[2]).type, (TensorType{DType::kFloat32, {12, 256, 256}}));
  ASSERT_EQ(g.num_nodes(), 3);
  const Value& bmm = g.value(3);
  EXPECT_EQ(bmm.op->name, "nn.batch_matmul");
  EXPECT_EQ(bmm.name, "0");
  EXPECT_EQ(bmm.type, (TensorType{DType::kFloat32, {12, 256, 256}}));
  EXPECT_TRUE(bmm.attrs.GetBool("transpose_b"));
  const Value& where = g.value(5);
  EXPECT_EQ(where.op->name, "where");
  EXPECT_EQ(where.name, "2");  // the unbound result takes the next free number
  EXPECT_EQ(where.inputs, (std::vector<ValueId>{2, 3, 4}));
  EXPECT_EQ(g.outputs(), (std::vector<ValueId>{5}));
  EXPECT_FALSE(g.tuple_output());
  EXPECT_EQ(PrintRelay(g), kSeed);
}

TEST(RelayParser, DefFormWithVersionReturnTypeAndLet) {
  Graph g = Parse(R"(#[version = "0.0.5"]
def @main(%x: Tensor[(4, 8), float32], %m: Tensor[(4, 1), float32]) -> Tensor[(4, 8), float32] {
  let %d = subtract(%x, %m);
  let %e: Tensor[(4, 8), float32] = exp(%d);
  %e
}
)");
  ASSERT_EQ(g.num_nodes(), 2);
  EXPECT_EQ(g.value(2).name, "d");
  EXPECT_EQ(g.value(3).name, "e");
  EXPECT_EQ(g.outputs(), (std::vector<ValueId>{3}));
}

TEST(RelayParser, CommentsAndAnnotations) {
  Graph g = Parse(R"(// leading comment
fn (%x: Tensor[(2, 3), float32] /* ty=Tensor[(2, 3), float32] */) { /* block /* nested */ */
  %0 = exp(%x) /* ty=Tensor[(2, 3), float32] */; // trailing
  %1 = multiply(%0, 0.5f /* ty=float32 */) /* ty=Tensor[(2, 3), float32] span=x.py:1:2 */;
  sum(%1, axis=[1]) /* ty=Tensor[(2,), float32] */
}
)");
  EXPECT_EQ(g.num_nodes(), 3);
  EXPECT_EQ(g.value(g.outputs()[0]).type, (TensorType{DType::kFloat32, {2}}));
}

TEST(RelayParser, ScalarLiteralsBecomeConstants) {
  Graph g =
      Parse(R"(fn (%x: Tensor[(3,), float32], %i: Tensor[(3,), int32], %c: Tensor[(3,), bool]) {
  %0 = multiply(%x, 0.5f);
  %1 = add(%0, 1e-12f);
  %2 = multiply(3f, %1);
  %3 = subtract(%2, -1.5);
  %4 = add(%i, 2);
  %5 = where(%c, %3, 1f);
  %6 = where(True, %5, %3);
  (%4, %6)
}
)");
  auto const_value = [&](ValueId node, int arg) {
    const Value& c = g.value(g.value(node).inputs[arg]);
    EXPECT_EQ(c.kind, ValueKind::kConst);
    EXPECT_EQ(c.type.rank(), 0);
    return std::make_pair(c.type.dtype, c.data->Get(0));
  };
  auto n = [&](const char* name) { return *g.FindByName(name); };
  EXPECT_EQ(const_value(n("0"), 1), std::make_pair(DType::kFloat32, 0.5));
  EXPECT_EQ(const_value(n("1"), 1), std::make_pair(DType::kFloat32, double(1e-12f)));
  EXPECT_EQ(const_value(n("2"), 0), std::make_pair(DType::kFloat32, 3.0));
  EXPECT_EQ(const_value(n("3"), 1), std::make_pair(DType::kFloat32, -1.5));
  EXPECT_EQ(const_value(n("4"), 1), std::make_pair(DType::kInt32, 2.0));
  EXPECT_EQ(const_value(n("6"), 0), std::make_pair(DType::kBool, 1.0));
  EXPECT_TRUE(g.tuple_output());
  EXPECT_EQ(g.outputs().size(), 2u);
}

TEST(RelayParser, AttributeValueKinds) {
  Graph g = Parse(R"(fn (%x: Tensor[(2, 3, 4), float32], %g: Tensor[(4,), float32]) {
  %0 = strided_slice(%x, begin=[0, 1], end=[2, 3], strides=None, slice_mode="end");
  %1 = sum(%0, axis=[-1], keepdims=True, exclude=False);
  %2 = clip(%1, a_min=-1, a_max=2.5f);
  %3 = nn.layer_norm(%x, %g, %g, epsilon=1e-12);
  (%2, %3)
}
)");
  const Value& slice = g.value(*g.FindByName("0"));
  EXPECT_EQ(slice.attrs.GetIntList("begin"), (IntList{0, 1}));
  EXPECT_TRUE(slice.attrs.IsNone("strides"));
  EXPECT_EQ(slice.attrs.GetString("slice_mode"), "end");
  const Value& sum = g.value(*g.FindByName("1"));
  EXPECT_EQ(sum.attrs.GetIntList("axis"), (IntList{-1}));
  EXPECT_TRUE(sum.attrs.GetBool("keepdims"));
  const Value& clip = g.value(*g.FindByName("2"));
  EXPECT_EQ(clip.attrs.GetFloat("a_min"), -1.0);
  EXPECT_EQ(clip.attrs.GetFloat("a_max"), 2.5);
  // Without the f suffix a float attribute keeps double precision; with it, float32's.
  EXPECT_EQ(g.value(*g.FindByName("3")).attrs.GetFloat("epsilon"), 1e-12);
  Graph f = Parse(
      "fn (%x: Tensor[(2, 3), float32], %g: Tensor[(3,), float32]) {\n"
      "  nn.layer_norm(%x, %g, %g, epsilon=1e-12f)\n}\n");
  EXPECT_EQ(f.value(f.outputs()[0]).attrs.GetFloat("epsilon"), double(1e-12f));
}

TEST(RelayParser, NestedCallsBecomeNodesNamedAroundExplicitBindings) {
  Graph g = Parse(R"(fn (%x: Tensor[(100, 120, 120), float32], %m: Tensor[(100, 120, 1), float32]) {
  exp(subtract(%x, %m))
}
)");
  ASSERT_EQ(g.num_nodes(), 2);
  EXPECT_EQ(g.value(2).op->name, "subtract");
  EXPECT_EQ(g.value(2).name, "0");
  EXPECT_EQ(g.value(3).op->name, "exp");
  EXPECT_EQ(g.value(3).name, "1");

  // Unnamed nodes skip every number the text spells, even ones bound later.
  Graph h = Parse(R"(fn (%x: Tensor[(4,), float32]) {
  %0 = exp(negative(%x));
  %2 = tanh(%0);
  add(%2, %0)
}
)");
  EXPECT_EQ(h.value(1).op->name, "negative");
  EXPECT_EQ(h.value(1).name, "1");
  EXPECT_EQ(h.value(2).name, "0");
  EXPECT_EQ(h.value(3).name, "2");
  EXPECT_EQ(h.value(4).name, "3");
  // The printer binds every node, so printing and parsing again keeps the names.
  EXPECT_EQ(Parse(PrintRelay(h)), h);
}

TEST(RelayParser, TuplesForConcatenateAndResults) {
  Graph g = Parse(R"(fn (%a: Tensor[(2, 3), float32], %b: Tensor[(2, 5), float32]) {
  %0 = concatenate((%a, %b), axis=1);
  %1 = (%a, %0);
  %2 = concatenate(%1, axis=1);
  %3 = exp(%1.0);
  (%2, %3,)
}
)");
  const Value& cat = g.value(*g.FindByName("0"));
  EXPECT_EQ(cat.inputs, (std::vector<ValueId>{0, 1}));
  EXPECT_EQ(cat.type, (TensorType{DType::kFloat32, {2, 8}}));
  EXPECT_EQ(g.value(*g.FindByName("2")).type, (TensorType{DType::kFloat32, {2, 11}}));
  EXPECT_EQ(g.value(*g.FindByName("3")).inputs, (std::vector<ValueId>{0}));
  EXPECT_TRUE(g.tuple_output());
  EXPECT_EQ(g.outputs().size(), 2u);
}

TEST(RelayParser, ShapesOfOneElementScalarsAndBareDTypes) {
  Graph g =
      Parse(R"(fn (%a: Tensor[(1,), float32], %s: Tensor[(), float32], %t: float32, %i: int32) {
  %0 = add(%a, %s);
  %1 = multiply(%t, %s);
  (%0, %1, %i)
}
)");
  EXPECT_EQ(g.value(0).type, (TensorType{DType::kFloat32, {1}}));
  EXPECT_EQ(g.value(1).type, (TensorType{DType::kFloat32, {}}));
  EXPECT_EQ(g.value(2).type, (TensorType{DType::kFloat32, {}}));
  EXPECT_EQ(g.value(3).type, (TensorType{DType::kInt32, {}}));
  EXPECT_EQ(g.value(*g.FindByName("1")).type, (TensorType{DType::kFloat32, {}}));
  EXPECT_EQ(g.outputs()[2], 3);
}

TEST(RelayParser, CrlfLineEndingsAndFloat16Types) {
  Graph g = Parse(
      "fn (%x: Tensor[(2,), float32],\r\n %h: Tensor[(2,), float16]) {\r\n  exp(%x)\r\n}\r\n");
  EXPECT_EQ(g.value(1).type.dtype, DType::kFloat16);
  EXPECT_EQ(g.num_nodes(), 1);
}

TEST(RelayParser, ExampleFilesParseAndRoundTrip) {
  for (const char* name : {"bmm_where_s256", "sub_exp_100x120x120", "bert_layer_s128"}) {
    std::string path = std::string(FUSETUNE_SOURCE_DIR) + "/examples/" + name + ".relay";
    FILE* f = std::fopen(path.c_str(), "rb");
    ASSERT_NE(f, nullptr) << path;
    std::string text;
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
    std::fclose(f);
    Graph g = ParseRelay(text, path);
    EXPECT_EQ(ParseRelay(PrintRelay(g), "printed"), g) << name;
    PrintOptions typed;
    typed.types = true;
    EXPECT_EQ(ParseRelay(PrintRelay(g, typed), "printed"), g) << name;
  }
}

TEST(RelayParser, BertLayerHasTheExpectedShape) {
  std::string path = std::string(FUSETUNE_SOURCE_DIR) + "/examples/bert_layer_s128.relay";
  FILE* f = std::fopen(path.c_str(), "rb");
  ASSERT_NE(f, nullptr);
  std::string text(1 << 16, '\0');
  text.resize(std::fread(text.data(), 1, text.size(), f));
  std::fclose(f);
  Graph g = ParseRelay(text, path);
  EXPECT_EQ(g.params().size(), 18u);
  EXPECT_EQ(g.num_nodes(), 34);
  EXPECT_EQ(g.value(*g.FindByName("12")).type, (TensorType{DType::kFloat32, {12, 128, 128}}));
  EXPECT_EQ(g.value(*g.FindByName("16")).type, (TensorType{DType::kFloat32, {12, 128, 64}}));
  EXPECT_EQ(g.value(g.outputs()[0]).type, (TensorType{DType::kFloat32, {128, 768}}));
  EXPECT_EQ(g.value(g.outputs()[0]).op->name, "nn.layer_norm");
}

}  // namespace
}  // namespace fusetune
