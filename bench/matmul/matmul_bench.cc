// matmul_bench: fusetune's matmul kernels against oneDNN's sgemm, timed in the same run.
//
//   matmul_bench [--sweep] [bmm] [seed] [dense] [compile]     (no section names: all of them)
//
// bmm      batch_matmul [12,S,64]·[12,S,64]ᵀ, S = 128, 256, 512, B packing inside the timed call;
//          1 thread vs oneDNN 1 thread; 2 threads vs the better of oneDNN at 2 threads and two
//          1-thread oneDNN calls splitting the batch. --sweep also times every schedule.
// Peers: run with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset (see BENCHMARKS.md).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "bench/matmul/timing.h"
#include "ir/matmul_schedule.h"
#include "worker/codegen/jit.h"
#include "worker/codegen/kernel_abi.h"
#include "worker/codegen/runtime/thread_pool.h"
#include "worker/codegen/templates/matmul_emit.h"

#ifdef FUSETUNE_HAVE_DNNL
#include <dnnl.h>
#include <omp.h>
#endif

namespace fusetune::bench {
namespace {

using codegen::Jit;
using codegen::KernelFn;

std::vector<float> RandomFloats(int64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(count);
  for (float& x : v) x = dist(rng);
  return v;
}

struct Compiled {
  std::unique_ptr<codegen::JitCode> code;
  KernelFn fn = nullptr;
  double compile_ms = 0;
};

// The plain product through the emitter (no graph), at a schedule resolved for `threads`.
Compiled CompileProduct(Jit& jit, const MatmulLayout& l, const Schedule& s, int threads) {
  double t0 = NowUs();
  auto module = jit.NewModule("mm");
  codegen::MatmulKernelDesc desc;
  desc.name = jit.UniqueName("mm");
  desc.layout = l;
  desc.tiling = ResolveMatmulTiling(l, s, threads);
  desc.a = codegen::OperandA(l, 0, false);
  desc.b = codegen::OperandB(l, 1, false);
  desc.acc_buffer = 2;
  codegen::StoreEpilogue store(2, l.n);
  codegen::EmitMatmulFunction(module->module(), desc, store, jit.target());
  jit.Verify(*module);
  jit.Optimize(*module, 3);
  Compiled c;
  c.code = jit.Load(std::move(module));
  c.fn = reinterpret_cast<KernelFn>(c.code->Lookup(desc.name));
  c.compile_ms = (NowUs() - t0) / 1000;
  return c;
}

void SetOurThreads(int t) { runtime::SetNumThreads(t); }

double Gflops(const MatmulLayout& l, double us) {
  return 2.0 * l.batch * l.m * l.n * l.k / us / 1e3;
}

MatmulLayout BmmLayout(int64_t s) {
  MatmulLayout l;
  l.batched = true;
  l.batch = 12;
  l.m = l.n = s;
  l.k = 64;
  l.transpose_b = true;
  return l;
}

// The target assembly of the default kernel for S=256 (to check the micro-kernel's code).
void PrintAssembly(Jit& jit) {
  MatmulLayout l = BmmLayout(256);
  auto module = jit.NewModule("mm");
  codegen::MatmulKernelDesc desc;
  desc.name = "mm_asm";
  desc.layout = l;
  desc.tiling = ResolveMatmulTiling(l, {}, 1);
  desc.a = codegen::OperandA(l, 0, false);
  desc.b = codegen::OperandB(l, 1, false);
  desc.acc_buffer = 2;
  codegen::StoreEpilogue store(2, l.n);
  codegen::EmitMatmulFunction(module->module(), desc, store, jit.target());
  jit.Optimize(*module, 3);
  std::printf("%s\n", jit.Assembly(*module).c_str());
}

void BenchBmm(Jit& jit, bool sweep) {
  std::printf("\n== batch_matmul [12,S,64]·[12,S,64]ᵀ (B packing inside the call) ==\n");
  for (int64_t s : {128, 256, 512}) {
    MatmulLayout l = BmmLayout(s);
    std::vector<float> a = RandomFloats(12 * s * 64, 1), b = RandomFloats(12 * s * 64, 2),
                       c(12 * s * s);
    void* buffers[] = {a.data(), b.data(), c.data()};
    std::vector<Compiled> keep;
    std::vector<Candidate> cands;
    for (int t : {1, 2}) {
      keep.push_back(CompileProduct(jit, l, {}, t));
      KernelFn fn = keep.back().fn;
      cands.push_back({"ours " + std::to_string(t) + "t", [t] { SetOurThreads(t); },
                       [fn, &buffers] { fn(buffers); }});
    }
#ifdef FUSETUNE_HAVE_DNNL
    float *pa = a.data(), *pb = b.data(), *pc = c.data();
    auto sgemm_range = [=](int64_t b0, int64_t b1) {
      for (int64_t bi = b0; bi < b1; ++bi)
        dnnl_sgemm('N', 'T', s, s, 64, 1.0f, pa + bi * s * 64, 64, pb + bi * s * 64, 64, 0.0f,
                   pc + bi * s * s, s);
    };
    cands.push_back({"onednn 1t", [] { omp_set_num_threads(1); }, [=] { sgemm_range(0, 12); }});
    cands.push_back({"onednn 2t", [] { omp_set_num_threads(2); }, [=] { sgemm_range(0, 12); }});
    cands.push_back({"onednn 2x1t split", [] { omp_set_num_threads(2); },
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
        for (const Schedule& sch : MatmulScheduleSpace(l, t)) {
          keep.push_back(CompileProduct(jit, l, sch, t));
          KernelFn fn = keep.back().fn;
          cands.push_back({"t" + std::to_string(t) + " " + sch.ToString(),
                           [t] { SetOurThreads(t); }, [fn, &buffers] { fn(buffers); }});
        }
      }
    }
    Compare(cands, sweep ? 5 : 9, sweep ? 15 : 30);
    std::printf("S=%lld\n", static_cast<long long>(s));
    for (const Candidate& c : cands)
      std::printf("  %-60s %9.1f us  %6.1f GFLOP/s\n", c.name.c_str(), c.median_us,
                  Gflops(l, c.median_us));
#ifdef FUSETUNE_HAVE_DNNL
    double ours1 = cands[0].median_us, ours2 = cands[1].median_us, dnnl1 = cands[2].median_us;
    double dnnl2 = std::min(cands[3].median_us, cands[4].median_us);
    std::printf("  ratio 1t: ours/oneDNN throughput %.2f (target >= 1.10)\n", dnnl1 / ours1);
    std::printf("  ratio 2t: ours/best(oneDNN 2t, 2x1t) throughput %.2f (target >= 1.10)\n",
                dnnl2 / ours2);
#endif
  }
}

}  // namespace
}  // namespace fusetune::bench

int main(int argc, char** argv) {
  using namespace fusetune::bench;
  bool sweep = false;
  std::set<std::string> sections;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--sweep") == 0) {
      sweep = true;
    } else {
      sections.insert(argv[i]);
    }
  }
  auto want = [&](const char* s) { return sections.empty() || sections.count(s); };
  if (std::getenv("OPENBLAS_CORETYPE") || std::getenv("OPENBLAS_L2_SIZE"))
    std::printf("note: OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are set; unset them for peer runs\n");
  fusetune::codegen::Jit jit;
  std::printf("target: %s\n", jit.target().Fingerprint().c_str());
  if (sections.count("asm")) PrintAssembly(jit);
  if (want("bmm")) BenchBmm(jit, sweep);
  return 0;
}
