#pragma once
// The calling convention of every generated kernel (a contract between the code generator, the
// executor, the matmul template and anything that calls a compiled kernel):
//
//   extern "C" void kernel(void** buffers);
//
// `buffers` holds one pointer per tensor, in this order: the FusedGroup's `inputs` (ir/fusion.h,
// ascending ValueId), then its `outputs` (ascending ValueId). Each points at dense row-major data
// of the value's type: float32 as float, int32 as int32_t, bool as one byte (0 or 1). Input buffers
// are only read; output buffers are fully written. Buffers may be unaligned (kernels never claim
// more than element alignment), must not overlap an output, and a scalar (rank 0) is one element.
// A kernel is re-entrant only with respect to different buffers; it may call the runtime thread
// pool (runtime/thread_pool.h), so two kernels must not run at the same time in one process.
//
// The one exception to "dense row-major data": a kernel compiled with packed weights
// (CompileOptions::pack_weights) lists them in CompiledKernel::packed_weights(); the buffer of
// such an input must hold the weight as PackWeight() lays it out, not the weight itself.
#include <cstdint>

#include "ir/graph.h"

namespace fusetune::codegen {

using KernelFn = void (*)(void** buffers);

// A matmul B operand that holds a weight (a value with data), read by the kernel pre-packed.
struct PackedWeight {
  int buffer = -1;  // its index in `buffers`
  ValueId value = -1;
  int64_t n = 0, k = 0;  // B is n x k
  int64_t row_stride = 0,
          k_stride = 0;  // element (n, k) of the weight at n*row_stride + k*k_stride
  int64_t nr = 0;        // columns per packed panel
  int64_t PackedFloats() const { return (n + nr - 1) / nr * nr * k; }
  bool operator==(const PackedWeight&) const = default;
};

// Lays out `weight` (the dense value, float32) as the kernel reads it: PackedFloats() floats at
// 64-byte aligned `out`.
void PackWeight(const PackedWeight& layout, const float* weight, float* out);

}  // namespace fusetune::codegen
