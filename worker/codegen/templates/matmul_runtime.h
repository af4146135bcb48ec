#pragma once
// Runtime helpers that generated matmul kernels call. They are compiled once with the project (the
// B-packing transpose is the costliest thing to JIT: ~half of an 8x32 kernel's compile time when
// emitted per kernel), and the kernel calls them through their addresses.
#include <cstdint>

// Packs B(n, k), n in [0, n_count), k in [0, k_count), element at b[n * n_stride + k * k_stride],
// into panels of `nr` columns (nr % 16 == 0): out[(n / nr) * k_count * nr + k * nr + n % nr].
// Columns past n_count in the last panel are zero. `out` is 64-byte aligned.
extern "C" void fusetune_mm_pack_b(const float* b, int64_t n_stride, int64_t k_stride,
                                   int64_t n_count, int64_t k_count, int64_t nr, float* out);

// A 64-byte aligned scratch buffer of at least `bytes`, private to the calling thread, reused by
// later calls on that thread (so packing allocates nothing once warm; no page faults when timed).
extern "C" void* fusetune_mm_scratch(int64_t bytes);
