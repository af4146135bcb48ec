#pragma once
// Kernel IR -> LLVM IR. Emits `extern "C" void <symbol>(void** buffers)` (kernel_abi.h) into the
// module, plus one internal function per outermost parallel loop (its body, called by the runtime
// pool through fusetune_parallel_for_chunked with a context block of the captured loop variables).
// Vectorized loops are vectorized here, explicitly (see kernel_ir.h); LLVM's O3 then cleans up.
// The result is verified; a malformed module is a code-generator bug (std::logic_error).
#include <string>

#include "worker/codegen/jit.h"
#include "worker/codegen/kernel_ir.h"

namespace fusetune::codegen {

void LowerKernel(const Kernel& kernel, Jit& jit, JitModule& module, const std::string& symbol);

}  // namespace fusetune::codegen
