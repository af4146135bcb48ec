// The matmul emitter alone (no graph): every layout, ragged sizes, k blocks, both loop orders,
// at 1 and 2 threads, against a double-precision reference. Also the B-packing runtime routine.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "ir/error.h"
#include "ir/matmul_schedule.h"
#include "worker/codegen/jit.h"
#include "worker/codegen/kernel_abi.h"
#include "worker/codegen/runtime/thread_pool.h"
#include "worker/codegen/templates/matmul_emit.h"
#include "worker/codegen/templates/matmul_runtime.h"

namespace fusetune::codegen {
namespace {

std::vector<float> RandomFloats(int64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(count);
  for (float& x : v) x = dist(rng);
  return v;
}

// out[b, m, n] = sum_k A(b, m, k) B(b, n, k) in double, read through the layout.
std::vector<double> Reference(const MatmulLayout& l, const std::vector<float>& a,
                              const std::vector<float>& b) {
  std::vector<double> out(l.batch * l.m * l.n);
  MatmulOperand oa = OperandA(l, 0, false), ob = OperandB(l, 1, false);
  for (int64_t bi = 0; bi < l.batch; ++bi)
    for (int64_t m = 0; m < l.m; ++m)
      for (int64_t n = 0; n < l.n; ++n) {
        double s = 0;
        for (int64_t k = 0; k < l.k; ++k)
          s += double(a[bi * oa.batch_stride + m * oa.row_stride + k * oa.k_stride]) *
               b[bi * ob.batch_stride + n * ob.row_stride + k * ob.k_stride];
        out[(bi * l.m + m) * l.n + n] = s;
      }
  return out;
}

Jit& TheJit() {
  static Jit jit;
  return jit;
}

// Compiles and runs one product; returns the largest error relative to sqrt(k) (the scale of a
// sum of k products of values in [-1, 1]).
double RunAndCompare(const MatmulLayout& l, const Schedule& schedule, int threads) {
  Jit& jit = TheJit();
  runtime::SetNumThreads(threads);
  auto module = jit.NewModule("mm");
  MatmulKernelDesc desc;
  desc.name = jit.UniqueName("mm");
  desc.layout = l;
  desc.tiling = ResolveMatmulTiling(l, schedule, threads);
  desc.a = OperandA(l, 0, false);
  desc.b = OperandB(l, 1, false);
  desc.acc_buffer = 2;
  StoreEpilogue store(2, l.n);
  EmitMatmulFunction(module->module(), desc, store, jit.target());
  jit.Verify(*module);
  jit.Optimize(*module, 3);
  auto code = jit.Load(std::move(module));
  auto fn = reinterpret_cast<KernelFn>(code->Lookup(desc.name));

  std::vector<float> a = RandomFloats(l.batch * l.m * l.k, 1),
                     b = RandomFloats(l.batch * l.n * l.k, 2);
  std::vector<float> out(l.batch * l.m * l.n, NAN);
  void* buffers[] = {a.data(), b.data(), out.data()};
  fn(buffers);
  std::vector<double> ref = Reference(l, a, b);
  double worst = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    double e = std::abs(out[i] - ref[i]);
    if (!(e <= worst)) worst = std::isnan(e) ? INFINITY : e;
  }
  runtime::SetNumThreads(1);
  return worst / std::sqrt(double(l.k));
}

MatmulLayout Layout(int64_t batch, int64_t m, int64_t n, int64_t k, bool ta, bool tb) {
  MatmulLayout l;
  l.batched = batch > 1;
  l.batch = batch;
  l.m = m;
  l.n = n;
  l.k = k;
  l.transpose_a = ta;
  l.transpose_b = tb;
  return l;
}

TEST(MatmulEmit, DefaultScheduleAllLayoutsOddSizes) {
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (auto [m, n, k] :
           {std::tuple{1, 1, 1}, {7, 17, 33}, {17, 33, 7}, {33, 65, 17}, {65, 7, 64}}) {
        MatmulLayout l = Layout(3, m, n, k, ta, tb);
        EXPECT_LT(RunAndCompare(l, {}, 1), 1e-6)
            << "m=" << m << " n=" << n << " k=" << k << " ta=" << ta << " tb=" << tb;
      }
}

TEST(MatmulEmit, KBlocksPartialSumsAndBothLoopOrders) {
  MatmulLayout l = Layout(2, 37, 70, 300, false, true);
  for (int loop : {0, 1})
    for (int64_t kc : {64, 100, 300}) {
      Schedule s;
      s.Set("kc", kc);
      s.Set("loop", loop);
      s.Set("mc", 16);
      s.Set("nc", 32);
      EXPECT_LT(RunAndCompare(l, s, 1), 1e-6) << s.ToString();
      EXPECT_LT(RunAndCompare(l, s, 2), 1e-6) << s.ToString() << " at 2 threads";
    }
}

TEST(MatmulEmit, EveryScheduleOfTheSpace) {
  for (MatmulLayout l :
       {Layout(2, 65, 33, 17, false, true), Layout(1, 19, 130, 520, true, false)}) {
    for (int threads : {1, 2}) {
      for (const Schedule& s : MatmulScheduleSpace(l, threads)) {
        EXPECT_LT(RunAndCompare(l, s, threads), 1e-6) << s.ToString() << " threads=" << threads;
      }
    }
  }
}

TEST(MatmulEmit, PrefetchKnobOddSizesKBlocksAndThreads) {
  for (MatmulLayout l :
       {Layout(2, 37, 70, 300, false, true), Layout(1, 13, 129, 65, true, false)}) {
    for (auto [mr, nr, kc, pf] : {std::tuple{4, 64, 0, 1},
                                  {8, 32, 100, 8},
                                  {12, 32, 0, 64},
                                  {6, 64, 64, 16},
                                  {1, 16, 0, 3}}) {
      Schedule s;
      s.Set("mr", mr);
      s.Set("nr", nr);
      s.Set("pf", pf);
      if (kc > 0) s.Set("kc", kc);
      for (int threads : {1, 2})
        EXPECT_LT(RunAndCompare(l, s, threads), 1e-6) << s.ToString() << " threads=" << threads;
    }
  }
}

// pb streams the next task's B block from inside the tiles: off, one and two lines an iteration,
// both loop orders, m and n tails, batches, several tasks per thread (small nc and mc), 1 and 2
// threads.
TEST(MatmulEmit, NextBlockPrefetchOnAndOff) {
  for (MatmulLayout l : {Layout(3, 37, 70, 45, false, true), Layout(1, 13, 129, 65, false, true),
                         Layout(2, 20, 50, 33, true, false)}) {
    for (int pb : {0, 1, 2}) {
      for (int loop : {0, 1}) {
        for (auto [mc, nc] : {std::pair{0, 0}, {8, 32}}) {
          Schedule s;
          s.Set("pb", pb);
          s.Set("loop", loop);
          s.Set("mr", 4);
          s.Set("nr", 32);
          if (mc > 0) s.Set("mc", mc);
          if (nc > 0) s.Set("nc", nc);
          for (int threads : {1, 2})
            EXPECT_LT(RunAndCompare(l, s, threads), 1e-6) << s.ToString() << " threads=" << threads;
        }
      }
    }
  }
}

TEST(MatmulSchedule, TheDefaultTileIsSixRowsBySixtyFourPastShortKLoops) {
  auto tile = [](const MatmulLayout& l, const char* schedule) {
    const MatmulTiling t = ResolveMatmulTiling(l, Schedule::Parse(schedule), 1);
    return std::pair{t.mr, t.nr};
  };
  // BERT's denses (K = 768, 3072): 24 accumulators.
  EXPECT_EQ(tile(Layout(1, 128, 3072, 768, false, true), ""), std::pair(6, 64));
  EXPECT_EQ(tile(Layout(1, 128, 768, 3072, false, true), ""), std::pair(6, 64));
  // The attention scores' and the seed's K = 64: 16, as before 6 x 64.
  EXPECT_EQ(tile(Layout(12, 256, 256, 64, false, true), ""), std::pair(4, 64));
  // Narrow outputs keep at most 8 rows; 128 columns leave room for 2.
  EXPECT_EQ(tile(Layout(1, 128, 32, 768, false, true), ""), std::pair(8, 32));
  EXPECT_EQ(tile(Layout(1, 128, 768, 768, false, true), "nr=128"), std::pair(2, 128));
  // swap=1's transposed tiles keep 4 x 64.
  EXPECT_EQ(tile(Layout(1, 64, 768, 3072, false, true), "swap=1"), std::pair(4, 64));
}

TEST(MatmulSchedule, NextBlockPrefetchDefaultsOnAndIsSpelledOnlyWhenNotOne) {
  MatmulLayout l = Layout(1, 128, 768, 768, false, true);
  EXPECT_EQ(ResolveMatmulTiling(l, {}, 1).pb, 1);
  EXPECT_EQ(ResolveMatmulTiling(l, Schedule::Parse("pb=0"), 1).pb, 0);
  for (const Schedule& s : MatmulScheduleSpace(l, 2)) {
    EXPECT_EQ(s.ToString().find("pb"), std::string::npos) << s.ToString();
  }
  MatmulLayout to = Layout(1, 64, 3072, 768, false, true);
  EXPECT_EQ(AdaptMatmulSchedule(l, Schedule::Parse("pb=0"), to, 1).Get("pb", 1), 0);
  EXPECT_EQ(AdaptMatmulSchedule(l, Schedule::Parse("mr=8,nr=32"), to, 1).Get("pb", 1), 1);
  EXPECT_EQ(AdaptMatmulSchedule(l, Schedule::Parse("pb=2,wpack=1"), to, 1).Get("pb", 1), 2);
  EXPECT_EQ(ResolveMatmulTiling(l, Schedule::Parse("pb=2"), 1).pb, 2);
  EXPECT_THROW(ResolveMatmulTiling(l, Schedule::Parse("pb=3"), 1), UserError);
}

TEST(MatmulSchedule, PrefetchKnobIsResolvedSpelledAndChecked) {
  MatmulLayout l = Layout(1, 128, 768, 768, false, true);
  EXPECT_EQ(ResolveMatmulTiling(l, {}, 1).pf, 0);
  EXPECT_EQ(ResolveMatmulTiling(l, Schedule::Parse("pf=16"), 1).pf, 16);
  // Spelled by the space only when set: schedules recorded before the knob keep their names.
  for (const Schedule& s : MatmulScheduleSpace(l, 1)) {
    if (s.Get("pf", 0) == 0) {
      EXPECT_EQ(s.ToString().find("pf"), std::string::npos) << s.ToString();
    }
  }
  // Adapting a schedule to other sizes keeps the prefetch distance.
  Schedule tuned = Schedule::Parse("mr=8,nr=32,pf=12");
  EXPECT_EQ(AdaptMatmulSchedule(l, tuned, Layout(1, 64, 3072, 768, false, true), 1).Get("pf", 0),
            12);
  EXPECT_THROW(ResolveMatmulTiling(l, Schedule::Parse("pf=65"), 1), UserError);
  EXPECT_NO_THROW(ResolveMatmulTiling(l, Schedule::Parse("pf=0"), 1));
}

TEST(MatmulPack, BothLayoutsMatchTheDefinition) {
  for (auto [n_count, k_count] : {std::pair{5, 3}, {16, 16}, {37, 21}, {64, 64}}) {
    for (bool nk : {false, true}) {
      const int64_t nr = 32;
      int64_t n_stride = nk ? k_count + 3 : 1, k_stride = nk ? 1 : n_count + 5;
      std::vector<float> b = RandomFloats((n_count + 5) * (k_count + 3), 7);
      int64_t panels = (n_count + nr - 1) / nr;
      std::vector<float, std::allocator<float>> storage(panels * nr * k_count + 16);
      float* out =
          reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(storage.data()) + 63) / 64 * 64);
      fusetune_mm_pack_b(b.data(), n_stride, k_stride, n_count, k_count, nr, out);
      for (int64_t n = 0; n < panels * nr; ++n)
        for (int64_t k = 0; k < k_count; ++k) {
          float want = n < n_count ? b[n * n_stride + k * k_stride] : 0.0f;
          ASSERT_EQ(out[(n / nr) * k_count * nr + k * nr + n % nr], want)
              << "n=" << n << " k=" << k << " nk=" << nk << " size " << n_count << "x" << k_count;
        }
    }
  }
}

}  // namespace
}  // namespace fusetune::codegen
