#pragma once
// GEMM efficiency: fusetune's matmul kernels as a fraction of the core's FMA peak, the peak
// measured by a JIT kernel of our own (worker/codegen/fma_peak.h) in the same round-robin rounds
// as the kernels, beside OpenBLAS's and oneDNN's sgemm on the same shapes.
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench/matmul/openblas.h"
#include "ir/plan.h"
#include "worker/codegen/fma_peak.h"
#include "worker/codegen/jit.h"

namespace fusetune::bench {

// The peak kernel of the chain count that runs fastest here, at 1 thread (8 chains hide a 4-cycle
// latency on 2 pipes; more are free as long as they fit the registers).
std::unique_ptr<codegen::FmaPeakKernel> FastestPeak(codegen::Jit& jit);

// The FMA peak at 1 and 2 threads for several chain counts, and a C++ intrinsics cross-check.
void BenchPeak(codegen::Jit& jit);

struct GemmOptions {
  bool sweep = false;           // also every schedule of MatmulScheduleSpace (a tune's choice)
  std::vector<Schedule> extra;  // also these schedules (--schedule mr=12,nr=32,...)
  std::string only;             // shapes whose name contains this ("" = all)
  std::vector<int> threads{1, 2};
  std::vector<int64_t> seqs{128};  // BERT's sequence lengths: M of the denses, S of the bmms
  bool squares = true;             // also dense 512^3 and 1024^3
  std::vector<std::array<int64_t, 3>> denses;  // also these dense M x K x N (--dense)
  // "median" of the rounds (drift hits all alike), or "min": the fastest round, each round
  // a single call, which on a shared machine is the closest to an undisturbed core.
  bool use_min = false;
  // Caches evicted before every timed call (one call a sample): the weights come from memory, as
  // in a whole model, where a layer's weights were last read a layer ago.
  bool cold = false;
  // Calls of a dense read the next of this many copies of its weights in turn (PlanRunner::
  // CopyValue): beyond the last-level cache, the weights of every call come from memory, as in a
  // model of that many layers, while A stays warm. 1: one copy, warm.
  int layers = 1;
  int rounds = 0;  // 0: the default (9; 5 with a sweep)
};

// The BERT layer's GEMM shapes and square 512 / 1024: ours at the default schedule (and the
// best of the sweep / the extra schedules), OpenBLAS and oneDNN, against the peak.
void BenchEfficiency(codegen::Jit& jit, const OpenBlas& blas, const GemmOptions& options);

}  // namespace fusetune::bench
