#pragma once
// ONNX models as graphs. Each ONNX node becomes catalog ops (MatMul -> nn.dense / nn.matmul /
// nn.batch_matmul, Gemm -> nn.dense + add, ...); initialisers become parameters that carry their
// values; shape computations on values known at import (Shape, Gather, Slice, Concat, Unsqueeze,
// arithmetic on int64) are folded away. Every problem (an unsupported op, a dynamic shape, a
// malformed file) throws UserError naming the node, its op and what to do, and nothing is returned.
#include <string>
#include <string_view>
#include <vector>

#include "ir/dims.h"
#include "ir/graph.h"

namespace fusetune {

// `bytes` is a serialised onnx.ModelProto; `source` names it in messages (usually the path).
// Graph inputs without an initialiser become parameters in order, named as in the file with
// characters Relay cannot spell replaced by '_' ("input.1" stays, "onnx::x" -> "onnx__x").
// An input dimension without a value (a dim_param such as "seq" from PyTorch's dynamic_axes, or
// nothing at all) is sized by `dims` (ir/dims.h; the request names the dim_param, or is anonymous)
// before anything else is imported, so shape computations fold at those sizes; without `dims` it
// is an error.
Graph ImportOnnx(std::string_view bytes, const std::string& source, const Limits& limits = {},
                 const DimResolver* dims = nullptr);
Graph ImportOnnxFile(const std::string& path, const Limits& limits = {});

// The ONNX op types the importer converts (default domain), sorted.
std::vector<std::string> SupportedOnnxOps();

// Opsets of the default domain the importer accepts.
inline constexpr int kMinOnnxOpset = 7;
inline constexpr int kMaxOnnxOpset = 18;

}  // namespace fusetune
