#pragma once
// GEMM efficiency: fusetune's matmul kernels as a fraction of the core's FMA peak, the peak
// measured by a JIT kernel of our own (worker/codegen/fma_peak.h) in the same round-robin rounds
// as the kernels, beside OpenBLAS's and oneDNN's sgemm on the same shapes.
#include <string>
#include <vector>

#include "bench/matmul/openblas.h"
#include "ir/plan.h"
#include "worker/codegen/jit.h"

namespace fusetune::bench {

// The FMA peak at 1 and 2 threads for several chain counts, and a C++ intrinsics cross-check.
void BenchPeak(codegen::Jit& jit);

struct GemmOptions {
  bool sweep = false;           // also every schedule of MatmulScheduleSpace (a tune's choice)
  std::vector<Schedule> extra;  // also these schedules (--schedule mr=12,nr=32,...)
  std::string only;             // shapes whose name contains this ("" = all)
  std::vector<int> threads{1, 2};
};

// The BERT layer's GEMM shapes and square 512 / 1024: ours at the default schedule (and the
// best of the sweep / the extra schedules), OpenBLAS and oneDNN, against the peak.
void BenchEfficiency(codegen::Jit& jit, const OpenBlas& blas, const GemmOptions& options);

}  // namespace fusetune::bench
