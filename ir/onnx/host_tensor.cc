#include "ir/onnx/host_tensor.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include "ir/error.h"

namespace fusetune::onnx_import {
namespace {

bool IsHeldType(int32_t t) {
  return t == kOnnxFloat || t == kOnnxDouble || t == kOnnxInt32 || t == kOnnxInt64 ||
         t == kOnnxBool;
}

int64_t CountElements(const Shape& shape, int64_t max_elements, const std::string& what) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw UserError(fmt::format("{} has a negative dimension {}", what, d));
    if (d != 0 && n > max_elements / d) {
      throw UserError(
          fmt::format("{} has more than {} elements (the tensor size limit)", what, max_elements));
    }
    n *= d;
  }
  return n;
}

// Little-endian raw bytes of `n` elements of type T, widened into `out`.
template <typename T, typename Out>
void DecodeRaw(const std::string& raw, int64_t n, std::vector<Out>& out, const std::string& what) {
  if (raw.size() != static_cast<size_t>(n) * sizeof(T)) {
    throw UserError(fmt::format("{}: raw_data has {} bytes, but {} elements of {} bytes need {}",
                                what, raw.size(), n, sizeof(T),
                                n * static_cast<int64_t>(sizeof(T))));
  }
  out.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, raw.data() + i * sizeof(T), sizeof(T));
    out[i] = static_cast<Out>(v);
  }
}

template <typename Field, typename Out>
void DecodeField(const Field& field, int64_t n, std::vector<Out>& out, const std::string& what) {
  if (field.size() != n) {
    throw UserError(
        fmt::format("{}: holds {} values, but its dims need {}", what, field.size(), n));
  }
  out.assign(field.begin(), field.end());
}

// float32 straight into the IR tensor it becomes: the one copy from the file's bytes.
Tensor DecodeFloats(const onnx::TensorProto& proto, bool raw, int64_t n, const Shape& shape,
                    const std::string& what) {
  const size_t count = raw ? proto.raw_data().size() / sizeof(float) : proto.float_data_size();
  if (raw && proto.raw_data().size() != static_cast<size_t>(n) * sizeof(float)) {
    throw UserError(fmt::format("{}: raw_data has {} bytes, but {} elements of {} bytes need {}",
                                what, proto.raw_data().size(), n, sizeof(float),
                                n * static_cast<int64_t>(sizeof(float))));
  }
  if (!raw && count != static_cast<size_t>(n)) {
    throw UserError(fmt::format("{}: holds {} values, but its dims need {}", what, count, n));
  }
  Tensor t(TensorType{DType::kFloat32, shape});
  if (raw) {
    // ONNX raw_data is little-endian, as are the hosts fusetune runs on.
    std::memcpy(t.data(), proto.raw_data().data(), proto.raw_data().size());
  } else {
    std::copy(proto.float_data().begin(), proto.float_data().end(), t.as<float>());
  }
  return t;
}

}  // namespace

std::string OnnxTypeName(int32_t t) {
  switch (t) {
    case kOnnxFloat:
      return "float";
    case 2:
      return "uint8";
    case 3:
      return "int8";
    case 4:
      return "uint16";
    case 5:
      return "int16";
    case kOnnxInt32:
      return "int32";
    case kOnnxInt64:
      return "int64";
    case 8:
      return "string";
    case kOnnxBool:
      return "bool";
    case kOnnxFloat16:
      return "float16";
    case kOnnxDouble:
      return "double";
    case 12:
      return "uint32";
    case 13:
      return "uint64";
    case 16:
      return "bfloat16";
    default:
      return fmt::format("type {}", t);
  }
}

bool IsRealType(int32_t t) { return t == kOnnxFloat || t == kOnnxDouble || t == kOnnxFloat16; }

std::optional<DType> RuntimeDType(int32_t t) {
  switch (t) {
    case kOnnxFloat:
      return DType::kFloat32;
    case kOnnxInt32:
      return DType::kInt32;
    case kOnnxBool:
      return DType::kBool;
    default:
      return std::nullopt;
  }
}

int32_t OnnxTypeOf(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return kOnnxFloat;
    case DType::kInt32:
      return kOnnxInt32;
    case DType::kBool:
      return kOnnxBool;
    case DType::kFloat16:
      return kOnnxFloat16;
    case DType::kBFloat16:
      return 16;
  }
  return 0;
}

HostTensor HostTensor::Zeros(int32_t elem_type, Shape shape) {
  if (!IsHeldType(elem_type)) {
    throw UserError(
        fmt::format("element type {} is not supported (float, double, int32, int64 "
                    "and bool are)",
                    OnnxTypeName(elem_type)));
  }
  HostTensor t;
  t.elem_type = elem_type;
  t.shape = std::move(shape);
  int64_t n = 1;
  for (int64_t d : t.shape) n *= d;
  if (elem_type == kOnnxFloat)
    t.floats =
        std::make_shared<FloatBuffer>(FloatBuffer{Tensor(TensorType{DType::kFloat32, t.shape})});
  else if (t.is_real())
    t.reals.assign(static_cast<size_t>(n), 0.0);
  else
    t.ints.assign(static_cast<size_t>(n), 0);
  return t;
}

HostTensor HostTensor::Ints(Shape shape, std::vector<int64_t> values) {
  HostTensor t;
  t.elem_type = kOnnxInt64;
  t.shape = std::move(shape);
  t.ints = std::move(values);
  return t;
}

int64_t HostTensor::size() const {
  if (elem_type == kOnnxFloat) return floats ? floats->tensor.size() : 0;
  return static_cast<int64_t>(is_real() ? reals.size() : ints.size());
}

double HostTensor::Real(int64_t i) const {
  if (elem_type == kOnnxFloat) return Floats()[i];
  return is_real() ? reals[i] : static_cast<double>(ints[i]);
}

float* HostTensor::MutableFloats() {
  FT_CHECK(elem_type == kOnnxFloat, "MutableFloats on a float tensor");
  if (floats.use_count() > 1 || floats->handed_over) {  // another reader sees the old values
    const Tensor& old = floats->tensor;
    auto own = std::make_shared<FloatBuffer>(FloatBuffer{Tensor(old.type())});
    std::memcpy(own->tensor.data(), old.data(), static_cast<size_t>(old.type().NumBytes()));
    floats = std::move(own);
  }
  return floats->tensor.as<float>();
}

int64_t HostTensor::Int(int64_t i) const {
  if (!is_real()) return ints[i];
  double v = std::trunc(Real(i));
  // Out-of-range and NaN values saturate rather than invoking undefined behaviour.
  if (!(v > -9.2e18)) return INT64_MIN;
  if (v > 9.2e18) return INT64_MAX;
  return static_cast<int64_t>(v);
}

void HostTensor::SetReal(int64_t i, double v) {
  if (elem_type == kOnnxFloat) {
    MutableFloats()[i] = static_cast<float>(v);
  } else if (is_real()) {
    reals[i] = v;
  } else if (elem_type == kOnnxBool) {
    ints[i] = v != 0.0;
  } else {
    double t = std::trunc(v);
    ints[i] = !(t > -9.2e18) ? INT64_MIN : t > 9.2e18 ? INT64_MAX : static_cast<int64_t>(t);
    if (elem_type == kOnnxInt32) ints[i] = static_cast<int32_t>(ints[i]);
  }
}

void HostTensor::SetInt(int64_t i, int64_t v) {
  if (is_real())
    SetReal(i, static_cast<double>(v));
  else if (elem_type == kOnnxBool)
    ints[i] = v != 0;
  else if (elem_type == kOnnxInt32)
    ints[i] = static_cast<int32_t>(v);
  else
    ints[i] = v;
}

HostTensor ParseTensorProto(const onnx::TensorProto& proto, int64_t max_elements) {
  const std::string what = proto.name().empty() ? "tensor" : "tensor '" + proto.name() + "'";
  if (proto.data_location() == onnx::TensorProto::EXTERNAL || proto.external_data_size() > 0) {
    throw UserError(
        fmt::format("{} keeps its data in an external file; save the model as one file "
                    "(onnx.save_model(model, path, save_as_external_data=False))",
                    what));
  }
  const int32_t type = proto.data_type();
  if (!IsHeldType(type)) {
    throw UserError(
        fmt::format("{} has element type {}; the importer handles float, double, "
                    "int32, int64 and bool tensors",
                    what, OnnxTypeName(type)));
  }
  HostTensor t;
  t.elem_type = type;
  t.shape.assign(proto.dims().begin(), proto.dims().end());
  const int64_t n = CountElements(t.shape, max_elements, what);
  const bool raw = proto.has_raw_data();
  switch (type) {
    case kOnnxFloat:
      t.floats = std::make_shared<HostTensor::FloatBuffer>(
          HostTensor::FloatBuffer{DecodeFloats(proto, raw, n, t.shape, what)});
      break;
    case kOnnxDouble:
      if (raw)
        DecodeRaw<double>(proto.raw_data(), n, t.reals, what);
      else
        DecodeField(proto.double_data(), n, t.reals, what);
      break;
    case kOnnxInt32:
      if (raw)
        DecodeRaw<int32_t>(proto.raw_data(), n, t.ints, what);
      else
        DecodeField(proto.int32_data(), n, t.ints, what);
      break;
    case kOnnxInt64:
      if (raw)
        DecodeRaw<int64_t>(proto.raw_data(), n, t.ints, what);
      else
        DecodeField(proto.int64_data(), n, t.ints, what);
      break;
    case kOnnxBool:
      if (raw)
        DecodeRaw<uint8_t>(proto.raw_data(), n, t.ints, what);
      else
        DecodeField(proto.int32_data(), n, t.ints, what);
      for (int64_t& v : t.ints) v = v != 0;
      break;
  }
  return t;
}

Tensor ToTensor(const HostTensor& host, const std::string& what) {
  std::optional<DType> dtype = RuntimeDType(host.elem_type);
  if (!dtype) {
    throw UserError(fmt::format(
        "{} ({}) is needed at run time, but fusetune computes in float32, int32 and bool; {} "
        "values are only supported in shape computations that fold at import",
        what, OnnxTypeName(host.elem_type), OnnxTypeName(host.elem_type)));
  }
  if (*dtype == DType::kFloat32) {
    // Shared, not copied; a later write to `host` copies first (MutableFloats).
    host.floats->handed_over = true;
    const Tensor& values = host.floats->tensor;
    if (values.shape() == host.shape) return values;
    Tensor t(TensorType{DType::kFloat32, host.shape});  // after a reshape at import: small
    std::memcpy(t.data(), values.data(), static_cast<size_t>(values.type().NumBytes()));
    return t;
  }
  Tensor t(TensorType{*dtype, host.shape});
  for (int64_t i = 0; i < host.size(); ++i) t.Set(i, static_cast<double>(host.ints[i]));
  return t;
}

}  // namespace fusetune::onnx_import
