// Kernel IR built by hand, lowered, JIT-compiled and run: loops of every kind, masked tails,
// broadcast and gather loads, local accumulators, and the printer.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "worker/codegen/jit.h"
#include "worker/codegen/kernel_abi.h"
#include "worker/codegen/kernel_ir.h"
#include "worker/codegen/lower_llvm.h"
#include "worker/codegen/runtime/thread_pool.h"

namespace fusetune::codegen {
namespace {

KernelFn Compile(Jit& jit, const Kernel& k, std::unique_ptr<JitCode>& holder) {
  auto module = jit.NewModule(k.name);
  std::string symbol = jit.UniqueName(k.name);
  LowerKernel(k, jit, *module, symbol);
  jit.Optimize(*module);
  holder = jit.Load(std::move(module));
  return reinterpret_cast<KernelFn>(holder->Lookup(symbol));
}

ScalarExpr SubExp() {
  return sx::Unary(ScalarOp::kExp, sx::Binary(ScalarOp::kSub, sx::Arg(0, DType::kFloat32),
                                              sx::Arg(1, DType::kFloat32)));
}

// out[i, j, k] = exp(x[i, j, k] - m[i, j]) over [a, b, c]: parallel i, serial j, vectorized k.
Kernel SubExpKernel(int64_t a, int64_t b, int64_t c, int width) {
  Kernel k;
  k.name = "sub_exp";
  int x = k.AddParam("x", DType::kFloat32, a * b * c);
  int m = k.AddParam("m", DType::kFloat32, a * b);
  int out = k.AddParam("out", DType::kFloat32, a * b * c);
  int i = k.NewVar("i"), j = k.NewVar("j"), l = k.NewVar("k");
  using namespace kir;
  KExpr flat = Add(Mul(Add(Mul(Var(i), Int(b)), Var(j)), Int(c)), Var(l));
  KExpr row = Add(Mul(Var(i), Int(b)), Var(j));
  k.body = For(i, a, LoopKind::kParallel,
               For(j, b, LoopKind::kSerial,
                   For(l, c, LoopKind::kVectorized,
                       Store(out, flat, Eval(SubExp(), {Load(x, flat), Load(m, row)})), width)));
  return k;
}

void CheckSubExp(int64_t a, int64_t b, int64_t c, int threads) {
  Jit jit;
  runtime::SetNumThreads(threads);
  std::unique_ptr<JitCode> code;
  KernelFn fn = Compile(jit, SubExpKernel(a, b, c, 16), code);
  std::vector<float> x(a * b * c), m(a * b), out(a * b * c, -1.0f);
  for (size_t n = 0; n < x.size(); ++n) x[n] = std::sin(0.37 * n) * 3.0f;
  for (size_t n = 0; n < m.size(); ++n) m[n] = std::cos(0.11 * n);
  void* buffers[] = {x.data(), m.data(), out.data()};
  fn(buffers);
  for (int64_t n = 0; n < a * b * c; ++n) {
    double want = std::exp(static_cast<double>(x[n]) - m[n / c]);
    ASSERT_NEAR(out[n], want, 3e-7 * want) << "at " << n;
  }
  runtime::SetNumThreads(1);
}

TEST(KernelIr, SubExpMultipleOfVector) { CheckSubExp(4, 3, 32, 1); }
TEST(KernelIr, SubExpMaskedTail) { CheckSubExp(5, 7, 37, 2); }
TEST(KernelIr, SubExpShorterThanVector) { CheckSubExp(3, 2, 5, 2); }

// Row sums with a vector accumulator in a local buffer: acc[k % 16] += x[r, k]; then a serial
// horizontal sum. Exercises the uniform/stride-1 analysis of `k % 16` and masked tails.
TEST(KernelIr, RowSumWithLocalAccumulator) {
  const int64_t rows = 9, cols = 45;
  Kernel k;
  k.name = "row_sum";
  int x = k.AddParam("x", DType::kFloat32, rows * cols);
  int out = k.AddParam("out", DType::kFloat32, rows);
  int acc = k.AddLocal("acc", DType::kFloat32, 16);
  int r = k.NewVar("r"), c = k.NewVar("c"), l = k.NewVar("l");
  using namespace kir;
  ScalarExpr add =
      sx::Binary(ScalarOp::kAdd, sx::Arg(0, DType::kFloat32), sx::Arg(1, DType::kFloat32));
  k.body = For(
      r, rows, LoopKind::kParallel,
      Alloc(acc,
            Block({
                For(l, 16, LoopKind::kVectorized, Store(acc, Var(l), Eval(sx::Const(0.0), {})), 16),
                For(c, cols, LoopKind::kVectorized,
                    Store(acc, Mod(Var(c), Int(16)),
                          Eval(add, {Load(acc, Mod(Var(c), Int(16))),
                                     Load(x, Add(Mul(Var(r), Int(cols)), Var(c)))})),
                    16),
                Store(out, Var(r), Eval(sx::Const(0.0), {})),
                For(l, 16, LoopKind::kUnrolled,
                    Store(out, Var(r), Eval(add, {Load(out, Var(r)), Load(acc, Var(l))}))),
            })));
  Jit jit;
  std::unique_ptr<JitCode> code;
  KernelFn fn = Compile(jit, k, code);
  std::vector<float> xs(rows * cols), sums(rows);
  for (size_t n = 0; n < xs.size(); ++n) xs[n] = static_cast<float>(n % 7) - 3.0f + 0.25f * (n % 3);
  void* buffers[] = {xs.data(), sums.data()};
  runtime::SetNumThreads(2);
  fn(buffers);
  runtime::SetNumThreads(1);
  for (int64_t i = 0; i < rows; ++i) {
    double want = 0;
    for (int64_t j = 0; j < cols; ++j) want += xs[i * cols + j];
    EXPECT_NEAR(sums[i], want, 1e-4) << "row " << i;
  }
}

// Transposed read: out[i, j] = x[j, i] vectorized along j is a gather with stride `rows`.
TEST(KernelIr, TransposeGathers) {
  const int64_t rows = 19, cols = 23;
  Kernel k;
  k.name = "transpose";
  int x = k.AddParam("x", DType::kFloat32, rows * cols);
  int out = k.AddParam("out", DType::kFloat32, rows * cols);
  int i = k.NewVar("i"), j = k.NewVar("j");
  using namespace kir;
  k.body = For(i, cols, LoopKind::kSerial,
               For(j, rows, LoopKind::kVectorized,
                   Store(out, Add(Mul(Var(i), Int(rows)), Var(j)),
                         Load(x, Add(Mul(Var(j), Int(cols)), Var(i)))),
                   16));
  Jit jit;
  std::unique_ptr<JitCode> code;
  KernelFn fn = Compile(jit, k, code);
  std::vector<float> xs(rows * cols), ys(rows * cols);
  for (size_t n = 0; n < xs.size(); ++n) xs[n] = static_cast<float>(n);
  void* buffers[] = {xs.data(), ys.data()};
  fn(buffers);
  for (int64_t a = 0; a < cols; ++a)
    for (int64_t b = 0; b < rows; ++b) ASSERT_EQ(ys[a * rows + b], xs[b * cols + a]);
}

TEST(KernelIr, PrintsLoopNest) {
  std::string text = PrintKernel(SubExpKernel(2, 3, 4, 16));
  EXPECT_EQ(text,
            "kernel sub_exp(x: float32[24], m: float32[6], out: float32[24]) {\n"
            "  parallel for i in 0..2 {\n"
            "    for j in 0..3 {\n"
            "      vectorized(16) for k in 0..4 {\n"
            "        out[((((i * 3) + j) * 4) + k)] = exp((x[((((i * 3) + j) * 4) + k)] - m[((i * "
            "3) + j)]))\n"
            "      }\n"
            "    }\n"
            "  }\n"
            "}\n");
}

TEST(KernelIr, EmitsZmmRegistersForVectorizedLoops) {
  Jit jit;
  if (!jit.target().Has("avx512f")) GTEST_SKIP() << "no AVX-512 on this CPU";
  auto module = jit.NewModule("asm");
  LowerKernel(SubExpKernel(4, 3, 32, 16), jit, *module, "sub_exp_asm");
  jit.Optimize(*module);
  std::string assembly = jit.Assembly(*module);
  EXPECT_NE(assembly.find("zmm"), std::string::npos);
}

}  // namespace
}  // namespace fusetune::codegen
