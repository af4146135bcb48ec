#include <map>

#include <gtest/gtest.h>

#include "ir/op.h"
#include "ir/text/relay_parser.h"
#include "ir/text/relay_printer.h"
#include "tests/text/text_test_util.h"

namespace fusetune {
namespace {

using testing::Parse;

// One program per op, written exactly as the printer writes it (non-default attributes only, in
// schema order), so print(parse(t)) == t checks the printer character by character.
const std::map<std::string, std::string>& OpPrograms() {
  static const auto* programs = [] {
    auto* m = new std::map<std::string, std::string>;
    const std::string x = "fn (%a: Tensor[(2, 3, 4), float32]) {\n  ";
    for (const char* op :
         {"abs", "erf", "exp", "fast_exp", "fast_tanh", "log", "negative", "nn.relu", "ones_like",
          "rsqrt", "sigmoid", "sqrt", "tanh", "zeros_like"}) {
      (*m)[op] = x + op + "(%a)\n}\n";
    }
    const std::string xy = "fn (%a: Tensor[(2, 3, 4), float32], %b: Tensor[(3, 1), float32]) {\n  ";
    for (const char* op :
         {"add", "divide", "maximum", "minimum", "multiply", "power", "subtract"}) {
      (*m)[op] = xy + op + "(%a, %b)\n}\n";
    }
    (*m)["broadcast_to"] = x + "broadcast_to(%a, shape=[5, 2, 3, 4])\n}\n";
    (*m)["cast"] = x + "cast(%a, dtype=\"int32\")\n}\n";
    (*m)["clip"] = x + "clip(%a, a_min=-1f, a_max=2.5f)\n}\n";
    (*m)["concatenate"] =
        "fn (%a: Tensor[(2, 3), float32], %b: Tensor[(2, 5), float32]) {\n"
        "  concatenate((%a, %b, %a), axis=1)\n}\n";
    (*m)["expand_dims"] = x + "expand_dims(%a, axis=1, num_newaxis=2)\n}\n";
    (*m)["max"] = x + "max(%a, axis=[0], exclude=True)\n}\n";
    (*m)["mean"] = x + "mean(%a)\n}\n";
    (*m)["min"] = x + "min(%a, axis=[2])\n}\n";
    (*m)["sum"] = x + "sum(%a, axis=[1, -1], keepdims=True)\n}\n";
    (*m)["nn.batch_matmul"] =
        "fn (%a: Tensor[(2, 3, 4), float32], %b: Tensor[(2, 4, 5), float32]) {\n"
        "  nn.batch_matmul(%a, %b, transpose_b=False)\n}\n";
    (*m)["nn.bias_add"] =
        "fn (%a: Tensor[(2, 3, 4), float32], %b: Tensor[(4,), float32]) {\n"
        "  nn.bias_add(%a, %b, axis=-1)\n}\n";
    (*m)["nn.dense"] =
        "fn (%a: Tensor[(3, 4), float32], %w: Tensor[(5, 4), float32]) {\n"
        "  nn.dense(%a, %w, units=5)\n}\n";
    (*m)["nn.layer_norm"] =
        "fn (%a: Tensor[(3, 4), float32], %g: Tensor[(4,), float32], %b: Tensor[(4,), float32]) {\n"
        "  nn.layer_norm(%a, %g, %b, epsilon=1e-12f)\n}\n";
    (*m)["nn.matmul"] =
        "fn (%a: Tensor[(3, 4), float32], %b: Tensor[(4, 5), float32]) {\n"
        "  nn.matmul(%a, %b)\n}\n";
    (*m)["nn.softmax"] = x + "nn.softmax(%a, axis=1)\n}\n";
    (*m)["reshape"] = x + "reshape(%a, newshape=[0, -1])\n}\n";
    (*m)["squeeze"] = "fn (%a: Tensor[(2, 1, 4), float32]) {\n  squeeze(%a, axis=[1])\n}\n";
    (*m)["strided_slice"] = x + "strided_slice(%a, begin=[0, 1], end=[2, 3], strides=[1, 2])\n}\n";
    (*m)["transpose"] = x + "transpose(%a, axes=[2, 0, 1])\n}\n";
    (*m)["where"] =
        "fn (%c: Tensor[(2, 3, 4), bool], %a: Tensor[(2, 3, 4), float32], %b: Tensor[(3, 1), "
        "float32]) {\n  where(%c, %a, %b)\n}\n";
    return m;
  }();
  return *programs;
}

TEST(RelayPrinter, RoundTripsEveryOp) {
  PrintOptions typed;
  typed.types = true;
  for (const OpDef* op : AllOps()) {
    SCOPED_TRACE(op->name);
    auto it = OpPrograms().find(op->name);
    ASSERT_NE(it, OpPrograms().end()) << "add a round-trip program for " << op->name;
    Graph g = Parse(it->second);
    ASSERT_EQ(g.num_nodes(), 1);
    EXPECT_EQ(g.value(g.outputs()[0]).op, op);
    EXPECT_EQ(PrintRelay(g), it->second);       // print(parse(t)) == t
    EXPECT_EQ(Parse(PrintRelay(g)), g);         // parse(print(g)) == g
    EXPECT_EQ(Parse(PrintRelay(g, typed)), g);  // with annotations too
    EXPECT_EQ(PrintRelay(Parse(PrintRelay(g, typed)), typed), PrintRelay(g, typed));
  }
}

TEST(RelayPrinter, WritesTypesWhenAsked) {
  Graph g = Parse("fn (%x: Tensor[(4,), float32]) { %0 = exp(%x); (%0, %x) }");
  PrintOptions typed;
  typed.types = true;
  EXPECT_EQ(PrintRelay(g, typed),
            "fn (%x: Tensor[(4,), float32]) -> (Tensor[(4,), float32], Tensor[(4,), float32]) {\n"
            "  %0 = exp(%x) /* ty=Tensor[(4,), float32] */;\n"
            "  (%0, %x)\n"
            "}\n");
}

TEST(RelayPrinter, BindsTheResultWhenItsNameIsNotTheNextNumber) {
  Graph g = Parse("fn (%x: Tensor[(4,), float32]) { %0 = exp(%x); %out = tanh(%0); %out }");
  EXPECT_EQ(PrintRelay(g),
            "fn (%x: Tensor[(4,), float32]) {\n"
            "  %0 = exp(%x);\n"
            "  %out = tanh(%0);\n"
            "  %out\n"
            "}\n");
  EXPECT_EQ(Parse(PrintRelay(g)), g);
}

TEST(RelayPrinter, InlinesScalarConstantsAndKeepsDoubleAttributes) {
  Graph g = Parse(R"(fn (%x: Tensor[(4,), float32], %i: Tensor[(4,), int32]) {
  %0 = multiply(%x, 0.125f);
  %1 = add(%i, -3);
  %2 = where(False, %0, 1e-12f);
  %3 = clip(%2, a_min=0.1, a_max=1e+30);
  (%3, %1)
}
)");
  std::string printed = PrintRelay(g);
  EXPECT_EQ(printed,
            "fn (%x: Tensor[(4,), float32], %i: Tensor[(4,), int32]) {\n"
            "  %0 = multiply(%x, 0.125f);\n"
            "  %1 = add(%i, -3);\n"
            "  %2 = where(False, %0, 1e-12f);\n"
            "  %3 = clip(%2, a_min=0.1, a_max=1e+30);\n"
            "  (%3, %1)\n"
            "}\n");
  EXPECT_EQ(Parse(printed), g);
}

TEST(RelayPrinter, PrintIsStableOnBuilderGraphs) {
  // A graph built directly (not parsed), with a node name the parser would not choose.
  GraphBuilder b;
  ValueId x = b.AddParam("x", TensorType{DType::kFloat32, {2, 2}});
  ValueId t = b.AddNode("transpose", {x}, Attrs({{"axes", IntList{1, 0}}}), "t");
  ValueId c = b.AddConst(Tensor::Scalar(DType::kFloat32, 2.0));
  ValueId m = b.AddNode("multiply", {t, c}, Attrs(), "");
  b.SetOutputs({m}, false);
  Graph g = std::move(b).Build();
  std::string printed = PrintRelay(g);
  EXPECT_EQ(printed,
            "fn (%x: Tensor[(2, 2), float32]) {\n"
            "  %t = transpose(%x, axes=[1, 0]);\n"
            "  multiply(%t, 2f)\n"
            "}\n");
  EXPECT_EQ(Parse(printed), g);
}

}  // namespace
}  // namespace fusetune
