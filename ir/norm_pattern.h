#pragma once
// A normalisation written op by op, as exporters write it when their op is not the framework's:
//
//   softmax (Keras, custom attention code, ONNX before opset 13):
//     m = max(x, axis=[a], keepdims=True)      one reduction over one axis
//     d = subtract(x, m)
//     e = exp(d)
//     s = sum(e, axis=[a], keepdims=True)      a second reduction over the same axis
//     y = divide(e, s)
//
//   layer norm without its scale and shift (PyTorch's export before opset 17, as TVM's ONNX
//   frontend imports it):
//     m = mean(x, axis=[a], keepdims=True)
//     d = subtract(x, m)
//     q = power(d, 2f)  or  multiply(d, d)
//     v = mean(q, axis=[a], keepdims=True)     a second reduction over the same axis
//     t = add(v, eps)                          eps a scalar constant, either side
//     r = sqrt(t)
//     y = divide(d, r)                         or r = rsqrt(t), y = multiply(d, r)
//   (each mean also as sum(a) * (1/n) or sum(a) / n, n the axis's extent, as hand-written norms
//   have it; and the reciprocal root also as divide(1f, sqrt(t)), PyTorch's ONNX export of rsqrt)
//
//   RMS norm without its scale (T5, LLaMA): the layer norm's steps with d = x, no mean taken
//
// TVM's rules cannot put two reductions in one kernel: they store d or e (the whole tensor) and
// read it again (an RMS norm, one reduction, reads x in two kernels). These ops are
// nn.softmax(x, axis=a), nn.layer_norm(x, axis=a, epsilon=eps, center=False, scale=False) and
// x * rsqrt(mean(x²) + eps); a group that holds them (with element-wise producers of x and
// element-wise consumers of y, such as a layer norm's scale and shift) is a kComposite group whose
// row kernel is that op's (ir/fusion.h): x read once, y written once. Decided from the IR alone,
// like every legality; only the search forms such a group, and keeps it when it measures faster.
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace fusetune {

enum class RowNorm { kSoftmax, kLayerNorm, kRmsNorm };

struct NormOpByOp {
  RowNorm kind = RowNorm::kSoftmax;
  ValueId input = -1;          // x
  std::vector<ValueId> steps;  // the ops between x and y, which only the row kernel sees
  ValueId output = -1;         // y: the division (or the product by the root's reciprocal)
  int axis = 0;                // of x, in [0, rank)
  double epsilon = 0;          // layer norm only

  // The steps and the output, ascending.
  std::vector<ValueId> Core() const;
  // "softmax", "layer norm" or "RMS norm", for messages and reports.
  std::string_view Name() const;
};

// The normalisation written op by op whose output is `output`, if it is one.
std::optional<NormOpByOp> MatchNormOpByOp(const Graph& graph, ValueId output);

// The one normalisation written op by op whose ops are all among `nodes`, if exactly one is.
std::optional<NormOpByOp> NormOpByOpIn(const Graph& graph, std::span<const ValueId> nodes);

// The ops `nodes` count against a request's max group size: a normalisation written op by op
// among them counts as two (its row kernel's statistics and its division), not as its five or
// seven, so a layer norm with its scale, shift and a residual add fits the default of 8; at a
// size of 1 (no fusion) it stays apart.
size_t OpsCounted(const Graph& graph, std::span<const ValueId> nodes);

// Every normalisation written op by op in the graph, by division, ascending.
std::vector<NormOpByOp> FindNormOpByOp(const Graph& graph);

}  // namespace fusetune
