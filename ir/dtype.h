#pragma once
#include <cstddef>
#include <optional>
#include <string_view>

namespace fusetune {

// float16 and bfloat16 parse so Relay text pastes in; kernels and the interpreter refuse them
// with a clear error (see RequireSupported).
enum class DType { kFloat32, kInt32, kBool, kFloat16, kBFloat16 };

std::string_view DTypeName(DType dtype);
std::optional<DType> ParseDType(std::string_view name);
size_t DTypeSize(DType dtype);
bool IsSupportedForCompute(DType dtype);

}  // namespace fusetune
