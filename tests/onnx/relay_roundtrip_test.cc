// An imported graph prints as Relay text that parses back to the same structure and signature,
// so `fusetune check model.onnx` output can be edited and tuned as text, and an ONNX layer shares
// its cached plans with the same layer written in Relay.
#include <gtest/gtest.h>

#include "ir/text/relay_parser.h"
#include "ir/text/relay_printer.h"
#include "ir/text/signature.h"
#include "model_builder.h"

namespace fusetune::testing {
namespace {

TEST(OnnxRelayText, ImportedGraphRoundTripsThroughRelayText) {
  ModelBuilder m(13);
  m.Input("input.1", {1, 4, 8}).Output("y", {1, 4, 6});
  m.Initializer("onnx::MatMul_7", {8, 6}, Ramp(48));
  m.Initializer("fc.bias", {6}, Ramp(6));
  SetAttr(m.Node("Transpose", {"input.1"}, {"t"}), "perm", std::vector<int64_t>{1, 0, 2});
  m.Node("MatMul", {"t", "onnx::MatMul_7"}, {"mm"});
  m.Node("Add", {"fc.bias", "mm"}, {"a"});
  m.FloatConstant("sqrt2", {}, {1.4142135f});
  m.Node("Div", {"a", "sqrt2"}, {"d"});
  m.Node("Erf", {"d"}, {"e"});
  m.Node("Mul", {"a", "e"}, {"g"});
  SetAttr(m.Node("Transpose", {"g"}, {"y"}), "perm", std::vector<int64_t>{1, 0, 2});
  Graph imported = m.Import();
  const std::string text = PrintRelay(imported);
  Graph parsed = ParseRelay(text, "printed.relay");
  EXPECT_EQ(PrintRelay(parsed), text);
  EXPECT_EQ(Signature(parsed), Signature(imported));
  EXPECT_NE(text.find("%onnx__MatMul_7_T: Tensor[(6, 8), float32]"), std::string::npos) << text;
  EXPECT_NE(text.find("%fc.bias"), std::string::npos) << text;
}

}  // namespace
}  // namespace fusetune::testing
