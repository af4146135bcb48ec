#include "bench/matmul/efficiency.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench/matmul/plan_runner.h"
#include "bench/matmul/timing.h"
#include "ir/matmul_schedule.h"
#include "worker/codegen/fma_peak.h"
#include "worker/codegen/runtime/thread_pool.h"
#include "worker/codegen/templates/matmul.h"

#ifdef FUSETUNE_HAVE_DNNL
#include <dnnl.h>
#include <omp.h>
#endif

namespace fusetune::bench {
namespace {

using codegen::FmaPeakRun;
using codegen::kFmaPeakIters;

Candidate PeakCandidate(FmaPeakRun* run) {
  return {fmt::format("FMA peak {}t ({} chains)", run->threads, run->kernel->chains()),
          [t = run->threads] { runtime::SetNumThreads(t); }, [run] { run->Call(); }};
}

// The cross-check: 16 chains of <16 x float> FMA from C++ intrinsics (GCC, not our JIT).
__attribute__((target("avx512f"))) float IntrinsicChains(int64_t iters) {
  __m512 acc[16];
  for (int i = 0; i < 16; ++i) acc[i] = _mm512_set1_ps(i * 0.001f);
  const __m512 scale = _mm512_set1_ps(0.9999f), add = _mm512_set1_ps(0.0001f);
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) acc[i] = _mm512_fmadd_ps(acc[i], scale, add);
  }
  __m512 sum = acc[0];
  for (int i = 1; i < 16; ++i) sum = _mm512_add_ps(sum, acc[i]);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, sum);
  float total = 0;
  for (float v : lanes) total += v;
  return total;
}

// One GEMM-shaped problem: a Relay graph whose node "0" is the product, and the peers' calls.
struct Shape {
  std::string name;
  int64_t batch, m, k, n;
  bool transpose_b;  // B stored [n, k] (nn.dense's weight, Q·Kᵀ), else [k, n] (scores·V)
  // A dense with bias + erf-GELU fused as its epilogue, as PyTorch's ONNX export of BERT's FFN 1
  // spells it (add, divide by sqrt 2, erf, add 1, multiply, multiply by 0.5). Its GFLOP/s count
  // the product's FLOPs only, so the epilogue's cost shows as a lower % of the peak.
  bool gelu = false;

  double Flops() const { return 2.0 * batch * m * k * n; }
  std::vector<std::string> Nodes() const {
    if (gelu) return {"0", "1", "2", "3", "4", "5", "6"};
    return {"0"};
  }
  std::string Relay() const {
    if (gelu)
      return fmt::format(
          "fn (%x: {}, %y: {}, %b: {}) {{\n  %0 = nn.dense(%x, %y);\n  %1 = add(%0, %b);\n"
          "  %2 = divide(%1, 1.41421f);\n  %3 = erf(%2);\n  %4 = add(%3, 1f);\n"
          "  %5 = multiply(%1, %4);\n  multiply(%5, 0.5f)\n}}",
          T({m, k}), T({n, k}), T({n}));
    if (batch == 1 && transpose_b)
      return fmt::format("fn (%x: {}, %y: {}) {{ nn.dense(%x, %y) }}", T({m, k}), T({n, k}));
    return fmt::format("fn (%x: {}, %y: {}) {{ nn.batch_matmul(%x, %y, transpose_b={}) }}",
                       T({batch, m, k}), transpose_b ? T({batch, n, k}) : T({batch, k, n}),
                       transpose_b ? "True" : "False");
  }
};

// The BERT-base layer's GEMMs at sequence length s (one sequence: M = s), then the squares.
std::vector<Shape> Shapes(const GemmOptions& options) {
  const std::vector<int64_t>& seqs = options.seqs;
  std::vector<Shape> shapes;
  for (int64_t s : seqs) {
    auto name = [s](const char* kind, int64_t b, int64_t k, int64_t n, const char* what) {
      return b == 1 ? fmt::format("{} {}x{}x{} ({})", kind, s, k, n, what)
                    : fmt::format("{} {}x{}x{}x{} ({})", kind, b, s, k, n, what);
    };
    shapes.push_back({name("dense", 1, 768, 2304, "QKV"), 1, s, 768, 2304, true});
    shapes.push_back({name("dense", 1, 768, 768, "out proj"), 1, s, 768, 768, true});
    shapes.push_back({name("dense", 1, 768, 3072, "FFN 1"), 1, s, 768, 3072, true});
    shapes.push_back(
        {name("dense", 1, 768, 3072, "FFN 1 + erf-GELU"), 1, s, 768, 3072, true, true});
    shapes.push_back({name("dense", 1, 3072, 768, "FFN 2"), 1, s, 3072, 768, true});
    shapes.push_back({name("bmm", 12, 64, s, "Q.K^T"), 12, s, 64, s, true});
    shapes.push_back({name("bmm", 12, s, 64, "P.V"), 12, s, s, 64, false});
  }
  for (auto [m, k, n] : options.denses)
    shapes.push_back({fmt::format("dense {}x{}x{}", m, k, n), 1, m, k, n, true});
  if (options.squares) {
    shapes.push_back({"dense 512x512x512", 1, 512, 512, 512, true});
    shapes.push_back({"dense 1024x1024x1024", 1, 1024, 1024, 1024, true});
  }
  return shapes;
}

struct Row {
  std::string shape;
  // wpack: the default schedule with B packed once at bind time (weights only: 0 for the batch
  // matmuls, whose B is an activation).
  double peak = 0, ours = 0, wpack = 0, best_space = 0, openblas = 0, onednn = 0;
  std::string best_schedule;
};

void PrintRows(int threads, const std::vector<Row>& rows, bool sweep, bool use_min) {
  std::printf("\n%d thread(s): GFLOP/s (%% of the FMA peak of the same rounds)%s\n", threads,
              use_min ? ", fastest round of each" : "");
  std::printf("  %-30s %7s %15s %15s", "shape", "peak", "ours default", "ours wpack");
  if (sweep) std::printf(" %15s", "ours best");
  std::printf(" %15s %15s %12s\n", "OpenBLAS", "oneDNN", "ours/best peer");
  auto cell = [](double g, double peak) {
    if (g <= 0) return fmt::format("{:>15}", "-");
    return fmt::format("{:7.1f} ({:4.1f}%)", g, 100 * g / peak);
  };
  double log_ours = 0, log_best = 0, log_wpack = 0;
  int wpack_rows = 0;
  for (const Row& r : rows) {
    double peer = std::max(r.openblas, r.onednn);
    std::printf("  %-30s %7.1f %s %s", r.shape.c_str(), r.peak, cell(r.ours, r.peak).c_str(),
                cell(r.wpack, r.peak).c_str());
    if (sweep) std::printf(" %s", cell(r.best_space, r.peak).c_str());
    std::printf(" %s %s %12s\n", cell(r.openblas, r.peak).c_str(), cell(r.onednn, r.peak).c_str(),
                peer > 0 ? fmt::format("{:.2f}", r.ours / peer).c_str() : "-");
    log_ours += std::log(r.ours / r.peak);
    log_best += std::log(std::max({r.ours, r.wpack, r.best_space}) / r.peak);
    if (r.wpack > 0) {
      log_wpack += std::log(r.wpack / r.ours);
      ++wpack_rows;
    }
  }
  std::printf("  geomean %% of peak: default %.1f%%", 100 * std::exp(log_ours / rows.size()));
  if (wpack_rows)
    std::printf(", wpack / default on the denses %.3fx", std::exp(log_wpack / wpack_rows));
  if (sweep) std::printf(", best of the space %.1f%%", 100 * std::exp(log_best / rows.size()));
  std::printf("\n");
  if (sweep) {
    for (const Row& r : rows)
      std::printf("  best schedule, %-30s %s (%.1f%%)\n", r.shape.c_str(), r.best_schedule.c_str(),
                  100 * r.best_space / r.peak);
  }
}

}  // namespace

std::unique_ptr<codegen::FmaPeakKernel> FastestPeak(codegen::Jit& jit) {
  std::vector<std::unique_ptr<codegen::FmaPeakKernel>> kernels;
  std::vector<std::unique_ptr<FmaPeakRun>> runs;
  std::vector<Candidate> cands;
  for (int chains : {8, 12, 16, 24}) {
    kernels.push_back(codegen::CompileFmaPeak(jit, chains));
    runs.push_back(std::make_unique<FmaPeakRun>(FmaPeakRun{kernels.back().get(), 1}));
    cands.push_back(PeakCandidate(runs.back().get()));
  }
  Compare(cands, 5, 20);
  size_t best = 0;
  for (size_t i = 0; i < cands.size(); ++i) {
    if (runs[i]->Flops() / cands[i].median_us > runs[best]->Flops() / cands[best].median_us)
      best = i;
  }
  return std::move(kernels[best]);
}

void BenchPeak(codegen::Jit& jit) {
  std::printf("\n== FMA peak (JIT kernel, worker/codegen/fma_peak.h; <%d x float> FMA chains) ==\n",
              jit.target().vector_floats());
  std::vector<std::unique_ptr<codegen::FmaPeakKernel>> kernels;
  std::vector<std::unique_ptr<FmaPeakRun>> runs;
  std::vector<Candidate> cands;
  for (int t : {1, 2}) {
    for (int chains : {8, 12, 16, 24}) {
      kernels.push_back(codegen::CompileFmaPeak(jit, chains));
      runs.push_back(std::make_unique<FmaPeakRun>(FmaPeakRun{kernels.back().get(), t}));
      cands.push_back(PeakCandidate(runs.back().get()));
    }
  }
  if (__builtin_cpu_supports("avx512f")) {
    cands.push_back({"C++ intrinsics 1t (16 chains, GCC)", [] { runtime::SetNumThreads(1); },
                     [] {
                       volatile float sink = IntrinsicChains(kFmaPeakIters);
                       (void)sink;
                     }});
  }
  Compare(cands, 7, 20);
  for (size_t i = 0; i < cands.size(); ++i) {
    double flops = i < runs.size() ? runs[i]->Flops() : kFmaPeakIters * 16.0 * 32.0;
    std::printf("  %-40s %7.1f GFLOP/s\n", cands[i].name.c_str(),
                Gflops(flops, cands[i].median_us));
  }
}

void BenchEfficiency(codegen::Jit& jit, const OpenBlas& blas, const GemmOptions& options) {
  const bool sweep = options.sweep || !options.extra.empty();
  std::printf(
      "\n== GEMM efficiency: ours vs the core's FMA peak (same rounds), OpenBLAS %s, oneDNN ==\n",
      blas.available() ? blas.core().c_str() : "(not found)");
  auto peak_kernel = FastestPeak(jit);
  for (int t : options.threads) {
    std::vector<Row> rows;
    for (const Shape& shape : Shapes(options)) {
      if (shape.name.find(options.only) == std::string::npos) continue;
      // The peak does the shape's FLOPs: its calls last as long as the kernel's, so a shared
      // machine's interruptions hit both alike (with --stat min a shorter call would more
      // often catch an undisturbed window).
      FmaPeakRun peak{peak_kernel.get(), t};
      peak.iters = std::max<int64_t>(
          1000, static_cast<int64_t>(shape.Flops() / t / peak_kernel->FlopsPerIter()));
      // B is a weight in the denses (what the model's initialisers are), an activation in the
      // batch matmuls.
      const bool weights = shape.batch == 1 && shape.transpose_b;
      const int layers = weights ? std::max(options.layers, 1) : 1;
      std::vector<std::unique_ptr<PlanRunner>> plans;
      std::vector<Tensor> weight_copies;  // one set for every candidate (a sweep has ~100)
      auto add_plan = [&](const Schedule& s, bool rotate = true) {
        plans.push_back(std::make_unique<PlanRunner>(shape.Relay()));
        if (layers > 1 && weight_copies.empty())
          weight_copies = PlanRunner::Copies(plans.back()->value("y"), layers - 1);
        if (layers > 1 && rotate) plans.back()->RotateValue("y", weight_copies);
        plans.back()->Add(jit, shape.Nodes(), t, s);
        return plans.back().get();
      };
      std::vector<Candidate> cands{PeakCandidate(&peak), Ours("ours default", t, add_plan({}))};
      int wpack_at = -1;
      if (weights) {
        Schedule wpack;
        wpack.Set("wpack", 1);
        wpack_at = static_cast<int>(cands.size());
        cands.push_back(Ours("ours wpack", t, add_plan(wpack)));
        // What the rotation costs, in the same rounds: the same kernel on one copy, warm.
        if (layers > 1 && sweep)
          cands.push_back(Ours("ours wpack, warm", t, add_plan(wpack, false)));
      }
      PlanRunner& p = *plans[0];
      const float* x = p.value("x").as<float>();
      // The peers read the same copies of the weights in the same turn.
      std::vector<const float*> ys;
      for (int c = 0; c < layers; ++c) ys.push_back(p.value("y", c).as<float>());
      float* out = p.value("0").as<float>();
      const int64_t b = shape.batch, m = shape.m, n = shape.n, k = shape.k;
      const bool nt = shape.transpose_b;
      int openblas_at = -1, onednn_at = -1;
      if (blas.available() && !shape.gelu) {  // the peers' sgemm has no epilogue
        openblas_at = static_cast<int>(cands.size());
        cands.push_back({"openblas", [&blas, t] { blas.SetThreads(t); },
                         [=, &blas, at = size_t{0}]() mutable {
                           const float* y = ys[at];
                           at = (at + 1) % ys.size();
                           for (int64_t i = 0; i < b; ++i) {
                             const float *a = x + i * m * k, *w = y + i * n * k;
                             if (nt) {
                               blas.SgemmNT(m, n, k, a, w, out + i * m * n);
                             } else {
                               blas.SgemmNN(m, n, k, a, w, out + i * m * n);
                             }
                           }
                         }});
      }
#ifdef FUSETUNE_HAVE_DNNL
      onednn_at = static_cast<int>(cands.size());
      cands.push_back({"onednn", [t] { omp_set_num_threads(t); },
                       [=, at = size_t{0}]() mutable {
                         const float* y = ys[at];
                         at = (at + 1) % ys.size();
                         for (int64_t i = 0; i < b; ++i)
                           dnnl_sgemm('N', nt ? 'T' : 'N', m, n, k, 1.0f, x + i * m * k, k,
                                      y + i * n * k, nt ? k : n, 0.0f, out + i * m * n, n);
                       }});
#endif
      const size_t space_at = cands.size();
      std::vector<std::string> names;
      if (sweep) {
        auto layout = codegen::GroupMatmulLayout(p.graph(), p.Group(shape.Nodes()));
        std::vector<Schedule> schedules = options.extra;
        if (options.sweep) {
          for (const Schedule& s : MatmulScheduleSpace(layout, t, weights)) schedules.push_back(s);
        }
        for (const Schedule& s : schedules) {
          // An activation B (the batch matmuls) is never packed ahead: skip wpack there.
          if (!weights && s.Get("wpack", 0) == 1) continue;
          cands.push_back(Ours(s.ToString(), t, add_plan(s)));
        }
      }
      const int rounds = options.rounds > 0 ? options.rounds : sweep ? 5 : 9;
      // min: one call per round (a repeat shorter than any call), many rounds.
      Compare(cands, rounds, options.use_min ? 0.001 : sweep ? 15 : 30, options.cold);
      if (options.use_min)
        for (Candidate& c : cands) c.median_us = c.min_us;
      const double flops = shape.Flops();
      Row row;
      row.shape = shape.name;
      row.peak = Gflops(peak.Flops(), cands[0].median_us);
      row.ours = Gflops(flops, cands[1].median_us);
      if (wpack_at >= 0) row.wpack = Gflops(flops, cands[wpack_at].median_us);
      if (openblas_at >= 0) row.openblas = Gflops(flops, cands[openblas_at].median_us);
      if (onednn_at >= 0) row.onednn = Gflops(flops, cands[onednn_at].median_us);
      for (size_t i = space_at; i < cands.size(); ++i) {
        double g = Gflops(flops, cands[i].median_us);
        if (g > row.best_space) {
          row.best_space = g;
          row.best_schedule = cands[i].name;
        }
      }
      if (sweep) {
        // Every candidate, fastest first, for the record of what the space holds.
        std::vector<size_t> order;
        for (size_t i = 1; i < cands.size(); ++i) order.push_back(i);
        std::sort(order.begin(), order.end(),
                  [&](size_t a, size_t b) { return cands[a].median_us < cands[b].median_us; });
        std::printf("  %dt %s:\n", t, shape.name.c_str());
        for (size_t i : order) {
          double g = Gflops(flops, cands[i].median_us);
          std::printf("    %6.1f GFLOP/s %5.1f%%  %s\n", g, 100 * g / row.peak,
                      cands[i].name.c_str());
        }
      }
      rows.push_back(row);
    }
    if (rows.empty()) continue;
    PrintRows(t, rows, sweep, options.use_min);
  }
}

}  // namespace fusetune::bench
