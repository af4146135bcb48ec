#pragma once
// Evaluation of ONNX ops on host values, for folding at import: numpy broadcasting, index
// movement (transpose, slice, gather, concat) and casts. Small and exact rather than fast: these
// run on shape vectors and, at most, on weights once per import.
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "ir/onnx/host_tensor.h"

namespace fusetune::onnx_import {

// numpy broadcasting of two shapes; throws UserError naming both.
Shape BroadcastShape(const Shape& a, const Shape& b);

// out[i] = f(a[i'], b[i'']) under broadcasting; reals when `out_type` is real (or when either
// input is real, for comparisons), else ints. `real` or `integer` may be empty when the op has no
// meaning for that kind; the caller's message is thrown instead.
struct HostBinaryFns {
  std::function<double(double, double)> real;
  std::function<int64_t(int64_t, int64_t)> integer;
};
HostTensor HostBinary(const HostTensor& a, const HostTensor& b, int32_t out_type,
                      const HostBinaryFns& fns);

HostTensor HostWhere(const HostTensor& cond, const HostTensor& x, const HostTensor& y);
HostTensor HostCast(const HostTensor& x, int32_t to);
HostTensor HostReshape(const HostTensor& x, Shape shape);
// out axis i = input axis perm[i].
HostTensor HostTranspose(const HostTensor& x, std::span<const int> perm);

// One axis of a slice, ONNX/numpy style after clamping: element j reads begin + j * step.
struct AxisRange {
  int64_t begin = 0, step = 1, extent = 0;
};
// `ranges` has one entry per axis of x.
HostTensor HostSlice(const HostTensor& x, std::span<const AxisRange> ranges);
HostTensor HostConcat(std::span<const HostTensor* const> parts, int axis);
// numpy.take(x, indices, axis) with indices already made non-negative.
HostTensor HostGather(const HostTensor& x, const HostTensor& indices, int axis);

// ONNX Slice semantics for one axis: negative indices count from the end, then clamp
// (steps > 0 into [0, dim], steps < 0 into [-1, dim - 1]).
AxisRange ResolveSlice(int64_t start, int64_t end, int64_t step, int64_t dim);

}  // namespace fusetune::onnx_import
