#include "ir/onnx/host_ops.h"

#include <algorithm>

#include <fmt/format.h>

#include "ir/error.h"
#include "ir/onnx/import_context.h"

namespace fusetune::onnx_import {
namespace {

int64_t Product(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// Flat index into a tensor of shape `in` (right-aligned in `out`, size-1 axes broadcast) for
// each flat index of `out`.
std::vector<int64_t> BroadcastIndex(const Shape& in, const Shape& out) {
  const int64_t n = Product(out);
  const int rank = static_cast<int>(out.size());
  const int offset = rank - static_cast<int>(in.size());
  std::vector<int64_t> in_strides = RowMajorStrides(in);
  std::vector<int64_t> index(static_cast<size_t>(n));
  std::vector<int64_t> coord(rank, 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t flat = 0;
    for (int a = offset; a < rank; ++a)
      if (in[a - offset] != 1) flat += coord[a] * in_strides[a - offset];
    index[i] = flat;
    for (int a = rank - 1; a >= 0; --a) {
      if (++coord[a] < out[a]) break;
      coord[a] = 0;
    }
  }
  return index;
}

void CopyElement(const HostTensor& from, int64_t i, HostTensor& to, int64_t j) {
  if (from.is_real())
    to.SetReal(j, from.Real(i));
  else
    to.SetInt(j, from.ints[i]);
}

// out[j][i] = in[i][j] for a rows x cols float matrix, in tiles so both sides stay in cache:
// the dense weights of a large model pass through here once each.
void TransposeFloatMatrix(const float* in, int64_t rows, int64_t cols, float* out) {
  constexpr int64_t kTile = 32;
  for (int64_t i0 = 0; i0 < rows; i0 += kTile)
    for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
      const int64_t i1 = std::min(rows, i0 + kTile), j1 = std::min(cols, j0 + kTile);
      for (int64_t j = j0; j < j1; ++j)
        for (int64_t i = i0; i < i1; ++i) out[j * rows + i] = in[i * cols + j];
    }
}

}  // namespace

Shape BroadcastShape(const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      throw UserError(
          fmt::format("shapes {} and {} do not broadcast", ShapeString(a), ShapeString(b)));
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

HostTensor HostBinary(const HostTensor& a, const HostTensor& b, int32_t out_type,
                      const HostBinaryFns& fns) {
  Shape shape = BroadcastShape(a.shape, b.shape);
  HostTensor out = HostTensor::Zeros(out_type, shape);
  std::vector<int64_t> ia = BroadcastIndex(a.shape, shape), ib = BroadcastIndex(b.shape, shape);
  const bool real = a.is_real() || b.is_real();
  for (int64_t i = 0; i < out.size(); ++i) {
    if (real) {
      FT_CHECK(fns.real != nullptr, "caller checks the kinds an op folds");
      out.SetReal(i, fns.real(a.Real(ia[i]), b.Real(ib[i])));
    } else {
      FT_CHECK(fns.integer != nullptr, "caller checks the kinds an op folds");
      out.SetInt(i, fns.integer(a.ints[ia[i]], b.ints[ib[i]]));
    }
  }
  return out;
}

HostTensor HostWhere(const HostTensor& cond, const HostTensor& x, const HostTensor& y) {
  Shape shape = BroadcastShape(BroadcastShape(cond.shape, x.shape), y.shape);
  HostTensor out = HostTensor::Zeros(x.elem_type, shape);
  std::vector<int64_t> ic = BroadcastIndex(cond.shape, shape);
  std::vector<int64_t> ix = BroadcastIndex(x.shape, shape), iy = BroadcastIndex(y.shape, shape);
  for (int64_t i = 0; i < out.size(); ++i) {
    if (cond.Real(ic[i]) != 0.0)
      CopyElement(x, ix[i], out, i);
    else
      CopyElement(y, iy[i], out, i);
  }
  return out;
}

HostTensor HostCast(const HostTensor& x, int32_t to) {
  HostTensor out = HostTensor::Zeros(to, x.shape);
  for (int64_t i = 0; i < x.size(); ++i) CopyElement(x, i, out, i);
  return out;
}

HostTensor HostReshape(const HostTensor& x, Shape shape) {
  FT_CHECK(Product(shape) == x.size(), "reshape keeps the element count");
  HostTensor out = x;
  out.shape = std::move(shape);
  return out;
}

HostTensor HostTranspose(const HostTensor& x, std::span<const int> perm) {
  const int rank = x.rank();
  Shape shape(rank);
  for (int i = 0; i < rank; ++i) shape[i] = x.shape[perm[i]];
  HostTensor out = HostTensor::Zeros(x.elem_type, shape);
  if (x.elem_type == kOnnxFloat && rank == 2 && perm[0] == 1) {
    TransposeFloatMatrix(x.Floats(), x.shape[0], x.shape[1], out.MutableFloats());
    return out;
  }
  float* out_floats = x.elem_type == kOnnxFloat ? out.MutableFloats() : nullptr;
  std::vector<int64_t> in_strides = RowMajorStrides(x.shape);
  std::vector<int64_t> coord(rank, 0);
  for (int64_t j = 0; j < out.size(); ++j) {
    int64_t flat = 0;
    for (int i = 0; i < rank; ++i) flat += coord[i] * in_strides[perm[i]];
    if (out_floats)
      out_floats[j] = x.Floats()[flat];
    else
      CopyElement(x, flat, out, j);
    for (int a = rank - 1; a >= 0; --a) {
      if (++coord[a] < shape[a]) break;
      coord[a] = 0;
    }
  }
  return out;
}

HostTensor HostSlice(const HostTensor& x, std::span<const AxisRange> ranges) {
  const int rank = x.rank();
  Shape shape(rank);
  for (int a = 0; a < rank; ++a) shape[a] = ranges[a].extent;
  HostTensor out = HostTensor::Zeros(x.elem_type, shape);
  std::vector<int64_t> in_strides = RowMajorStrides(x.shape);
  std::vector<int64_t> coord(rank, 0);
  for (int64_t j = 0; j < out.size(); ++j) {
    int64_t flat = 0;
    for (int a = 0; a < rank; ++a)
      flat += (ranges[a].begin + coord[a] * ranges[a].step) * in_strides[a];
    CopyElement(x, flat, out, j);
    for (int a = rank - 1; a >= 0; --a) {
      if (++coord[a] < shape[a]) break;
      coord[a] = 0;
    }
  }
  return out;
}

HostTensor HostConcat(std::span<const HostTensor* const> parts, int axis) {
  Shape shape = parts[0]->shape;
  shape[axis] = 0;
  for (const HostTensor* p : parts) shape[axis] += p->shape[axis];
  HostTensor out = HostTensor::Zeros(parts[0]->elem_type, shape);
  // Row-major: each part contributes a block of (its axis extent * inner) per outer index.
  int64_t outer = 1, inner = 1;
  for (int a = 0; a < axis; ++a) outer *= shape[a];
  for (int a = axis + 1; a < static_cast<int>(shape.size()); ++a) inner *= shape[a];
  int64_t j = 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (const HostTensor* p : parts) {
      const int64_t block = p->shape[axis] * inner;
      for (int64_t k = 0; k < block; ++k) CopyElement(*p, o * block + k, out, j++);
    }
  }
  return out;
}

HostTensor HostGather(const HostTensor& x, const HostTensor& indices, int axis) {
  Shape shape(x.shape.begin(), x.shape.begin() + axis);
  shape.insert(shape.end(), indices.shape.begin(), indices.shape.end());
  shape.insert(shape.end(), x.shape.begin() + axis + 1, x.shape.end());
  HostTensor out = HostTensor::Zeros(x.elem_type, shape);
  int64_t outer = 1, inner = 1;
  for (int a = 0; a < axis; ++a) outer *= x.shape[a];
  for (int a = axis + 1; a < x.rank(); ++a) inner *= x.shape[a];
  const int64_t dim = x.shape[axis];
  int64_t j = 0;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < indices.size(); ++k)
      for (int64_t i = 0; i < inner; ++i)
        CopyElement(x, (o * dim + indices.Int(k)) * inner + i, out, j++);
  return out;
}

AxisRange ResolveSlice(int64_t start, int64_t end, int64_t step, int64_t dim) {
  if (start < 0) start = start < -dim ? 0 : start + dim;  // avoids overflow on INT64_MIN
  if (end < 0) end = end < -dim ? -1 : end + dim;
  AxisRange r;
  r.step = step;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    r.begin = start;
    r.extent = end > start ? (end - start + step - 1) / step : 0;
  } else {
    start = std::clamp<int64_t>(start, -1, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
    r.begin = start;
    r.extent = start > end ? (start - end + (-step) - 1) / (-step) : 0;
  }
  if (r.extent == 0) r.begin = 0;
  return r;
}

}  // namespace fusetune::onnx_import
