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

namespace fusetune::codegen {

using KernelFn = void (*)(void** buffers);

}  // namespace fusetune::codegen
