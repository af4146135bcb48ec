#pragma once
// The ceiling of a broadcast GEMM micro-kernel on this core, apart from any cache beyond L1:
// register tiles written with C++ intrinsics (GCC, not our JIT) whose operands stay in L1, timed
// in the same rounds as our FMA peak kernel. Each tile also runs with its A value taken from a
// register instead of broadcast from memory (not a GEMM: every row multiplies the same value),
// which prices the broadcast loads on their own.
#include "worker/codegen/jit.h"

namespace fusetune::bench {

void BenchL1Ceiling(codegen::Jit& jit);

}  // namespace fusetune::bench
