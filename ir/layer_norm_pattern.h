#pragma once
// Layer norms that an exporter wrote out op by op, put back as one nn.layer_norm. PyTorch's ONNX
// export before opset 17 has no LayerNormalization: nn.LayerNorm becomes
//
//   m = mean(x, axis=-1, keepdims)   d = x - m        v = mean(d * d, axis=-1, keepdims)
//   y = d / sqrt(v + eps)            out = y * gamma + beta
//
// (d squared as a power too, y as d * rsqrt(v + eps) too: ir/norm_pattern.h's matcher, the one
// the search's row kernels use.)
// nine ops whose fusion no rule gets right (d is read by the variance and by the division, and
// two reductions never share a kernel), where the catalog has one row kernel for all of it. ONNX
// Runtime does the same rewrite (LayerNormFusion). The result is exact in the reference's terms:
// nn.layer_norm's definition is this formula.
#include "ir/graph.h"

namespace fusetune {

// `graph` with every such chain whose inner values nothing else reads (and that are not graph
// outputs) replaced by nn.layer_norm(x, gamma, beta, axis=-1, epsilon=eps) named as the chain's
// last op; gamma and beta must be 1-D over x's last axis and not computed from the graph's
// inputs (parameters or constants), eps a scalar constant. Everything else, names and shared
// weights included, is kept. `fused`, when given, receives the count.
Graph FuseDecomposedLayerNorms(const Graph& graph, const Limits& limits = {}, int* fused = nullptr);

}  // namespace fusetune
