#pragma once
// Tensor types (static shapes) and dense row-major tensor values.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/dtype.h"

namespace fusetune {

using Shape = std::vector<int64_t>;

struct TensorType {
  DType dtype = DType::kFloat32;
  Shape shape;  // empty = scalar

  int rank() const { return static_cast<int>(shape.size()); }
  int64_t NumElements() const;
  int64_t NumBytes() const { return NumElements() * static_cast<int64_t>(DTypeSize(dtype)); }
  // Relay spelling: Tensor[(12, 256, 64), float32]; a scalar is float32.
  std::string ToString() const;
  bool operator==(const TensorType&) const = default;
};

// Row-major strides in elements.
std::vector<int64_t> RowMajorStrides(const Shape& shape);

// A dense tensor. Storage is 64-byte aligned so kernels may use aligned vector loads.
// Element access through double keeps the interpreter generic over dtypes; float32 values
// round-trip exactly through double.
class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(TensorType type);  // zero-filled

  const TensorType& type() const { return type_; }
  DType dtype() const { return type_.dtype; }
  const Shape& shape() const { return type_.shape; }
  int64_t size() const { return type_.NumElements(); }

  double Get(int64_t flat_index) const;
  void Set(int64_t flat_index,
           double value);  // rounds to the dtype (float32: nearest; int32: toward zero)
  // Runs of elements, with Get's values and Set's rounding, float32 without a dispatch per
  // element (the reference interpreter's row and matrix copies): dst[j] = element offset +
  // stride * j, for j < n; and elements offset .. offset + n - 1 = src.
  void GetStrided(int64_t offset, int64_t stride, int64_t n, double* dst) const;
  void SetRange(int64_t offset, int64_t n, const double* src);

  void* data() { return storage_.get(); }
  const void* data() const { return storage_.get(); }
  template <typename T>
  T* as() {
    return static_cast<T*>(data());
  }
  template <typename T>
  const T* as() const {
    return static_cast<const T*>(data());
  }

  // Deterministic pseudo-random contents (fixed seed): floats in [-1, 1), ints in [-8, 8), bools
  // 50/50.
  static Tensor Random(const TensorType& type, uint64_t seed);
  static Tensor Scalar(DType dtype, double value);

 private:
  struct FreeDeleter {
    void operator()(void* p) const;
  };
  TensorType type_;
  std::shared_ptr<void> storage_;
};

// Largest |a - b| over all elements; shapes must match. NaNs in the same place count as equal.
double MaxAbsDifference(const Tensor& a, const Tensor& b);

}  // namespace fusetune
