#include "bench/matmul/l1_ceiling.h"

#include <immintrin.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench/matmul/efficiency.h"
#include "bench/matmul/plan_runner.h"
#include "bench/matmul/timing.h"
#include "worker/codegen/fma_peak.h"
#include "worker/codegen/runtime/aligned_buffer.h"
#include "worker/codegen/runtime/thread_pool.h"

namespace fusetune::bench {
namespace {

constexpr int64_t kKc = 128;       // B's panel of kc x nr floats: 32 KiB at nr = 64, in L1
constexpr int kCallsPerRun = 400;  // tile calls per timed call (one tile call is ~0.5 µs)

// C[mr][nv x 16] = A[k][mr] x B[k][nv x 16] over kc: B's rows loaded, A's values broadcast from
// memory (kFromMemory) or, not a GEMM, one A value kept in a register that the compiler may not
// hoist, so the loop holds every FMA and B load but no broadcast.
template <int MR, int NV, bool kFromMemory>
__attribute__((target("avx512f"), noinline)) void Tile(const float* a, const float* b, float* c,
                                                       int64_t kc) {
  // Every loop over the tile unrolled, so the accumulators live in registers at -O2 too; each
  // starts apart, so that with A in a register no two rows' products can be merged.
  __m512 acc[MR][NV];
#pragma GCC unroll 32
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 32
    for (int j = 0; j < NV; ++j) acc[i][j] = _mm512_set1_ps(static_cast<float>(i * NV + j));
  __m512 held = _mm512_set1_ps(a[0]);
  for (int64_t k = 0; k < kc; ++k) {
    __m512 bv[NV];
#pragma GCC unroll 32
    for (int j = 0; j < NV; ++j) bv[j] = _mm512_load_ps(b + (k * NV + j) * 16);
#pragma GCC unroll 32
    for (int i = 0; i < MR; ++i) {
      const __m512 av = kFromMemory ? _mm512_set1_ps(a[k * MR + i]) : held;
#pragma GCC unroll 32
      for (int j = 0; j < NV; ++j) acc[i][j] = _mm512_fmadd_ps(av, bv[j], acc[i][j]);
    }
    if (!kFromMemory) asm volatile("" : "+v"(held));
  }
#pragma GCC unroll 32
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 32
    for (int j = 0; j < NV; ++j) _mm512_store_ps(c + (i * NV + j) * 16, acc[i][j]);
}

// A (kc x mr), B (kc x nv x 16) and C (mr x nv x 16), 64-byte aligned.
struct Operands {
  explicit Operands(int mr, int nv)
      : a(Filled(kKc * mr)), b(Filled(kKc * nv * 16)), c(Filled(int64_t{mr} * nv * 16)) {}
  static runtime::AlignedBuffer Filled(int64_t floats) {
    runtime::AlignedBuffer buffer(static_cast<size_t>(floats) * sizeof(float));
    for (int64_t i = 0; i < floats; ++i) buffer.as<float>()[i] = 1e-3f * static_cast<float>(i % 7);
    return buffer;
  }
  runtime::AlignedBuffer a, b, c;
};

struct TileRow {
  std::string name;
  double flops;                       // per timed call
  size_t from_memory, from_register;  // candidate indices
};

template <int MR, int NV>
void AddTile(std::vector<Candidate>& cands, std::vector<TileRow>& rows,
             std::vector<std::unique_ptr<Operands>>& operands) {
  const Operands& o = *operands.emplace_back(std::make_unique<Operands>(MR, NV));
  TileRow row{fmt::format("{}x{}", MR, NV * 16), 2.0 * MR * NV * 16 * kKc * kCallsPerRun,
              cands.size(), cands.size() + 1};
  cands.push_back({row.name + " A from L1", [] { runtime::SetNumThreads(1); },
                   [&o] {
                     for (int i = 0; i < kCallsPerRun; ++i)
                       Tile<MR, NV, true>(o.a.as<float>(), o.b.as<float>(), o.c.as<float>(), kKc);
                   }});
  cands.push_back({row.name + " A in a register", [] { runtime::SetNumThreads(1); },
                   [&o] {
                     for (int i = 0; i < kCallsPerRun; ++i)
                       Tile<MR, NV, false>(o.a.as<float>(), o.b.as<float>(), o.c.as<float>(), kKc);
                   }});
  rows.push_back(row);
}

}  // namespace

void BenchL1Ceiling(codegen::Jit& jit) {
  std::printf(
      "\n== L1 ceiling: C++ register tiles, A (mr x kc) and B (kc x nr) in L1, kc = %ld, 1 thread, "
      "against the FMA peak (same rounds) ==\n",
      static_cast<long>(kKc));
  if (!__builtin_cpu_supports("avx512f")) {
    std::printf("  skipped: the tiles are AVX-512\n");
    return;
  }
  auto peak_kernel = FastestPeak(jit);
  codegen::FmaPeakRun peak{peak_kernel.get(), 1};
  std::vector<Candidate> cands{
      {"FMA peak", [] { runtime::SetNumThreads(1); }, [&] { peak.Call(); }}};
  std::vector<TileRow> rows;
  std::vector<std::unique_ptr<Operands>> operands;
  // The space's 4x64, 6x64 and 12x32 (ir/matmul_schedule.cc), and 8x48 and 14x32, which fit the
  // 32 zmm registers too.
  AddTile<4, 4>(cands, rows, operands);
  AddTile<6, 4>(cands, rows, operands);
  AddTile<8, 3>(cands, rows, operands);
  AddTile<12, 2>(cands, rows, operands);
  AddTile<14, 2>(cands, rows, operands);
  Compare(cands, 9, 20);
  const double peak_gflops = Gflops(peak.Flops(), cands[0].median_us);
  std::printf("  FMA peak %.1f GFLOP/s\n  %-6s %22s %26s\n", peak_gflops, "tile",
              "A broadcast from L1", "A in a register (no GEMM)");
  for (const TileRow& r : rows) {
    const double mem = Gflops(r.flops, cands[r.from_memory].median_us);
    const double reg = Gflops(r.flops, cands[r.from_register].median_us);
    std::printf("  %-6s %13.1f (%5.1f%%) %17.1f (%5.1f%%)\n", r.name.c_str(), mem,
                100 * mem / peak_gflops, reg, 100 * reg / peak_gflops);
  }
}

}  // namespace fusetune::bench
