// Every op alone and hand-picked fused groups, compiled and compared with the reference
// interpreter (exact, in double) at 1 and 2 threads. Shapes have sizes that are not multiples of
// the vector width, size-1 dims and broadcasting. Tolerances per op family, |got - want| <=
// abs + rel * |want|:
//   data movement, select, relu, abs, neg, compare  exact                      (0, 0)
//   add/sub/mul/div, chains of them                 float rounding per op      (1e-6, 1e-6)
//   exp/log/tanh/sigmoid/erf/sqrt/rsqrt/pow         polynomial + rounding      (1e-6, 2e-6)
//   fast_exp / fast_tanh                            documented trade-off       (1e-4, 1e-4)
//   sum/mean, softmax, layer_norm                   float accumulation         (1e-5, 1e-5)
//   dense / batch_matmul / matmul                   float accumulation over k  (1e-5, 1e-5)
#include <gtest/gtest.h>

#include "group_check_util.h"

namespace fusetune::testing {
namespace {

constexpr Tolerance kExact{0, 0};
constexpr Tolerance kArith{1e-6, 1e-6};
constexpr Tolerance kMath{1e-6, 2e-6};
constexpr Tolerance kFast{1e-4, 1e-4};
constexpr Tolerance kAccum{1e-5, 1e-5};

// Checks each group (or every node alone when `groups` is empty) at 1 and 2 threads.
void ExpectMatch(const std::string& relay, const std::vector<std::vector<std::string>>& groups,
                 Tolerance tol) {
  Graph graph = ParseGraph(relay);
  for (int threads : {1, 2}) {
    for (const GroupResult& r : CheckGroups(graph, groups, tol, threads)) {
      EXPECT_TRUE(r.ok) << r.group << " at " << threads << " threads: " << r.first_failure << "\n"
                        << relay;
    }
  }
}

std::string Unary(const std::string& call) {
  return "fn (%x: Tensor[(3, 37), float32]) { " + call + " }";
}

TEST(GroupCodegen, UnaryOpsAlone) {
  for (const char* op : {"negative", "abs", "nn.relu", "ones_like", "zeros_like"})
    ExpectMatch(Unary(std::string(op) + "(%x)"), {}, kExact);
  for (const char* op : {"exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf"})
    ExpectMatch(Unary(std::string(op) + "(%x)"), {}, kMath);
  for (const char* op : {"fast_exp", "fast_tanh"})
    ExpectMatch(Unary(std::string(op) + "(%x)"), {}, kFast);
  ExpectMatch(Unary("clip(%x, a_min=-0.5f, a_max=0.25f)"), {}, kExact);
  ExpectMatch(Unary("cast(%x, dtype=\"int32\")"), {}, kExact);
  ExpectMatch(Unary("cast(%x, dtype=\"bool\")"), {}, kExact);
}

TEST(GroupCodegen, BinaryOpsBroadcasting) {
  for (const char* op : {"add", "subtract", "multiply", "divide", "maximum", "minimum"}) {
    ExpectMatch(
        std::string("fn (%a: Tensor[(5, 1, 19), float32], %b: Tensor[(4, 1), float32]) { ") + op +
            "(%a, %b) }",
        {}, kArith);
  }
  ExpectMatch("fn (%a: Tensor[(6, 17), float32]) { power(abs(%a), 1.7f) }", {}, kMath);
  ExpectMatch("fn (%a: Tensor[(6, 17), float32], %b: Tensor[(17), float32]) { power(%a, %b) }", {},
              kMath);
  ExpectMatch("fn (%a: Tensor[(2, 3, 21), int32], %b: Tensor[(21), int32]) { add(%a, %b) }", {},
              kExact);
  ExpectMatch("fn (%a: Tensor[(2, 3, 21), int32], %b: Tensor[(21), int32]) { divide(%a, %b) }", {},
              kExact);
  ExpectMatch("fn (%a: Tensor[(1), float32], %b: Tensor[(7, 1), float32]) { multiply(%a, %b) }", {},
              kArith);
}

TEST(GroupCodegen, WhereAndBias) {
  ExpectMatch(
      "fn (%c: Tensor[(4, 33), bool], %a: Tensor[(4, 33), float32], %b: Tensor[(33), float32]) { "
      "where(%c, %a, %b) }",
      {}, kExact);
  ExpectMatch(
      "fn (%c: Tensor[(4, 33), float32], %a: Tensor[(4, 33), float32]) { where(%c, %a, 2f) }", {},
      kExact);
  ExpectMatch(
      "fn (%x: Tensor[(3, 5, 18), float32], %b: Tensor[(5), float32]) { nn.bias_add(%x, %b, "
      "axis=1) }",
      {}, kArith);
}

TEST(GroupCodegen, DataMovementAlone) {
  ExpectMatch("fn (%x: Tensor[(4, 6, 5), float32]) { reshape(%x, newshape=[6, -1]) }", {}, kExact);
  ExpectMatch("fn (%x: Tensor[(4, 6, 5), float32]) { transpose(%x, axes=[2, 0, 1]) }", {}, kExact);
  ExpectMatch("fn (%x: Tensor[(4, 6, 5), float32]) { transpose(%x) }", {}, kExact);
  ExpectMatch("fn (%x: Tensor[(4, 5), float32]) { expand_dims(%x, axis=1) }", {}, kExact);
  ExpectMatch("fn (%x: Tensor[(4, 1, 5), float32]) { squeeze(%x, axis=[1]) }", {}, kExact);
  ExpectMatch("fn (%x: Tensor[(3, 1), float32]) { broadcast_to(%x, shape=[2, 3, 19]) }", {},
              kExact);
  ExpectMatch(
      "fn (%x: Tensor[(7, 40), float32]) { strided_slice(%x, begin=[1, 3], end=[6, 37], "
      "strides=[2, 3]) }",
      {}, kExact);
  ExpectMatch(
      "fn (%a: Tensor[(3, 5), float32], %b: Tensor[(3, 11), float32]) { concatenate((%a, %b), "
      "axis=1) }",
      {}, kExact);
  ExpectMatch(
      "fn (%a: Tensor[(3, 5), float32], %b: Tensor[(2, 5), float32], %c: Tensor[(1, 5), float32]) "
      "{ concatenate((%a, %b, %c)) }",
      {}, kExact);
}

TEST(GroupCodegen, ReductionsAlone) {
  for (const char* op : {"sum", "mean"}) {
    for (const char* attrs : {"axis=[-1]", "axis=[0]", "axis=[1], keepdims=True", "",
                              "axis=[1], exclude=True", "axis=[0, 2]"}) {
      std::string call = std::string(op) + "(%x" + (*attrs ? std::string(", ") + attrs : "") + ")";
      ExpectMatch("fn (%x: Tensor[(5, 9, 37), float32]) { " + call + " }", {}, kAccum);
    }
  }
  for (const char* op : {"max", "min"}) {
    for (const char* attrs : {"axis=[-1]", "axis=[0]", "axis=[1], keepdims=True", ""}) {
      std::string call = std::string(op) + "(%x" + (*attrs ? std::string(", ") + attrs : "") + ")";
      ExpectMatch("fn (%x: Tensor[(5, 9, 37), float32]) { " + call + " }", {}, kExact);
    }
  }
  ExpectMatch("fn (%x: Tensor[(3, 20), int32]) { sum(%x, axis=[1]) }", {}, kExact);
}

TEST(GroupCodegen, SoftmaxAndLayerNormAlone) {
  ExpectMatch("fn (%x: Tensor[(3, 7, 45), float32]) { nn.softmax(%x) }", {}, kAccum);
  ExpectMatch("fn (%x: Tensor[(3, 7, 45), float32]) { nn.softmax(%x, axis=1) }", {}, kAccum);
  ExpectMatch(
      "fn (%x: Tensor[(5, 70), float32], %g: Tensor[(70), float32], %b: Tensor[(70), float32]) { "
      "nn.layer_norm(%x, %g, %b) }",
      {}, kAccum);
  ExpectMatch(
      "fn (%x: Tensor[(4, 6, 3), float32], %g: Tensor[(6), float32], %b: Tensor[(6), float32]) { "
      "nn.layer_norm(%x, %g, %b, axis=1, "
      "epsilon=1e-3f, center=False) }",
      {}, kAccum);
}

TEST(GroupCodegen, MatmulsAlone) {
  ExpectMatch(
      "fn (%x: Tensor[(9, 40), float32], %w: Tensor[(37, 40), float32]) { nn.dense(%x, %w) }", {},
      kAccum);
  ExpectMatch(
      "fn (%x: Tensor[(3, 17, 24), float32], %y: Tensor[(3, 35, 24), float32]) { "
      "nn.batch_matmul(%x, %y) }",
      {}, kAccum);
  ExpectMatch(
      "fn (%x: Tensor[(3, 17, 24), float32], %y: Tensor[(3, 24, 35), float32]) { "
      "nn.batch_matmul(%x, %y, transpose_b=False) }",
      {}, kAccum);
  ExpectMatch(
      "fn (%x: Tensor[(9, 40), float32], %w: Tensor[(40, 21), float32]) { nn.matmul(%x, %w) }", {},
      kAccum);
}

// Fused groups ----------------------------------------------------------------------------------

// Operands that are reshapes of a kernel input are read from that input's memory as they are.
TEST(GroupCodegen, MatmulOperandsThroughReshapes) {
  ExpectMatch(
      "fn (%x: Tensor[(3, 3, 40), float32], %w: Tensor[(37, 40), float32]) {\n"
      "  %0 = reshape(%x, newshape=[9, 40]);\n  %1 = expand_dims(%0, axis=1);\n"
      "  %2 = squeeze(%1, axis=[1]);\n  %3 = nn.dense(%2, %w);\n  add(%3, 1f)\n}",
      {{"0", "1", "2", "3", "4"}}, kAccum);
  ExpectMatch(
      "fn (%x: Tensor[(3, 17, 24), float32], %y: Tensor[(105, 24), float32]) {\n"
      "  %0 = reshape(%y, newshape=[3, 35, 24]);\n  nn.batch_matmul(%x, %0)\n}",
      {{"0", "1"}}, kAccum);
}

TEST(GroupCodegen, SeedKernels) {
  ExpectMatch(
      "fn (%x: Tensor[(10, 12, 37), float32], %m: Tensor[(10, 12, 1), float32]) { exp(subtract(%x, "
      "%m)) }",
      {{"0", "1"}}, kMath);
  ExpectMatch(
      "fn (%x: Tensor[(2, 24, 16), float32], %y: Tensor[(2, 24, 16), float32], %z: Tensor[(2, 24, "
      "24), float32]) {\n"
      "  %0 = nn.batch_matmul(%x, %y);\n  %1 = ones_like(%0);\n  where(%z, %0, %1)\n}",
      {{"0", "1", "2"}, {"1", "2"}}, kAccum);
}

TEST(GroupCodegen, InjectiveChains) {
  // reshape + transpose + add: collapses and cancels reshape index pairs where it can.
  ExpectMatch(
      "fn (%x: Tensor[(4, 6, 10), float32], %b: Tensor[(10, 24), float32]) {\n"
      "  %0 = reshape(%x, newshape=[24, 10]);\n  %1 = transpose(%0);\n  %2 = add(%1, %b);\n  %3 = "
      "reshape(%2, newshape=[240]);\n"
      "  negative(%3)\n}",
      {{"0", "1", "2", "3", "4"}, {"0", "1"}, {"2", "3", "4"}}, kArith);
  ExpectMatch(
      "fn (%a: Tensor[(3, 5), float32], %b: Tensor[(3, 11), float32]) {\n"
      "  %0 = exp(%a);\n  %1 = concatenate((%0, %b), axis=1);\n  %2 = strided_slice(%1, begin=[0, "
      "2], end=[3, 15], strides=[1, 1]);\n"
      "  multiply(%2, 2f)\n}",
      {{"0", "1", "2", "3"}}, kMath);
}

TEST(GroupCodegen, TiledTransposes) {
  // The innermost loop gathers: tiles of T outer positions x 16 columns, with a masked remainder.
  ExpectMatch("fn (%x: Tensor[(37, 40), float32]) { transpose(%x) }", {}, kExact);
  ExpectMatch(
      "fn (%x: Tensor[(24, 60), float32]) {\n  %0 = reshape(%x, newshape=[24, 3, 20]);\n"
      "  %1 = transpose(%0, axes=[1, 2, 0]);\n  exp(%1)\n}",
      {{"0", "1", "2"}}, kMath);
}

TEST(GroupCodegen, ExtraOutputs) {
  // %1 leaves the group as well as the sink.
  ExpectMatch(
      "fn (%x: Tensor[(7, 19), float32]) {\n  %0 = exp(%x);\n  %1 = add(%0, 1f);\n  %2 = "
      "multiply(%1, %1);\n  (%1, %2)\n}",
      {{"0", "1", "2"}}, kMath);
}

TEST(GroupCodegen, ReductionWithPrologueAndEpilogue) {
  ExpectMatch(
      "fn (%x: Tensor[(6, 50), float32], %s: Tensor[(6, 1), float32]) {\n"
      "  %0 = multiply(%x, %x);\n  %1 = mean(%0, axis=[1], keepdims=True);\n  %2 = add(%1, "
      "1e-5f);\n  %3 = rsqrt(%2);\n"
      "  multiply(%3, %s)\n}",
      {{"0", "1", "2", "3", "4"}, {"0", "1"}, {"1", "2", "3", "4"}}, kAccum);
  ExpectMatch(
      "fn (%x: Tensor[(23, 6, 5), float32]) {\n  %0 = transpose(%x, axes=[1, 0, 2]);\n  %1 = "
      "max(%0, axis=[1]);\n  negative(%1)\n}",
      {{"0", "1", "2"}}, kExact);
}

TEST(GroupCodegen, SoftmaxWithPrologueAndEpilogue) {
  ExpectMatch(
      "fn (%x: Tensor[(2, 5, 40), float32], %mask: Tensor[(2, 1, 40), float32]) {\n"
      "  %0 = multiply(%x, 0.125f);\n  %1 = add(%0, %mask);\n  %2 = nn.softmax(%1);\n  "
      "multiply(%2, 3f)\n}",
      {{"0", "1", "2", "3"}}, kAccum);
}

// Attention's head split as ONNX spells it: a slice of the QKV output, reshaped to heads and
// transposed (K as [heads, d, S]). The index splits (s*3*H*D + h*D + d) / (H*D) and % (H*D) into s
// and h*D + d; here with odd sizes, and a slice offset that is not a multiple of H*D.
TEST(GroupCodegen, HeadSplitThroughSliceReshapeTranspose) {
  for (const char* begin : {"5", "12", "3"}) {
    const std::string relay =
        std::string(
            "fn (%x: Tensor[(7, 1, 36), float32]) {\n  %0 = strided_slice(%x, begin=[0, 0, ") +
        begin + "], end=[7, 1, " + std::to_string(std::stoi(begin) + 15) +
        "]);\n  %1 = reshape(%0, newshape=[7, 3, 5]);\n  transpose(%1, axes=[1, 2, 0])\n}";
    ExpectMatch(relay, {{"0", "1", "2"}}, kExact);
  }
}

// Softmax rows read straight from the input (no row copy) and through a prologue (row cache), at a
// length that is not a multiple of the vector width and with a scaled, shifted input.
TEST(GroupCodegen, SoftmaxRowsPlainAndCached) {
  ExpectMatch("fn (%x: Tensor[(3, 5, 263), float32]) { nn.softmax(%x) }", {}, kAccum);
  ExpectMatch(
      "fn (%x: Tensor[(3, 5, 263), float32]) {\n  %0 = multiply(%x, 40f);\n  nn.softmax(%0)\n}",
      {{"0", "1"}}, kAccum);
  ExpectMatch(
      "fn (%x: Tensor[(6, 263), float32], %g: Tensor[(263), float32], %b: Tensor[(263), float32]) "
      "{ nn.layer_norm(%x, %g, %b) }",
      {}, kAccum);
}

// A softmax written op by op (ir/norm_pattern.h) as one row kernel: over the last axis and
// an inner one, at lengths that are not multiples of the vector width, alone and with an
// element-wise producer of x and a consumer of the division in the same kernel.
TEST(GroupCodegen, SoftmaxWrittenOpByOpIsOneRowKernel) {
  for (const char* axis : {"2", "1"}) {
    const std::string steps = std::string("  %1 = max(%0, axis=[") + axis +
                              "], keepdims=True);\n  %2 = subtract(%0, %1);\n  %3 = exp(%2);\n"
                              "  %4 = sum(%3, axis=[" +
                              axis + "], keepdims=True);\n  %5 = divide(%3, %4);\n";
    const std::string relay =
        "fn (%x: Tensor[(3, 7, 45), float32], %m: Tensor[(45), float32]) {\n"
        "  %0 = multiply(%x, 3f);\n" +
        steps + "  multiply(%5, %m)\n}";
    ExpectMatch(relay, {{"1", "2", "3", "4", "5"}, {"0"}, {"6"}}, kAccum);
    ExpectMatch(relay, {{"0", "1", "2", "3", "4", "5", "6"}}, kAccum);
  }
}

// A layer norm written op by op (ir/norm_pattern.h) as one row kernel, as TVM imports one from
// ONNX: over the last axis and an inner one, at lengths that are not multiples of the vector
// width, alone and with its residual add, scale and shift in the same kernel; the square as a
// power and as a product.
TEST(GroupCodegen, LayerNormWrittenOpByOpIsOneRowKernel) {
  for (const std::string axis : {"2", "1"}) {
    for (const std::string square : {"power(%2, 2f)", "multiply(%2, %2)"}) {
      const std::string relay =
          "fn (%x: Tensor[(3, 7, 45), float32], %r: Tensor[(3, 7, 45), float32],\n"
          "    %g: Tensor[(3, 7, 45), float32]) {\n  %0 = add(%x, %r);\n"
          "  %1 = mean(%0, axis=[" +
          axis +
          "], keepdims=True);\n  %2 = subtract(%0, %1);\n"
          "  %3 = " +
          square + ";\n  %4 = mean(%3, axis=[" + axis +
          "], keepdims=True);\n"
          "  %5 = add(%4, 1e-5f);\n  %6 = sqrt(%5);\n  %7 = divide(%2, %6);\n"
          "  %8 = multiply(%7, %g);\n  add(%8, 0.5f)\n}";
      ExpectMatch(relay, {{"1", "2", "3", "4", "5", "6", "7"}, {"0"}, {"8", "9"}}, kAccum);
      ExpectMatch(relay, {{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}}, kAccum);
    }
  }
}

// An RMS norm and TensorFlow's layer norm (the reciprocal root times the deviation) written op
// by op, and the other spellings of a root and a mean, as one row kernel over the last axis and
// an inner one.
TEST(GroupCodegen, RmsNormAndReciprocalRootNormsAreOneRowKernel) {
  for (const std::string axis : {"2", "1"}) {
    const std::string rms =
        "fn (%x: Tensor[(3, 7, 45), float32], %w: Tensor[(3, 7, 45), float32]) {\n"
        "  %0 = power(%x, 2f);\n  %1 = mean(%0, axis=[" +
        axis +
        "], keepdims=True);\n"
        "  %2 = add(%1, 1e-6f);\n  %3 = rsqrt(%2);\n  %4 = multiply(%x, %3);\n"
        "  multiply(%4, %w)\n}";
    ExpectMatch(rms, {{"0", "1", "2", "3", "4"}, {"5"}}, kAccum);
    ExpectMatch(rms, {{"0", "1", "2", "3", "4", "5"}}, kAccum);
    const std::string tf =
        "fn (%x: Tensor[(3, 7, 45), float32]) {\n"
        "  %0 = mean(%x, axis=[" +
        axis +
        "], keepdims=True);\n"
        "  %1 = subtract(%x, %0);\n  %2 = multiply(%1, %1);\n"
        "  %3 = mean(%2, axis=[" +
        axis +
        "], keepdims=True);\n"
        "  %4 = add(%3, 1e-3f);\n  %5 = rsqrt(%4);\n  multiply(%5, %1)\n}";
    ExpectMatch(tf, {{"0", "1", "2", "3", "4", "5", "6"}}, kAccum);
    // PyTorch's ONNX export of rsqrt (1 / sqrt), and means as a sum over n and times 1/n.
    const std::string onnx_rms =
        "fn (%x: Tensor[(3, 7, 45), float32]) {\n"
        "  %0 = multiply(%x, %x);\n  %1 = mean(%0, axis=[" +
        axis +
        "], keepdims=True);\n"
        "  %2 = add(%1, 1e-6f);\n  %3 = sqrt(%2);\n  %4 = divide(1f, %3);\n"
        "  multiply(%x, %4)\n}";
    ExpectMatch(onnx_rms, {{"0", "1", "2", "3", "4", "5"}}, kAccum);
    const std::string n = axis == "2" ? "45" : "7";
    const std::string sums =
        "fn (%x: Tensor[(3, 7, 45), float32]) {\n"
        "  %0 = sum(%x, axis=[" +
        axis + "], keepdims=True);\n  %1 = divide(%0, " + n +
        "f);\n  %2 = subtract(%x, %1);\n  %3 = multiply(%2, %2);\n"
        "  %4 = sum(%3, axis=[" +
        axis + "], keepdims=True);\n  %5 = multiply(%4, " +
        (axis == "2" ? "0.0222222228f" : "0.142857149f") +
        ");\n  %6 = add(%5, 1e-5f);\n  %7 = sqrt(%6);\n  divide(%2, %7)\n}";
    ExpectMatch(sums, {{"0", "1", "2", "3", "4", "5", "6", "7", "8"}}, kAccum);
  }
}

// ONNX's erf-GELU: x / sqrt(2) (a multiply by the reciprocal), the rational erf, over |x| up to 8.
TEST(GroupCodegen, ErfGeluWithConstantDivision) {
  const std::string gelu =
      "fn (%x: Tensor[(7, 45), float32]) {\n  %0 = multiply(%x, 8f);\n  %1 = divide(%0, "
      "1.4142135f);\n  %2 = erf(%1);\n  %3 = add(%2, 1f);\n  %4 = multiply(%0, %3);\n  "
      "multiply(%4, 0.5f)\n}";
  ExpectMatch(gelu, {}, kMath);
  ExpectMatch(gelu, {{"0", "1", "2", "3", "4", "5"}}, kMath);
}

TEST(GroupCodegen, DenseBiasGelu) {
  ExpectMatch(
      "fn (%x: Tensor[(5, 48), float32], %w: Tensor[(33, 48), float32], %b: Tensor[(33), float32]) "
      "{\n"
      "  %0 = nn.dense(%x, %w);\n  %1 = nn.bias_add(%0, %b);\n  %2 = multiply(%1, 0.707107f);\n  "
      "%3 = erf(%2);\n"
      "  %4 = add(%3, 1f);\n  %5 = multiply(%1, %4);\n  multiply(%5, 0.5f)\n}",
      {{"0", "1", "2", "3", "4", "5", "6"}}, kAccum);
}

}  // namespace
}  // namespace fusetune::testing
