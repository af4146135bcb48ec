// matmul_bench: fusetune's matmul kernels against oneDNN's sgemm, timed in the same run
// (round-robin repeats, medians; see timing.h). Every kernel is compiled from a Relay graph
// through CompileGroup, the path the worker uses. `matmul_bench --help` lists the options.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "bench/matmul/efficiency.h"
#include "bench/matmul/l1_ceiling.h"
#include "bench/matmul/openblas.h"
#include "bench/matmul/plan_runner.h"
#include "bench/matmul/timing.h"
#include "ir/fusion.h"
#include "ir/interpreter.h"
#include "ir/matmul_schedule.h"
#include "ir/text/relay_parser.h"
#include "worker/codegen/compile.h"
#include "worker/codegen/jit.h"
#include "worker/codegen/runtime/thread_pool.h"
#include "worker/codegen/templates/matmul.h"

#ifdef FUSETUNE_HAVE_DNNL
#include <dnnl.h>
#include <omp.h>
#endif

namespace fusetune::bench {
namespace {

using codegen::Jit;

std::string BmmText(int64_t s) {
  return fmt::format("fn (%x: {}, %y: {}) {{ nn.batch_matmul(%x, %y) }}", T({12, s, 64}),
                     T({12, s, 64}));
}

std::string SeedText(int64_t s) {
  return fmt::format(
      "fn (%x: {}, %y: {}, %z: {}) {{\n  %0 = nn.batch_matmul(%x, %y);\n  %1 = ones_like(%0);\n  "
      "where(%z, %0, "
      "%1)\n}}",
      T({12, s, 64}), T({12, s, 64}), T({12, s, s}));
}

std::string DenseGeluText() {
  return fmt::format(
      "fn (%x: {}, %w: {}, %b: {}) {{\n"
      "  %0 = nn.dense(%x, %w);\n  %1 = add(%0, %b);\n  %2 = multiply(%1, 0.044715f);\n"
      "  %3 = multiply(%2, %1);\n  %4 = multiply(%3, %1);\n  %5 = add(%1, %4);\n"
      "  %6 = multiply(%5, 0.797885f);\n  %7 = tanh(%6);\n  %8 = add(%7, 1f);\n"
      "  %9 = multiply(%1, 0.5f);\n  multiply(%9, %8)\n}}",
      T({128, 768}), T({3072, 768}), T({3072}));
}
const std::vector<std::string> kGeluNodes{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10"};

void Print(const std::vector<Candidate>& cands, double flops) {
  for (const Candidate& c : cands) {
    if (flops > 0) {
      std::printf("  %-58s %10.1f us %7.1f GFLOP/s\n", c.name.c_str(), c.median_us,
                  Gflops(flops, c.median_us));
    } else {
      std::printf("  %-58s %10.1f us\n", c.name.c_str(), c.median_us);
    }
  }
}

void BenchBmm(Jit& jit, bool sweep) {
  std::printf("\n== batch_matmul [12,S,64]·[12,S,64]ᵀ (B packing inside the call) ==\n");
  for (int64_t s : {128, 256, 512}) {
    const double flops = 2.0 * 12 * s * s * 64;
    std::vector<std::unique_ptr<PlanRunner>> plans;
    std::vector<Candidate> cands;
    for (int t : {1, 2}) {
      plans.push_back(std::make_unique<PlanRunner>(BmmText(s)));
      plans.back()->Add(jit, {"0"}, t);
      cands.push_back(Ours("ours 1t", t, plans.back().get()));
      cands.back().name = fmt::format("ours {}t", t);
    }
#ifdef FUSETUNE_HAVE_DNNL
    PlanRunner& p = *plans[0];
    float *pa = p.value("x").as<float>(), *pb = p.value("y").as<float>(),
          *pc = p.value("0").as<float>();
    auto sgemm_range = [=](int64_t b0, int64_t b1) {
      for (int64_t bi = b0; bi < b1; ++bi)
        dnnl_sgemm('N', 'T', s, s, 64, 1.0f, pa + bi * s * 64, 64, pb + bi * s * 64, 64, 0.0f,
                   pc + bi * s * s, s);
    };
    cands.push_back({"onednn 1t", [] { omp_set_num_threads(1); }, [=] { sgemm_range(0, 12); }});
    cands.push_back({"onednn 2t", [] { omp_set_num_threads(2); }, [=] { sgemm_range(0, 12); }});
    cands.push_back({"onednn 2x1t (batch split)", [] { omp_set_num_threads(2); },
                     [=] {
#pragma omp parallel num_threads(2)
                       {
                         int id = omp_get_thread_num();
                         sgemm_range(id * 6, id * 6 + 6);
                       }
                     }});
#endif
    if (sweep) {
      for (int t : {1, 2}) {
        PlanRunner probe(BmmText(s));
        for (const Schedule& sch : MatmulScheduleSpace(
                 codegen::GroupMatmulLayout(probe.graph(), probe.Group({"0"})), t)) {
          plans.push_back(std::make_unique<PlanRunner>(BmmText(s)));
          plans.back()->Add(jit, {"0"}, t, sch);
          cands.push_back(Ours(fmt::format("t{} {}", t, sch.ToString()), t, plans.back().get()));
        }
      }
    }
    Compare(cands, sweep ? 5 : 11, sweep ? 15 : 40);
    std::printf("S=%lld\n", static_cast<long long>(s));
    Print(cands, flops);
#ifdef FUSETUNE_HAVE_DNNL
    double ours1 = cands[0].median_us, ours2 = cands[1].median_us, dnnl1 = cands[2].median_us;
    double dnnl2 = std::min(cands[3].median_us, cands[4].median_us);
    std::printf("  ratio 1t  ours/oneDNN throughput:                 %.2f  (target >= 1.10)\n",
                dnnl1 / ours1);
    std::printf("  ratio 2t  ours/best(oneDNN 2t, 2x1t) throughput:  %.2f  (target >= 1.10)\n",
                dnnl2 / ours2);
#endif
  }
}

void BenchSeed(Jit& jit, bool sweep) {
  std::printf("\n== seed: batch_matmul + ones_like + where, S=256 ==\n");
  for (int t : {1, 2}) {
    PlanRunner fused(SeedText(256)), alone(SeedText(256)), unfused(SeedText(256));
    fused.Add(jit, {"0", "1", "2"}, t);
    alone.Add(jit, {"0"}, t);
    for (const char* n : {"0", "1", "2"}) unfused.Add(jit, {n}, t);
    std::vector<Candidate> cands{Ours("fused (1 kernel)", t, &fused),
                                 Ours("batch_matmul alone", t, &alone),
                                 Ours("unfused plan (3 kernels)", t, &unfused)};
    std::vector<std::unique_ptr<PlanRunner>> keep;
    if (sweep) {
      auto layout = codegen::GroupMatmulLayout(fused.graph(), fused.Group({"0"}));
      for (const Schedule& sch : MatmulScheduleSpace(layout, t)) {
        for (bool whole : {true, false}) {
          keep.push_back(std::make_unique<PlanRunner>(SeedText(256)));
          keep.back()->Add(
              jit, whole ? std::vector<std::string>{"0", "1", "2"} : std::vector<std::string>{"0"},
              t, sch);
          cands.push_back(Ours(fmt::format("{} {}", whole ? "fused" : "alone", sch.ToString()), t,
                               keep.back().get()));
        }
      }
    }
    Compare(cands, sweep ? 5 : 11, sweep ? 15 : 40);
    std::printf("%d thread(s)\n", t);
    Print(cands, 2.0 * 12 * 256 * 256 * 64);
    std::printf("  fused / batch_matmul alone: %.3f  (target <= 1.10)\n",
                cands[0].median_us / cands[1].median_us);
    std::printf("  fused / unfused plan:       %.3f  (target < 1)\n",
                cands[0].median_us / cands[2].median_us);
  }
}

// numpy's time for the bias + tanh-GELU epilogue on [128, 3072] (out= forms, no temporaries), in
// microseconds, or a negative number when python3-numpy is missing.
[[maybe_unused]] double NumpyEpilogueUs() {
  const char* script =
      "import numpy as np, timeit\n"
      "x = np.random.rand(128, 3072).astype(np.float32); b = "
      "np.random.rand(3072).astype(np.float32)\n"
      "y = np.empty_like(x); t = np.empty_like(x)\n"
      "def epi():\n"
      "    np.add(x, b, out=y); np.multiply(y, y, out=t); np.multiply(t, y, out=t)\n"
      "    np.multiply(t, np.float32(0.044715), out=t); np.add(t, y, out=t)\n"
      "    np.multiply(t, np.float32(0.797885), out=t); np.tanh(t, out=t); np.add(t, "
      "np.float32(1), out=t)\n"
      "    np.multiply(t, y, out=t); np.multiply(t, np.float32(0.5), out=t)\n"
      "r = timeit.repeat(epi, number=50, repeat=9); r.sort(); print(r[4] / 50 * 1e6)\n";
  std::string cmd =
      std::string("OMP_NUM_THREADS=1 /usr/bin/python3 -c '") + script + "' 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return -1;
  double us = -1;
  if (std::fscanf(p, "%lf", &us) != 1) us = -1;
  pclose(p);
  return us;
}

void BenchDense(Jit& jit) {
  std::printf("\n== nn.dense [128,768]·[3072,768]ᵀ + bias + tanh-GELU ==\n");
  const double flops = 2.0 * 128 * 3072 * 768;
  for (int t : {1, 2}) {
    PlanRunner fused(DenseGeluText()), alone(DenseGeluText()), unfused(DenseGeluText());
    fused.Add(jit, kGeluNodes, t);
    alone.Add(jit, {"0"}, t);
    for (const std::string& n : kGeluNodes) unfused.Add(jit, {n}, t);
    std::vector<Candidate> cands{Ours("fused (1 kernel)", t, &fused),
                                 Ours("dense alone", t, &alone),
                                 Ours("unfused plan (11 kernels)", t, &unfused)};
#ifdef FUSETUNE_HAVE_DNNL
    PlanRunner& p = alone;
    const float *x = p.value("x").as<float>(), *w = p.value("w").as<float>(),
                *bias = p.value("b").as<float>();
    float* y = p.value("0").as<float>();
    float* out = p.value("10").as<float>();
    auto sgemm = [=] { dnnl_sgemm('N', 'T', 128, 3072, 768, 1.0f, x, 768, w, 768, 0.0f, y, 3072); };
    // The peer epilogue: one pass in plain C++ (GCC -O2, std::tanh from libm, not vectorized).
    auto epilogue = [=](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = 0; c < 3072; ++c) {
          float v = y[r * 3072 + c] + bias[c];
          out[r * 3072 + c] =
              0.5f * v * (1.0f + std::tanh(0.797885f * (v + 0.044715f * v * v * v)));
        }
    };
    cands.push_back({"onednn sgemm", [t] { omp_set_num_threads(t); }, sgemm});
    cands.push_back({"onednn sgemm + C++ epilogue loop", [t] { omp_set_num_threads(t); },
                     [=] {
                       sgemm();
#pragma omp parallel for num_threads(t)
                       for (int part = 0; part < t; ++part)
                         epilogue(part * 128 / t, (part + 1) * 128 / t);
                     }});
#endif
    Compare(cands, 11, 40);
    std::printf("%d thread(s)\n", t);
    Print(cands, flops);
    std::printf("  fused / dense alone:   %.3f\n", cands[0].median_us / cands[1].median_us);
    std::printf("  fused / unfused plan:  %.3f\n", cands[0].median_us / cands[2].median_us);
#ifdef FUSETUNE_HAVE_DNNL
    std::printf("  fused / (oneDNN sgemm + C++ epilogue): %.3f\n",
                cands[0].median_us / cands[4].median_us);
    std::printf("  dense alone / oneDNN sgemm:            %.3f\n",
                cands[1].median_us / cands[3].median_us);
    if (t == 1) {
      double np_us = NumpyEpilogueUs();
      if (np_us > 0) {
        std::printf(
            "  numpy epilogue alone (subprocess, 1 thread): %.1f us; oneDNN sgemm + numpy "
            "epilogue: %.1f us\n",
            np_us, cands[3].median_us + np_us);
        std::printf("  fused / (oneDNN sgemm + numpy epilogue): %.3f\n",
                    cands[0].median_us / (cands[3].median_us + np_us));
      }
    }
#endif
  }
}

void BenchCompile(Jit& jit) {
  std::printf("\n== compile time (lowering + O3 + codegen, median of 5) ==\n");
  struct Item {
    std::string name, text;
    std::vector<std::string> nodes;
  };
  std::vector<Item> items{{"batch_matmul S=512", BmmText(512), {"0"}},
                          {"seed fused S=256", SeedText(256), {"0", "1", "2"}},
                          {"dense + bias + tanh-GELU fused", DenseGeluText(), kGeluNodes}};
  for (const Item& item : items) {
    for (int t : {1, 2}) {
      std::vector<codegen::CompileTimes> times;
      for (int r = 0; r < 5; ++r) {
        PlanRunner plan(item.text);
        times.push_back(plan.Add(jit, item.nodes, t));
      }
      std::sort(times.begin(), times.end(),
                [](auto& a, auto& b) { return a.total_ms() < b.total_ms(); });
      const auto& m = times[2];
      std::printf("  %-34s %dt: %6.1f ms (lower %5.1f, O3 %5.1f, codegen %5.1f)  (target <= 60)\n",
                  item.name.c_str(), t, m.total_ms(), m.lower_ms, m.optimize_ms, m.codegen_ms);
    }
  }
}

void PrintAssembly(Jit& jit, bool dense) {
  PlanRunner plan(dense ? DenseGeluText() : SeedText(256));
  std::vector<std::string> nodes = dense ? kGeluNodes : std::vector<std::string>{"0", "1", "2"};
  auto module = codegen::EmitGroupModule(plan.graph(), plan.Group(nodes), {}, jit, "fused");
  jit.Optimize(*module, 3);
  std::printf("%s\n", jit.Assembly(*module).c_str());
}

constexpr const char* kUsage = R"(usage: matmul_bench [SECTION...] [OPTIONS]

Sections (none: all but asm, asm-dense):
  peak      the core's FMA peak: a JIT kernel of independent FMA chains (worker/codegen/fma_peak.h)
            at 1 and 2 threads, several chain counts, and a C++ intrinsics cross-check
  l1        the ceiling of a broadcast GEMM micro-kernel apart from the caches: C++ register
            tiles (4x64 ... 14x32) with A and B in L1, against the peak in the same rounds, and
            each with A in a register instead (no broadcast loads: prices them)
  gemm      the BERT layer's GEMM shapes (its four denses, both batch_matmuls) at each --seqs
            length, and square 512 / 1024, at 1 and 2 threads: GFLOP/s and % of the FMA peak
            measured in the same rounds; "ours default" is the default schedule (B packed in the
            call), "ours wpack" the same with the weights packed at bind; beside OpenBLAS
            (dlopen'd with OPENBLAS_CORETYPE=SkylakeX, 0.3.21's best kernels for an AVX-512 CPU it
            does not know) and oneDNN sgemm
  bmm       batch_matmul [12,S,64]x[12,S,64]^T, S = 128, 256, 512, vs oneDNN
  seed      batch_matmul + ones_like + where at S=256 fused in one kernel, vs ours unfused
  dense     nn.dense [128,768]x[3072,768]^T + bias + tanh-GELU fused, vs unfused and oneDNN
  compile   lowering / O3 / codegen times of the benchmark kernels (median of 5)
  asm, asm-dense   print the seed's / the dense's assembly

Options (gemm unless said):
  --sweep               also every schedule of MatmulScheduleSpace (gemm, bmm, seed), fastest first
  --schedule K=V,...    also this schedule (repeatable), e.g. --schedule mr=5,kc=512,wpack=1
  --only TEXT           only shapes whose name contains TEXT, e.g. "FFN 2"
  --threads N           only N threads (default: 1 and 2)
  --seqs S,S,...        sequence lengths of the BERT shapes (default 128)
  --dense MxKxN         also this dense (x[M,K] . w[N,K]^T; repeatable)
  --no-squares          leave out dense 512^3 and 1024^3
  --stat median|min     median of the rounds (default), or the fastest round with one call per
                        round: on a shared machine the closest to an undisturbed core
  --cold                caches evicted before every timed call (one call per round), so the
                        weights come from memory as in a whole model (TVM's cache flush)
  --layers N            a dense's calls read the next of N copies of its weights in turn (the
                        peers' too), as a model of N layers does: with N copies beyond the
                        last-level cache every call's weights come from memory, A stays warm
  --rounds N            rounds per candidate (default 9; 5 with --sweep or --schedule)
  --openblas-coretype NAME   OPENBLAS_CORETYPE for OpenBLAS ('' keeps the environment's)
  --help                this text
)";

}  // namespace
}  // namespace fusetune::bench

namespace {

const std::set<std::string> kSections{"peak",  "l1",      "gemm", "bmm",      "seed",
                                      "dense", "compile", "asm",  "asm-dense"};

int Usage(const std::string& error) {
  std::fprintf(stderr, "matmul_bench: %s\n%s", error.c_str(), fusetune::bench::kUsage);
  return 2;
}

std::vector<std::string> Split(const std::string& list) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    parts.push_back(list.substr(start, comma - start));
    start = comma + 1;
  }
  return parts;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace fusetune::bench;
  bool sweep = false;
  std::string coretype = "SkylakeX";
  GemmOptions gemm;
  std::set<std::string> sections;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--sweep") == 0) {
      sweep = true;
    } else if (std::strcmp(argv[i], "--openblas-coretype") == 0 && i + 1 < argc) {
      coretype = argv[++i];
    } else if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
      gemm.only = argv[++i];
    } else if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      gemm.threads = {std::atoi(argv[++i])};
    } else if (std::strcmp(argv[i], "--schedule") == 0 && i + 1 < argc) {
      gemm.extra.push_back(fusetune::Schedule::Parse(argv[++i]));
    } else if (std::strcmp(argv[i], "--seqs") == 0 && i + 1 < argc) {
      gemm.seqs.clear();
      for (const std::string& s : Split(argv[++i])) gemm.seqs.push_back(std::atoll(s.c_str()));
    } else if (std::strcmp(argv[i], "--dense") == 0 && i + 1 < argc) {
      std::array<int64_t, 3> mkn{};
      if (std::sscanf(argv[++i], "%ldx%ldx%ld", &mkn[0], &mkn[1], &mkn[2]) != 3 || mkn[0] <= 0 ||
          mkn[1] <= 0 || mkn[2] <= 0)
        return Usage(fmt::format("--dense takes MxKxN, e.g. 128x3072x768; got '{}'", argv[i]));
      gemm.denses.push_back(mkn);
    } else if (std::strcmp(argv[i], "--no-squares") == 0) {
      gemm.squares = false;
    } else if (std::strcmp(argv[i], "--stat") == 0 && i + 1 < argc) {
      std::string stat = argv[++i];
      if (stat != "min" && stat != "median") return Usage("--stat takes median or min");
      gemm.use_min = stat == "min";
    } else if (std::strcmp(argv[i], "--cold") == 0) {
      gemm.cold = true;
    } else if (std::strcmp(argv[i], "--layers") == 0 && i + 1 < argc) {
      gemm.layers = std::atoi(argv[++i]);
      if (gemm.layers < 1) return Usage("--layers takes a count of weight copies, e.g. 12");
    } else if (std::strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
      gemm.rounds = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::printf("%s", kUsage);
      return 0;
    } else if (argv[i][0] == '-') {
      return Usage(fmt::format("unknown option '{}'", argv[i]));
    } else if (!kSections.count(argv[i])) {
      return Usage(fmt::format("unknown section '{}'", argv[i]));
    } else {
      sections.insert(argv[i]);
    }
  }
  for (int64_t s : gemm.seqs)
    if (s <= 0) return Usage("--seqs takes positive sequence lengths, e.g. 128,256");
  auto want = [&](const char* s) { return sections.empty() || sections.count(s); };
  // Start the pool's worker before any timed call (see tests/matmul: a worker that starts after the
  // first job is posted can miss it).
  fusetune::runtime::SetNumThreads(2);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  fusetune::runtime::SetNumThreads(1);
  fusetune::codegen::Jit jit;
  std::printf("target: %s\n", jit.target().Fingerprint().c_str());
  if (sections.count("asm")) PrintAssembly(jit, false);
  if (sections.count("asm-dense")) PrintAssembly(jit, true);
  if (want("peak")) BenchPeak(jit);
  if (want("l1")) BenchL1Ceiling(jit);
  if (want("gemm")) {
    // OpenBLAS 0.3.21 picks SkylakeX's AVX-512 kernels only when told (openblas.h).
    OpenBlas blas(coretype);
    if (blas.available())
      std::printf("OpenBLAS: core %s, %s\n", blas.core().c_str(), blas.config().c_str());
    gemm.sweep = sweep;
    BenchEfficiency(jit, blas, gemm);
  }
  if (want("bmm")) BenchBmm(jit, sweep);
  if (want("seed")) BenchSeed(jit, sweep);
  if (want("dense")) BenchDense(jit);
  if (want("compile")) BenchCompile(jit);
  return 0;
}
