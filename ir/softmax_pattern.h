#pragma once
// A softmax written op by op, as exporters write it when their softmax op is not the framework's
// (Keras, custom attention code, ONNX before opset 13):
//
//     m = max(x, axis=[a], keepdims=True)      one reduction over one axis
//     d = subtract(x, m)
//     e = exp(d)
//     s = sum(e, axis=[a], keepdims=True)      a second reduction over the same axis
//     y = divide(e, s)
//
// TVM's rules cannot put two reductions in one kernel: they store d or e (the whole tensor) and
// read it twice more. These five ops are nn.softmax(x, axis=a); a group that holds them (with
// element-wise producers of x and element-wise consumers of y) is a kComposite group whose row
// kernel is nn.softmax's (ir/fusion.h): x read once, y written once. Decided from the IR alone,
// like every legality; only the search forms such a group, and keeps it when it measures faster.
#include <optional>
#include <span>
#include <vector>

#include "ir/graph.h"

namespace fusetune {

struct SoftmaxOpByOp {
  ValueId input = -1;  // x
  ValueId max = -1, shifted = -1, exp = -1, sum = -1;
  ValueId output = -1;  // the division: the softmax's value
  int axis = 0;         // of x, in [0, rank)

  // max, shifted, exp and sum: the steps that only the row kernel sees.
  std::vector<ValueId> Steps() const { return {max, shifted, exp, sum}; }
  // The five ops, ascending.
  std::vector<ValueId> Core() const;
};

// The softmax written op by op whose division is `division`, if it is one.
std::optional<SoftmaxOpByOp> MatchSoftmaxOpByOp(const Graph& graph, ValueId division);

// The one softmax written op by op among `nodes` whose five ops are all members, if any.
std::optional<SoftmaxOpByOp> SoftmaxOpByOpIn(const Graph& graph, std::span<const ValueId> nodes);

// Every softmax written op by op in the graph, by division, ascending.
std::vector<SoftmaxOpByOp> FindSoftmaxOpByOp(const Graph& graph);

}  // namespace fusetune
