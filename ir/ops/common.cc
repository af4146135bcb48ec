#include <algorithm>

#include "ir/ops/ops.h"

namespace fusetune::ops {

Shape BroadcastShapes(std::string_view op, std::span<const TensorType> inputs) {
  Shape out;
  const TensorType* widest = nullptr;
  for (const TensorType& t : inputs) {
    if (!widest) {
      out = t.shape;
      widest = &t;
      continue;
    }
    size_t rank = std::max(out.size(), t.shape.size());
    Shape merged(rank);
    for (size_t i = 0; i < rank; ++i) {
      // Right-aligned: position i from the end.
      int64_t a = i < out.size() ? out[out.size() - 1 - i] : 1;
      int64_t b = i < t.shape.size() ? t.shape[t.shape.size() - 1 - i] : 1;
      int64_t m;
      if (a == b || b == 1)
        m = a;
      else if (a == 1)
        m = b;
      else {
        std::string left = widest->ToString();
        if (out != widest->shape) left = TensorType{widest->dtype, out}.ToString();
        Fail(op, "cannot broadcast {} with {}", left, t.ToString());
      }
      merged[rank - 1 - i] = m;
    }
    out = std::move(merged);
  }
  return out;
}

InputAccess BroadcastRead(const TensorType& input, const TensorType& out) {
  InputAccess access;
  int offset = out.rank() - input.rank();
  FT_CHECK(offset >= 0, "BroadcastRead: input of higher rank than the output");
  for (int j = 0; j < input.rank(); ++j) {
    bool stretched = input.shape[j] == 1 && out.shape[j + offset] != 1;
    access.index.push_back(stretched ? ix::Const(0) : ix::Var(j + offset));
  }
  return access;
}

AccessMap BroadcastAccess(std::span<const TensorType> inputs, const TensorType& out) {
  AccessMap map;
  for (const TensorType& t : inputs) map.inputs.push_back(BroadcastRead(t, out));
  return map;
}

InputAccess IdentityRead(int rank) {
  InputAccess access;
  for (int j = 0; j < rank; ++j) access.index.push_back(ix::Var(j));
  return access;
}

void RequireSameDType(std::string_view op, std::span<const TensorType> inputs) {
  for (size_t i = 1; i < inputs.size(); ++i) {
    if (inputs[i].dtype != inputs[0].dtype) {
      Fail(op, "operand dtypes differ: {} and {}", inputs[0].ToString(), inputs[i].ToString());
    }
  }
}

void RequireFloat(std::string_view op, const TensorType& t) {
  if (t.dtype != DType::kFloat32) Fail(op, "expects a float32 tensor, got {}", t.ToString());
}

void RequireNumeric(std::string_view op, const TensorType& t) {
  if (t.dtype != DType::kFloat32 && t.dtype != DType::kInt32) {
    Fail(op, "expects a float32 or int32 tensor, got {}", t.ToString());
  }
}

double ScalarFlops(const OpDef& op, std::span<const TensorType> inputs, const TensorType& out,
                   const Attrs& attrs) {
  return static_cast<double>(CountScalarFlops(op.scalar(inputs, out, attrs))) *
         static_cast<double>(out.NumElements());
}

std::vector<int> NormalizeAxes(std::string_view op, const IntList& axes, int rank) {
  std::vector<int> result;
  for (int64_t a : axes) {
    int axis = NormalizeAxis(op, a, rank);
    if (std::find(result.begin(), result.end(), axis) != result.end()) {
      Fail(op, "axis {} appears twice", a);
    }
    result.push_back(axis);
  }
  return result;
}

}  // namespace fusetune::ops
