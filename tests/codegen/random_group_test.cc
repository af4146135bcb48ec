// Randomly generated legal groups (fixed seeds): chains of element-wise, broadcast and
// data-movement ops on shapes with odd sizes and size-1 dims, optionally ending in a reduction or
// a softmax with an element-wise epilogue. The whole chain is one fused group; it is compiled and
// compared with the interpreter at 1 and 2 threads (tolerance abs 2e-5 + rel 2e-5: polynomial
// math and float accumulation).
#include <algorithm>
#include <numeric>
#include <random>

#include <gtest/gtest.h>

#include "group_check_util.h"
#include "ir/fusion.h"
#include "ir/graph.h"

namespace fusetune::testing {
namespace {

struct Generated {
  Graph graph;
  std::string description;
};

Generated Generate(uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  const int64_t sizes[] = {1, 3, 5, 16, 17, 33};
  GraphBuilder b;
  int rank = 1 + pick(3);
  Shape shape;
  for (int d = 0; d < rank; ++d) shape.push_back(sizes[pick(6)]);
  if (std::all_of(shape.begin(), shape.end(), [](int64_t s) { return s == 1; })) shape.back() = 17;
  ValueId cur = b.AddParam("x", {DType::kFloat32, shape});
  std::string desc = "x" + TensorType{DType::kFloat32, shape}.ToString();
  int params = 0;
  const int steps = 2 + pick(4);
  for (int s = 0; s < steps; ++s) {
    const TensorType t = b.TypeOf(cur);
    switch (pick(4)) {
      case 0: {
        const char* ops[] = {"exp", "tanh", "sigmoid", "negative", "abs", "nn.relu", "erf"};
        const char* op = ops[pick(7)];
        cur = b.AddNode(op, {cur}, {});
        desc += std::string(" ") + op;
        break;
      }
      case 1: {
        // A second operand with a broadcast-compatible shape (some dims 1, maybe fewer dims).
        Shape other;
        int drop = pick(t.rank() + 1);
        for (int d = drop; d < t.rank(); ++d) other.push_back(pick(3) == 0 ? 1 : t.shape[d]);
        ValueId p = b.AddParam("p" + std::to_string(params++), {DType::kFloat32, other});
        const char* ops[] = {"add", "subtract", "multiply", "maximum"};
        const char* op = ops[pick(4)];
        cur = pick(2) ? b.AddNode(op, {cur, p}, {}) : b.AddNode(op, {p, cur}, {});
        desc += std::string(" ") + op + TensorType{DType::kFloat32, other}.ToString();
        break;
      }
      case 2: {
        if (t.rank() < 2) {
          cur = b.AddNode("expand_dims", {cur}, Attrs({{"axis", int64_t{0}}}));
          desc += " expand_dims";
          break;
        }
        IntList axes(t.rank());
        std::iota(axes.begin(), axes.end(), 0);
        std::shuffle(axes.begin(), axes.end(), rng);
        cur = b.AddNode("transpose", {cur}, Attrs({{"axes", axes}}));
        desc += " transpose";
        break;
      }
      default: {
        // Merge the last two dims, or split the last one when it has a factor.
        IntList newshape(t.shape.begin(), t.shape.end());
        if (t.rank() >= 2 && pick(2)) {
          newshape.pop_back();
          newshape.back() *= t.shape.back();
        } else {
          newshape.back() = -1;
          newshape.insert(newshape.end() - 1, 1);
        }
        cur = b.AddNode("reshape", {cur}, Attrs({{"newshape", newshape}}));
        desc += " reshape";
        break;
      }
    }
  }
  const TensorType t = b.TypeOf(cur);
  switch (pick(3)) {
    case 0: {
      const char* ops[] = {"sum", "max", "mean", "min"};
      const char* op = ops[pick(4)];
      IntList axes = {static_cast<int64_t>(pick(t.rank()))};
      bool keepdims = pick(2);
      cur = b.AddNode(op, {cur}, Attrs({{"axis", axes}, {"keepdims", keepdims}}));
      cur = b.AddNode("multiply", {cur, b.AddConst(Tensor::Scalar(DType::kFloat32, 0.5))}, {});
      desc += std::string(" ") + op + " multiply";
      break;
    }
    case 1:
      cur = b.AddNode("nn.softmax", {cur}, Attrs({{"axis", int64_t{-1}}}));
      cur = b.AddNode("add", {cur, b.AddConst(Tensor::Scalar(DType::kFloat32, 1.0))}, {});
      desc += " softmax add";
      break;
    default:
      break;
  }
  b.SetOutputs({cur}, false);
  return {std::move(b).Build(), desc};
}

TEST(RandomGroups, MatchInterpreter) {
  int checked = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    Generated g = Generate(seed);
    std::vector<ValueId> nodes;
    std::vector<std::string> names;
    for (ValueId v = 0; v < static_cast<ValueId>(g.graph.values().size()); ++v) {
      if (g.graph.value(v).kind != ValueKind::kNode) continue;
      nodes.push_back(v);
      names.push_back(g.graph.value(v).name);
    }
    std::string why;
    if (!AnalyzeGroup(g.graph, nodes, &why)) continue;  // e.g. an epilogue that changes shape
    ++checked;
    for (int threads : {1, 2}) {
      GroupResult r = CheckGroups(g.graph, {names}, {2e-5, 2e-5}, threads, seed).at(0);
      EXPECT_TRUE(r.ok) << "seed " << seed << " (" << g.description << ") at " << threads
                        << " threads: " << r.first_failure;
    }
  }
  EXPECT_GE(checked, 40) << "too few generated groups were legal";
}

}  // namespace
}  // namespace fusetune::testing
