#include "ir/dtype.h"

namespace fusetune {

std::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "float32";
    case DType::kInt32:
      return "int32";
    case DType::kBool:
      return "bool";
    case DType::kFloat16:
      return "float16";
    case DType::kBFloat16:
      return "bfloat16";
  }
  return "?";
}

std::optional<DType> ParseDType(std::string_view name) {
  for (DType d :
       {DType::kFloat32, DType::kInt32, DType::kBool, DType::kFloat16, DType::kBFloat16}) {
    if (DTypeName(d) == name) return d;
  }
  return std::nullopt;
}

size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return 4;
    case DType::kInt32:
      return 4;
    case DType::kBool:
      return 1;
    case DType::kFloat16:
      return 2;
    case DType::kBFloat16:
      return 2;
  }
  return 0;
}

bool IsSupportedForCompute(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kInt32 || dtype == DType::kBool;
}

}  // namespace fusetune
