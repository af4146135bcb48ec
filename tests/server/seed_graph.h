#pragma once
// The seed's pattern at a small size, for the server tests: %0 batch_matmul, %1 ones_like(%0),
// %2 where(%z, %0, %1).

namespace fusetune {

inline constexpr const char* kSeed =
    R"(fn (%x: Tensor[(12, 32, 16), float32], %y: Tensor[(12, 32, 16), float32], %z: Tensor[(12, 32, 32), float32]) {
  %0 = nn.batch_matmul(%x, %y);
  %1 = ones_like(%0);
  where(%z, %0, %1)
})";

}  // namespace fusetune
