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
// Weights packed at bind time (the matmul template's wpack knob): such a kernel's module also
// defines
//
//   extern "C" void <symbol>.bind(void** buffers, float* packed, int64_t slot);
//   extern "C" const int64_t <symbol>.bind_info[2];   // {index of B in buffers, packed bytes}
//
// bind(buffers, packed, slot) packs B = buffers[bind_info[0]] into `packed` (bind_info[1] bytes,
// 64-byte aligned) and records in table slot `slot` (0 .. kBoundWeightSlots - 1) that calls whose
// B is that pointer read the packed copy; bind(buffers, nullptr, slot) empties the slot. A call
// whose B matches no slot packs B itself, as a kernel without the knob does, so a caller that
// never binds still gets right results. A caller that changes the contents behind a bound pointer
// must bind again (CompiledKernel::Bind does all this; the executor binds in SetInputs).

namespace fusetune::codegen {

using KernelFn = void (*)(void** buffers);
using KernelBindFn = void (*)(void** buffers, float* packed, int64_t slot);
// One slot per weight a kernel is bound to: a 12-layer BERT binds its Q, K and V kernel 36 times.
inline constexpr int kBoundWeightSlots = 256;

}  // namespace fusetune::codegen
