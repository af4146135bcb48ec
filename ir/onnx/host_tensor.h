#pragma once
// Values the importer knows at import time: initialisers, Constant nodes and the results of shape
// computations (Shape -> Gather -> Concat -> Reshape ...), which ONNX exporters spell in int64.
// The IR computes in float32/int32/bool only, so these live here, in double or int64, until a
// run-time op needs one and it is materialised as a graph constant or a parameter with data.
// float32 values (the weights: hundreds of MB in a real model) are the exception: they are held
// as the IR tensor they become, decoded once from the file and shared with the graph, not copied.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/tensor.h"

namespace onnx {
class TensorProto;
}

namespace fusetune::onnx_import {

// onnx::TensorProto::DataType values the importer handles.
enum OnnxType : int32_t {
  kOnnxFloat = 1,
  kOnnxInt32 = 6,
  kOnnxInt64 = 7,
  kOnnxBool = 9,
  kOnnxFloat16 = 10,
  kOnnxDouble = 11,
};

std::string OnnxTypeName(int32_t elem_type);  // "float", "int64", ... ("type 14" if unknown)
bool IsRealType(int32_t elem_type);           // float, double (and float16 in messages)
// The IR dtype a run-time value of this ONNX type has; nullopt when the IR cannot compute in it.
std::optional<DType> RuntimeDType(int32_t elem_type);
int32_t OnnxTypeOf(DType dtype);

struct HostTensor {
  int32_t elem_type = kOnnxFloat;
  Shape shape;
  // float32 values, held as the IR tensor they become (weights are most of a model's bytes).
  // Copies of this HostTensor share the buffer, and so does the graph once ToTensor hands the
  // tensor over; MutableFloats copies it first in either case.
  struct FloatBuffer {
    Tensor tensor;
    bool handed_over = false;  // a graph value holds `tensor`'s storage
  };
  std::shared_ptr<FloatBuffer> floats;
  std::vector<double> reals;  // double
  std::vector<int64_t> ints;  // int32, int64, bool (0 or 1)

  // Zero-filled; refuses element types the importer cannot hold.
  static HostTensor Zeros(int32_t elem_type, Shape shape);
  static HostTensor Ints(Shape shape, std::vector<int64_t> values);  // int64

  bool is_real() const { return IsRealType(elem_type); }
  int64_t size() const;
  int rank() const { return static_cast<int>(shape.size()); }
  double Real(int64_t i) const;
  int64_t Int(int64_t i) const;  // reals truncate toward zero
  // Stores `v` rounded to the element type (float: nearest float; ints: toward zero; bool: != 0).
  void SetReal(int64_t i, double v);
  void SetInt(int64_t i, int64_t v);
  // elem_type float only.
  const float* Floats() const { return floats->tensor.as<float>(); }
  float* MutableFloats();
};

// Decodes an initialiser or Constant value (raw_data or the typed fields). Throws UserError on
// external data, unsupported element types, counts that disagree with the dims, or more than
// `max_elements` elements.
HostTensor ParseTensorProto(const onnx::TensorProto& proto, int64_t max_elements);

// The IR tensor of a host value; throws UserError when the element type has no IR dtype.
Tensor ToTensor(const HostTensor& host, const std::string& what);

}  // namespace fusetune::onnx_import
