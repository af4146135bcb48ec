#pragma once
// Internal to the op catalog: the per-family registration functions (ir/ops/*.cc) and the helpers
// they share. Nothing outside ir/ includes this; everyone else goes through ir/op.h.
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "ir/error.h"
#include "ir/op.h"

namespace fusetune::ops {

using OpList = std::vector<std::unique_ptr<OpDef>>;

void AddElementwiseOps(OpList& ops);  // ops/elementwise.cc
void AddReduceOps(OpList& ops);       // ops/reduce.cc
void AddTransformOps(OpList& ops);    // ops/transform.cc
void AddNNOps(OpList& ops);           // ops/nn.cc: dense, matmul, softmax, layer_norm

// A type-inference error of `op`: "op: message".
template <typename... Args>
[[noreturn]] void Fail(std::string_view op, fmt::format_string<Args...> format, Args&&... args) {
  throw UserError(fmt::format("{}: {}", op, fmt::format(format, std::forward<Args>(args)...)));
}

// numpy broadcasting of all input shapes (right-aligned; a dim of 1 stretches). `op` names the op
// in the error: "add: cannot broadcast Tensor[(2, 3), float32] with Tensor[(4,), float32]".
Shape BroadcastShapes(std::string_view op, std::span<const TensorType> inputs);

// Each input read at the output position under right-aligned broadcasting: a dim of size 1 that
// the output stretches reads index 0, otherwise the matching output axis.
InputAccess BroadcastRead(const TensorType& input, const TensorType& out);
AccessMap BroadcastAccess(std::span<const TensorType> inputs, const TensorType& out);

// Input i read at the same position as the output (shapes equal).
InputAccess IdentityRead(int rank);

// Every input must have the first input's dtype.
void RequireSameDType(std::string_view op, std::span<const TensorType> inputs);
void RequireFloat(std::string_view op, const TensorType& t);
void RequireNumeric(std::string_view op, const TensorType& t);  // float32 or int32

// Element-wise flops: scalar ops per element times the output size.
double ScalarFlops(const OpDef& op, std::span<const TensorType> inputs, const TensorType& out,
                   const Attrs& attrs);

// Normalised list attribute values with negative axes resolved and range-checked.
std::vector<int> NormalizeAxes(std::string_view op, const IntList& axes, int rank);

}  // namespace fusetune::ops
