#pragma once
// GEMM efficiency: fusetune's matmul kernels as a fraction of the core's FMA peak, the peak
// measured by a JIT kernel of our own (worker/codegen/fma_peak.h) in the same round-robin rounds
// as the kernels, beside OpenBLAS's and oneDNN's sgemm on the same shapes.
#include "bench/matmul/openblas.h"
#include "worker/codegen/jit.h"

namespace fusetune::bench {

// The FMA peak at 1 and 2 threads for several chain counts, and a C++ intrinsics cross-check.
void BenchPeak(codegen::Jit& jit);

// The BERT layer's GEMM shapes and square 512 / 1024 at 1 and 2 threads. `sweep`: also every
// schedule of MatmulScheduleSpace (the best is what a tune could pick).
void BenchEfficiency(codegen::Jit& jit, const OpenBlas& blas, bool sweep);

}  // namespace fusetune::bench
