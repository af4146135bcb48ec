#pragma once
// A softmax written op by op, the smallest graph with a value read by two kernels: exp(x - max)
// is read by both the sum and the division.
#include "ir/graph.h"

namespace fusetune::testing {

struct Softmax {
  Graph g;
  ValueId mx, sub, e, sum, div;
};

inline Softmax DecomposedSoftmax() {
  GraphBuilder b;
  const ValueId x = b.AddParam("x", TensorType{DType::kFloat32, {4, 8}});
  const Attrs row = Attrs({{"axis", IntList{1}}, {"keepdims", true}});
  Softmax s;
  s.mx = b.AddNode("max", {x}, row);              // %0
  s.sub = b.AddNode("subtract", {x, s.mx}, {});   // %1
  s.e = b.AddNode("exp", {s.sub}, {});            // %2
  s.sum = b.AddNode("sum", {s.e}, row);           // %3
  s.div = b.AddNode("divide", {s.e, s.sum}, {});  // %4
  b.SetOutputs({s.div}, false);
  s.g = std::move(b).Build();
  return s;
}

}  // namespace fusetune::testing
