// NodeFlops and MatmulFlops (ir/flops.h): a matmul counts 2·batch·M·N·K, whichever operand is
// transposed; element-wise ops count toward a node's flops but not the matmuls'.
#include <gtest/gtest.h>

#include "ir/flops.h"
#include "ir/graph.h"

namespace fusetune {
namespace {

TensorType F32(Shape s) { return TensorType{DType::kFloat32, std::move(s)}; }

TEST(Flops, MatmulsCountTwiceTheirMultiplyAdds) {
  GraphBuilder b;
  ValueId x = b.AddParam("x", F32({64, 96}));
  ValueId w = b.AddParam("w", F32({40, 96}));
  ValueId q = b.AddParam("q", F32({3, 17, 8}));
  ValueId k = b.AddParam("k", F32({3, 8, 5}));  // transposed for the product: [batch, K, N]
  ValueId dense = b.AddNode("nn.dense", {x, w}, {});
  ValueId scaled = b.AddNode("multiply", {dense, dense}, {});
  Attrs plain;
  plain.Set("transpose_b", false);
  ValueId scores = b.AddNode("nn.batch_matmul", {q, k}, plain);
  b.SetOutputs({scaled, scores}, true);
  const Graph g = std::move(b).Build();

  EXPECT_DOUBLE_EQ(NodeFlops(g, dense), 2.0 * 64 * 40 * 96);
  EXPECT_DOUBLE_EQ(NodeFlops(g, scores), 2.0 * 3 * 17 * 5 * 8);
  EXPECT_DOUBLE_EQ(NodeFlops(g, scaled), 64.0 * 40) << "one multiply per element";
  EXPECT_DOUBLE_EQ(NodeFlops(g, x), 0.0) << "a parameter computes nothing";
  EXPECT_DOUBLE_EQ(MatmulFlops(g), 2.0 * 64 * 40 * 96 + 2.0 * 3 * 17 * 5 * 8);
}

TEST(Flops, AGraphWithoutMatmulsHasNone) {
  GraphBuilder b;
  ValueId x = b.AddParam("x", F32({100, 120}));
  b.SetOutputs({b.AddNode("exp", {x}, {})}, false);
  const Graph g = std::move(b).Build();
  EXPECT_DOUBLE_EQ(MatmulFlops(g), 0.0);
  EXPECT_GT(NodeFlops(g, 1), 0.0);
}

}  // namespace
}  // namespace fusetune
