// Malformed inputs: each has its exact message, line and column.
#include <gtest/gtest.h>

#include "tests/text/text_test_util.h"

namespace fusetune {
namespace {

using testing::ParseError;

struct BadCase {
  const char* what;
  std::string text;
  std::string message;  // the whole UserError message
};

// `fn (%x: Tensor[(2, 3), float32]) {` is line 1; bodies start on line 2 at column 3.
const std::string kHead = "fn (%x: Tensor[(2, 3), float32]) {\n";

std::vector<BadCase> Cases() {
  return {
      {"unknown operator", kHead + "  nn.bach_matmul(%x, %x)\n}\n",
       "bad.relay:2:3: error: unknown operator 'nn.bach_matmul'"},
      {"missing close paren", kHead + "  %0 = exp(%x;\n  %0\n}\n",
       "bad.relay:2:14: error: expected ')' but found ';'"},
      {"undefined variable", kHead + "  %0 = exp(%x);\n  add(%0, %7)\n}\n",
       "bad.relay:3:11: error: undefined variable '%7'"},
      {"use before definition", kHead + "  %0 = exp(%1);\n  %1 = exp(%x);\n  %1\n}\n",
       "bad.relay:2:12: error: undefined variable '%1'"},
      {"broadcast error at the call",
       "fn (%x: Tensor[(2, 3), float32], %y: Tensor[(4,), float32]) {\n  %0 = add(%x, %y);\n  "
       "%0\n}\n",
       "bad.relay:2:8: error: add: cannot broadcast Tensor[(2, 3), float32] with Tensor[(4,), "
       "float32]"},
      {"batch_matmul shapes", kHead + "  nn.batch_matmul(%x, %x)\n}\n",
       "bad.relay:2:3: error: nn.batch_matmul: expects rank-3 operands, got Tensor[(2, 3), "
       "float32] and "
       "Tensor[(2, 3), float32]"},
      {"arity", kHead + "  exp(%x, %x)\n}\n", "bad.relay:2:3: error: exp takes 1 input, got 2"},
      {"unknown attribute", kHead + "  nn.softmax(%x, axes=1)\n}\n",
       "bad.relay:2:18: error: operator 'nn.softmax' has no attribute 'axes' (it has axis)"},
      {"attribute on an op without any", kHead + "  exp(%x, axis=1)\n}\n",
       "bad.relay:2:11: error: operator 'exp' has no attribute 'axis' (it takes none)"},
      {"attribute twice", kHead + "  nn.softmax(%x, axis=1, axis=0)\n}\n",
       "bad.relay:2:26: error: attribute 'axis' is given twice"},
      {"attribute of the wrong kind", kHead + "  nn.softmax(%x, axis=1.5f)\n}\n",
       "bad.relay:2:3: error: nn.softmax: attribute 'axis' must be an int, got 1.5f"},
      {"missing required attribute", kHead + "  reshape(%x)\n}\n",
       "bad.relay:2:3: error: reshape: missing required attribute 'newshape'"},
      {"positional after attributes", kHead + "  nn.softmax(axis=1, %x)\n}\n",
       "bad.relay:2:22: error: positional argument after attributes"},
      {"redefinition", kHead + "  %0 = exp(%x);\n  %0 = tanh(%x);\n  %0\n}\n",
       "bad.relay:3:3: error: '%0' is already defined"},
      {"duplicate parameter", "fn (%x: float32, %x: float32) {\n  %x\n}\n",
       "bad.relay:1:18: error: duplicate parameter '%x'"},
      {"parameter without a type", "fn (%x, %y: float32) {\n  %y\n}\n",
       "bad.relay:1:7: error: expected ':' and a type after parameter '%x' but found ','"},
      {"unknown dtype", "fn (%x: Tensor[(2,), floot32]) {\n  %x\n}\n",
       "bad.relay:1:22: error: unknown dtype 'floot32'"},
      {"unsupported dtype", "fn (%x: Tensor[(2,), int64]) {\n  %x\n}\n",
       "bad.relay:1:22: error: dtype 'int64' is not supported (use float32, int32 or bool)"},
      {"negative dimension", "fn (%x: Tensor[(2, -3), float32]) {\n  %x\n}\n",
       "bad.relay:1:20: error: negative dimension -3"},
      {"dynamic dimension", "fn (%x: Tensor[(Any, 3), float32]) {\n  %x\n}\n",
       "bad.relay:1:17: error: %x has a dynamic dimension '?' at axis 0; give it a size (fusetune "
       "check/tune/run/query --dim NAME=SIZE; `fusetune check` lists the names)"},
      {"named dimension", "fn (%x: Tensor[(3, seq), float32]) {\n  %x\n}\n",
       "bad.relay:1:20: error: %x has a dynamic dimension 'seq' at axis 1; give it a size "
       "(fusetune check/tune/run/query --dim NAME=SIZE; `fusetune check` lists the names)"},
      {"unknown dimension in an annotation",
       "fn (%x: Tensor[(3, 4), float32]) -> Tensor[(n, 4), float32] {\n  %x\n}\n",
       "bad.relay:1:45: error: unknown dimension 'n': no parameter's type uses it"},
      {"unterminated comment", kHead + "  /* no end\n  exp(%x)\n}\n",
       "bad.relay:2:3: error: unterminated comment"},
      {"unterminated string", "#[version = \"0.0.5]\nfn () { 1f }\n",
       "bad.relay:1:13: error: unterminated string"},
      {"unexpected character", kHead + "  exp($x)\n}\n",
       "bad.relay:2:7: error: unexpected character '$'"},
      {"invalid number", kHead + "  multiply(%x, 1.5x)\n}\n",
       "bad.relay:2:16: error: invalid number '1.5x'"},
      {"not a function", "fun (%x: float32) { %x }\n",
       "bad.relay:1:1: error: expected 'fn' or 'def' but found 'fun'"},
      {"empty input", "   \n",
       "bad.relay:2:1: error: expected 'fn' or 'def' but found end of input"},
      {"def without a name", "def main(%x: float32) { %x }\n",
       "bad.relay:1:5: error: expected a function name such as '@main' but found 'main'"},
      {"trailing tokens", kHead + "  %x\n}\n}\n",
       "bad.relay:4:1: error: expected end of input but found '}'"},
      {"no result", kHead + "  %0 = exp(%x);\n}\n",
       "bad.relay:3:1: error: expected the result expression but found '}'"},
      {"missing semicolon", kHead + "  %0 = exp(%x)\n  %0\n}\n",
       "bad.relay:3:3: error: expected ';' but found '%0'"},
      {"unexpected end", kHead + "  exp(%x)",
       "bad.relay:2:10: error: expected '}' but found end of input"},
      {"annotation mismatch", kHead + "  exp(%x) /* ty=Tensor[(3, 2), float32] */\n}\n",
       "bad.relay:2:17: error: type annotation Tensor[(3, 2), float32] does not match inferred "
       "Tensor[(2, 3), float32]"},
      {"annotation dtype mismatch",
       kHead + "  %0 = exp(%x) /* ty=Tensor[(2, 3), int32] */;\n  %0\n}\n",
       "bad.relay:2:22: error: type annotation Tensor[(2, 3), int32] does not match inferred "
       "Tensor[(2, 3), float32]"},
      {"return type mismatch",
       "fn (%x: Tensor[(2,), float32]) -> Tensor[(2,), int32] {\n  exp(%x)\n}\n",
       "bad.relay:1:35: error: type annotation Tensor[(2,), int32] does not match inferred "
       "Tensor[(2,), float32]"},
      {"tuple result against a tensor return type",
       "fn (%x: float32) -> float32 {\n  (%x, %x)\n}\n",
       "bad.relay:1:21: error: return type float32 does not match a tuple of 2 "
       "elements"},
      {"concatenate without a tuple", kHead + "  concatenate(%x, axis=0)\n}\n",
       "bad.relay:2:15: error: 'concatenate' takes one tuple of tensors, as in concatenate((%a, "
       "%b), ...)"},
      {"tuple passed to add", kHead + "  add((%x, %x))\n}\n",
       "bad.relay:2:7: error: 'add' does not take a tuple argument"},
      {"tuple index out of range", kHead + "  %t = (%x, %x);\n  exp(%t.2)\n}\n",
       "bad.relay:3:7: error: index 2 is out of range for a tuple of 2 elements"},
      {"int32 literal out of range", kHead + "  add(%x, 3000000000)\n}\n",
       "bad.relay:2:11: error: integer literal 3000000000 is out of range for int32"},
      {"int64 literal", kHead + "  add(%x, 2i64)\n}\n",
       "bad.relay:2:11: error: int64 literals are not supported; write an int32 literal such as 2"},
      {"float16 literal", kHead + "  add(%x, 1f16)\n}\n",
       "bad.relay:2:11: error: float16 and bfloat16 literals are not supported"},
      {"constant tensors", kHead + "  add(%x, meta[relay.Constant][0])\n}\n",
       "bad.relay:2:11: error: constant tensors (meta[...]) are not supported; pass them as "
       "parameters"},
      {"empty tuple", kHead + "  ()\n}\n", "bad.relay:2:4: error: empty tuples are not supported"},
      {"float list attribute", kHead + "  sum(%x, axis=[1.5])\n}\n",
       "bad.relay:2:17: error: lists of floats are not supported"},
      {"bad attribute value", kHead + "  nn.softmax(%x, axis=%x)\n}\n",
       "bad.relay:2:23: error: expected an attribute value but found '%x'"},
      {"bare identifier", kHead + "  exp(x)\n}\n",
       "bad.relay:2:7: error: expected an expression but found 'x'"},
      {"percent without a name", kHead + "  exp(% x)\n}\n",
       "bad.relay:2:7: error: expected a name after '%' but found ' '"},
      {"rank above the limit", "fn (%x: Tensor[(1, 1, 1, 1, 1, 1, 1, 1, 1), float32]) {\n  %x\n}\n",
       "bad.relay:1:5: error: parameter %x has type Tensor[(1, 1, 1, 1, 1, 1, 1, 1, 1), float32] "
       "of "
       "rank 9, above the limit max_rank = 8 (raise max_rank to accept it)"},
  };
}

TEST(RelayParserErrors, EachMalformedInputHasItsMessageAndPosition) {
  std::vector<BadCase> cases = Cases();
  EXPECT_GE(cases.size(), 25u);
  for (const BadCase& c : cases) {
    EXPECT_EQ(ParseError(c.text), c.message) << c.what << "\n" << c.text;
  }
}

TEST(RelayParserErrors, TextSizeLimit) {
  Limits limits;
  limits.max_text_bytes = 20;
  EXPECT_EQ(ParseError(kHead + "  %x\n}\n", limits),
            "bad.relay:1:1: error: the text is 42 bytes, more than the limit of 20 bytes");
}

TEST(RelayParserErrors, NodeLimitIsReportedAtTheCall) {
  Limits limits;
  limits.max_nodes = 3;
  EXPECT_EQ(
      ParseError(kHead + "  %0 = exp(%x);\n  %1 = exp(%0);\n  %2 = exp(%1);\n  %2\n}\n", limits),
      "bad.relay:4:8: error: graph has more than max_nodes = 3 values (parameters, constants "
      "and calls); raise max_nodes to accept it");
}

TEST(RelayParserErrors, DeepNestingIsRefusedNotACrash) {
  std::string text = kHead + "  ";
  for (int i = 0; i < 300; ++i) text += "exp(";
  text += "%x";
  for (int i = 0; i < 300; ++i) text += ")";
  text += "\n}\n";
  EXPECT_EQ(ParseError(text), "bad.relay:2:1031: error: expressions are nested more than 256 deep");
}

TEST(RelayParserErrors, ErrorInsideAnnotationPointsIntoTheComment) {
  EXPECT_EQ(ParseError(kHead + "  exp(%x) /* ty=Tensor[(2, 3), floot] */\n}\n"),
            "bad.relay:2:32: error: unknown dtype 'floot'");
}

}  // namespace
}  // namespace fusetune
