#pragma once
// Small random DAGs for checking the search against brute force. Fixed seeds: the same graphs on
// every run and platform.
#include <cstdint>
#include <random>
#include <string>

#include "ir/graph.h"

namespace fusetune::testing {

// `nodes` op nodes over two [4, 8] parameters. Each node is an element-wise op, a reduction
// (sum over the last axis, keepdims) or, when `with_anchors`, an nn.dense; inputs are drawn from
// earlier values so the graph is a connected-ish DAG with fan-out and fan-in.
inline Graph RandomDag(uint64_t seed, int nodes, bool with_anchors) {
  std::mt19937_64 rng(seed);
  GraphBuilder b;
  TensorType t{DType::kFloat32, {4, 8}};
  std::vector<ValueId> pool{b.AddParam("x", t), b.AddParam("y", t)};
  std::vector<ValueId> shaped = pool;  // values of shape [4, 8]
  auto pick = [&](const std::vector<ValueId>& from) {
    // Prefer recent values so chains form.
    size_t n = from.size();
    size_t back = std::min<size_t>(n - 1, rng() % 3);
    return from[n - 1 - back];
  };
  for (int i = 0; i < nodes; ++i) {
    int kind = static_cast<int>(rng() % (with_anchors ? 6 : 4));
    ValueId v;
    if (kind == 0) {
      v = b.AddNode("exp", {pick(shaped)}, {});
    } else if (kind == 1 || kind == 2) {
      v = b.AddNode(kind == 1 ? "add" : "multiply", {pick(shaped), shaped[rng() % shaped.size()]},
                    {});
    } else if (kind == 3) {
      ValueId r =
          b.AddNode("sum", {pick(shaped)}, Attrs({{"axis", IntList{1}}, {"keepdims", true}}));
      v = b.AddNode("add", {pick(shaped), r}, {});
      pool.push_back(r);
      ++i;
    } else {
      // nn.dense([4, 8], [8, 8]) -> [4, 8]
      static int weights = 0;
      ValueId w = b.AddParam("w" + std::to_string(weights++), TensorType{DType::kFloat32, {8, 8}});
      v = b.AddNode("nn.dense", {pick(shaped), w}, {});
    }
    shaped.push_back(v);
  }
  b.SetOutputs({shaped.back()}, false);
  return std::move(b).Build();
}

}  // namespace fusetune::testing
