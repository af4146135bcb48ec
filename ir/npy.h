#pragma once
// Tensors as NumPy .npy files (format versions 1.0 and 2.0, C order, little-endian):
// float32 ('<f4'), int32 ('<i4') and bool ('|b1'). Anything else is refused with a UserError
// naming the file and the problem (Fortran order, big-endian, other dtypes, truncated data).
#include <string>

#include "ir/tensor.h"

namespace fusetune {

Tensor ReadNpy(const std::string& path);
void WriteNpy(const std::string& path, const Tensor& tensor);

// The same, on bytes in memory (`source` names them in errors).
Tensor ParseNpy(const std::string& bytes, const std::string& source);
std::string SerializeNpy(const Tensor& tensor);

}  // namespace fusetune
