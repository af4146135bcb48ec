#include "ir/tensor.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "ir/error.h"

namespace fusetune {

int64_t TensorType::NumElements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string TensorType::ToString() const {
  if (shape.empty()) return std::string(DTypeName(dtype));  // Relay writes a scalar type bare
  std::string dims;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) dims += ", ";
    dims += std::to_string(shape[i]);
  }
  if (shape.size() == 1) dims += ",";
  return fmt::format("Tensor[({}), {}]", dims, DTypeName(dtype));
}

std::vector<int64_t> RowMajorStrides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

void Tensor::FreeDeleter::operator()(void* p) const { std::free(p); }

Tensor::Tensor(TensorType type) : type_(std::move(type)) {
  size_t bytes = static_cast<size_t>(type_.NumBytes());
  size_t rounded = (bytes + 63) / 64 * 64;
  if (rounded == 0) rounded = 64;
  // calloc rather than aligned_alloc + memset: a large block comes straight from the kernel
  // already zero, and writing zeros over it first doubled the cost of every weight an import
  // decodes. The block is over-allocated by 64 bytes to align it.
  void* base = std::calloc(rounded + 64, 1);
  if (!base)
    throw UserError(
        fmt::format("out of memory allocating {} bytes for {}", bytes, type_.ToString()));
  void* p = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(base) + 63) & ~uintptr_t{63});
  storage_ = std::shared_ptr<void>(p, [base](void*) { std::free(base); });
}

double Tensor::Get(int64_t i) const {
  switch (type_.dtype) {
    case DType::kFloat32:
      return as<float>()[i];
    case DType::kInt32:
      return as<int32_t>()[i];
    case DType::kBool:
      return as<uint8_t>()[i] ? 1.0 : 0.0;
    default:
      FT_CHECK(false, fmt::format("no element access for {}", DTypeName(type_.dtype)));
  }
}

void Tensor::Set(int64_t i, double v) {
  switch (type_.dtype) {
    case DType::kFloat32:
      as<float>()[i] = static_cast<float>(v);
      return;
    case DType::kInt32: {
      // Toward zero; NaN stores 0 and out-of-range values saturate (a plain cast would be UB).
      double t = std::isnan(v) ? 0.0 : std::trunc(v);
      t = std::clamp(t, -2147483648.0, 2147483647.0);
      as<int32_t>()[i] = static_cast<int32_t>(t);
      return;
    }
    case DType::kBool:
      as<uint8_t>()[i] = v != 0.0;
      return;
    default:
      FT_CHECK(false, fmt::format("no element access for {}", DTypeName(type_.dtype)));
  }
}

void Tensor::GetStrided(int64_t offset, int64_t stride, int64_t n, double* dst) const {
  if (dtype() == DType::kFloat32) {
    const float* p = as<float>() + offset;
    for (int64_t j = 0; j < n; ++j) dst[j] = p[stride * j];
    return;
  }
  for (int64_t j = 0; j < n; ++j) dst[j] = Get(offset + stride * j);
}

void Tensor::SetRange(int64_t offset, int64_t n, const double* src) {
  if (dtype() == DType::kFloat32) {
    float* p = as<float>() + offset;
    for (int64_t j = 0; j < n; ++j) p[j] = static_cast<float>(src[j]);
    return;
  }
  for (int64_t j = 0; j < n; ++j) Set(offset + j, src[j]);
}

Tensor Tensor::Random(const TensorType& type, uint64_t seed) {
  Tensor t(type);
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
  auto unit = [&state] {
    // xorshift64*: fast, deterministic across platforms.
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    uint64_t r = state * 0x2545F4914F6CDD1Dull;
    return static_cast<double>(r >> 11) * 0x1.0p-53;  // [0, 1)
  };
  const int64_t n = t.size();
  switch (type.dtype) {
    case DType::kFloat32: {
      // Stored as Set stores a float32 (every measurement job's inputs: a seed graph at S=384
      // draws 2.4 M of them, and Set's dispatch per element was most of the time).
      float* p = t.as<float>();
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(unit() * 2.0 - 1.0);
      break;
    }
    case DType::kInt32:
      for (int64_t i = 0; i < n; ++i) t.Set(i, std::floor(unit() * 16.0) - 8.0);
      break;
    case DType::kBool:
      for (int64_t i = 0; i < n; ++i) t.Set(i, unit() < 0.5 ? 1.0 : 0.0);
      break;
    default:
      if (n > 0)
        throw UserError(fmt::format("{} tensors are not supported yet", DTypeName(type.dtype)));
  }
  return t;
}

Tensor Tensor::Scalar(DType dtype, double value) {
  Tensor t(TensorType{dtype, {}});
  t.Set(0, value);
  return t;
}

double MaxAbsDifference(const Tensor& a, const Tensor& b) {
  FT_CHECK(a.shape() == b.shape(), "MaxAbsDifference on different shapes");
  double worst = 0.0;
  for (int64_t i = 0; i < a.size(); ++i) {
    double x = a.Get(i), y = b.Get(i);
    if (std::isnan(x) && std::isnan(y)) continue;
    if (x == y) continue;  // equal infinities
    double d = std::fabs(x - y);
    if (std::isnan(d)) return INFINITY;
    worst = std::max(worst, d);
  }
  return worst;
}

}  // namespace fusetune
