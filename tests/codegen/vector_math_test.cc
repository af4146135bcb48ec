// Accuracy of the vectorised math (worker/codegen/vector_math.h) over the float range: every op
// is compiled as a 16-wide kernel and run on inputs sampled across all float bit patterns of its
// domain, then compared with double-precision libm. The bounds here are the documented ones.
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "worker/codegen/jit.h"
#include "worker/codegen/kernel_abi.h"
#include "worker/codegen/kernel_ir.h"
#include "worker/codegen/lower_llvm.h"

namespace fusetune::codegen {
namespace {

// Runs out[i] = op(in[i]) (or in[i] ^ y for pow) through a generated vector kernel of `lanes`.
std::vector<float> RunUnary(ScalarExpr expr, const std::vector<float>& in, int lanes = 16) {
  Kernel k;
  k.name = "math";
  const int64_t n = static_cast<int64_t>(in.size());
  int x = k.AddParam("x", DType::kFloat32, n);
  int out = k.AddParam("out", DType::kFloat32, n);
  int i = k.NewVar("i");
  k.body =
      kir::For(i, n, LoopKind::kVectorized,
               kir::Store(out, kir::Var(i), kir::Eval(expr, {kir::Load(x, kir::Var(i))})), lanes);
  Jit jit;
  auto module = jit.NewModule("math");
  LowerKernel(k, jit, *module, "math_kernel");
  jit.Optimize(*module);
  auto code = jit.Load(std::move(module));
  auto fn = reinterpret_cast<KernelFn>(code->Lookup("math_kernel"));
  std::vector<float> result(in.size());
  void* buffers[] = {const_cast<float*>(in.data()), result.data()};
  fn(buffers);
  return result;
}

// Floats in [lo, hi] sampled evenly in bit-pattern space (so every binade is covered), plus 0.
std::vector<float> Sample(float lo, float hi, int per_binade_step = 997) {
  std::vector<float> out;
  auto add_range = [&](float a, float b) {  // 0 <= a < b
    uint32_t ua, ub;
    std::memcpy(&ua, &a, 4);
    std::memcpy(&ub, &b, 4);
    for (uint32_t u = ua; u <= ub && u >= ua; u += per_binade_step) {
      float f;
      std::memcpy(&f, &u, 4);
      out.push_back(f);
    }
    out.push_back(b);
  };
  if (hi > 0) add_range(std::max(lo, 0.0f), hi);
  if (lo < 0) {
    std::vector<float> pos;
    std::swap(pos, out);
    add_range(std::max(-hi, 0.0f), -lo);
    for (float& f : out) f = -f;
    out.insert(out.end(), pos.begin(), pos.end());
  }
  out.push_back(0.0f);
  return out;
}

struct Errors {
  double max_rel = 0, max_abs = 0;
};

Errors Measure(ScalarOp op, const std::vector<float>& in,
               const std::function<double(double)>& reference,
               double rel_floor = std::numeric_limits<float>::min()) {
  std::vector<float> got = RunUnary(sx::Unary(op, sx::Arg(0, DType::kFloat32)), in);
  Errors e;
  for (size_t i = 0; i < in.size(); ++i) {
    double want = reference(in[i]);
    double want_f = static_cast<float>(want);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got[i])) << ScalarOpName(op) << "(" << in[i] << ") = " << got[i];
      continue;
    }
    if (std::isinf(want_f)) {
      EXPECT_EQ(got[i], want_f) << ScalarOpName(op) << "(" << in[i] << ")";
      continue;
    }
    double abs_err = std::fabs(got[i] - want);
    e.max_abs = std::max(e.max_abs, abs_err);
    if (std::fabs(want) >= rel_floor) e.max_rel = std::max(e.max_rel, abs_err / std::fabs(want));
  }
  return e;
}

// A rational form clamped on both sides (erf, tanh): never past +-1, the input's sign, +-1 at
// +-inf, NaN passes through, and exactly odd (what lets an every-float sweep cover [-end, end]
// from [0, end]), sampled over [-range, range].
void ExpectClampedToOneAndOdd(ScalarOp op, float range) {
  const ScalarExpr expr = sx::Unary(op, sx::Arg(0, DType::kFloat32));
  std::vector<float> in = Sample(-range, range, 9973);
  const size_t finite = in.size();
  in.insert(in.end(), {std::numeric_limits<float>::infinity(),
                       -std::numeric_limits<float>::infinity(), std::nanf("")});
  const std::vector<float> got = RunUnary(expr, in);
  std::vector<float> negated(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(finite));
  for (float& f : negated) f = -f;
  const std::vector<float> got_negated = RunUnary(expr, negated);
  for (size_t i = 0; i < finite; ++i) {
    EXPECT_LE(std::fabs(got[i]), 1.0f) << ScalarOpName(op) << "(" << in[i] << ")";
    EXPECT_EQ(std::signbit(got[i]), std::signbit(in[i])) << ScalarOpName(op) << "(" << in[i] << ")";
    EXPECT_EQ(got_negated[i], -got[i]) << ScalarOpName(op) << "(" << negated[i] << ")";
  }
  EXPECT_EQ(got[finite], 1.0f);
  EXPECT_EQ(got[finite + 1], -1.0f);
  EXPECT_TRUE(std::isnan(got[finite + 2]));
}

TEST(VectorMath, Exp) {
  Errors e = Measure(ScalarOp::kExp, Sample(-87.0f, 88.72f), [](double x) { return std::exp(x); });
  EXPECT_LE(e.max_rel, 1e-7);
  std::vector<float> specials = {-1000.0f,
                                 -100.0f,
                                 89.0f,
                                 1000.0f,
                                 std::numeric_limits<float>::infinity(),
                                 -std::numeric_limits<float>::infinity(),
                                 std::nanf("")};
  std::vector<float> got =
      RunUnary(sx::Unary(ScalarOp::kExp, sx::Arg(0, DType::kFloat32)), specials);
  EXPECT_EQ(got[0], 0.0f);
  EXPECT_EQ(got[1], 0.0f);  // e^-100 would be a denormal: flushed to 0 (documented)
  EXPECT_TRUE(std::isinf(got[2]));
  EXPECT_TRUE(std::isinf(got[3]));
  EXPECT_TRUE(std::isinf(got[4]));
  EXPECT_EQ(got[5], 0.0f);
  EXPECT_TRUE(std::isnan(got[6]));
  std::printf("exp: max rel error %.3g\n", e.max_rel);
}

// Schedules may pick 8- or 4-wide vectors: exp (and the ops built on it) must compile there too
// (AVX-512VL's scalef has no rounding operand, unlike the 512-bit one) and give the same values.
TEST(VectorMath, ExpAtNarrowerWidths) {
  const std::vector<float> in = Sample(-87.0f, 88.72f, 99991);
  for (ScalarOp op : {ScalarOp::kExp, ScalarOp::kSigmoid, ScalarOp::kTanh}) {
    const ScalarExpr expr = sx::Unary(op, sx::Arg(0, DType::kFloat32));
    const std::vector<float> wide = RunUnary(expr, in, 16);
    for (int lanes : {8, 4}) {
      EXPECT_EQ(RunUnary(expr, in, lanes), wide) << ScalarOpName(op) << " at " << lanes << " lanes";
    }
  }
}

TEST(VectorMath, FastExp) {
  Errors e =
      Measure(ScalarOp::kFastExp, Sample(-87.0f, 88.0f), [](double x) { return std::exp(x); });
  EXPECT_LE(e.max_rel, 6e-5);
  std::printf("fast_exp: max rel error %.3g\n", e.max_rel);
}

TEST(VectorMath, Log) {
  Errors e = Measure(ScalarOp::kLog, Sample(0.0f, std::numeric_limits<float>::max()),
                     [](double x) { return std::log(x); });
  EXPECT_LE(e.max_abs, 2e-7 * 100);  // absolute error grows with |log x| up to ~88
  std::vector<float> near_one = Sample(0.5f, 2.0f, 13);
  Errors near = Measure(
      ScalarOp::kLog, near_one, [](double x) { return std::log(x); }, 1e-3);
  EXPECT_LE(near.max_abs, 2e-7);
  std::vector<float> got = RunUnary(sx::Unary(ScalarOp::kLog, sx::Arg(0, DType::kFloat32)),
                                    {0.0f, -1.0f, std::numeric_limits<float>::infinity(), 1e-40f});
  EXPECT_EQ(got[0], -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(got[1]));
  EXPECT_TRUE(std::isinf(got[2]) && got[2] > 0);
  EXPECT_NEAR(got[3], std::log(1e-40), 1e-4);
  std::printf("log: max abs error %.3g (near 1: %.3g)\n", e.max_abs, near.max_abs);
}

TEST(VectorMath, Tanh) {
  Errors e = Measure(ScalarOp::kTanh, Sample(-50.0f, 50.0f), [](double x) { return std::tanh(x); });
  EXPECT_LE(e.max_rel, 4e-7);
  std::printf("tanh: max rel error %.3g\n", e.max_rel);
  ExpectClampedToOneAndOdd(ScalarOp::kTanh, 10.0f);
}

TEST(VectorMath, FastTanh) {
  Errors e =
      Measure(ScalarOp::kFastTanh, Sample(-50.0f, 50.0f), [](double x) { return std::tanh(x); });
  EXPECT_LE(e.max_abs, 4e-5);
  std::printf("fast_tanh: max abs error %.3g\n", e.max_abs);
}

TEST(VectorMath, Sigmoid) {
  Errors e = Measure(ScalarOp::kSigmoid, Sample(-80.0f, 80.0f),
                     [](double x) { return 1.0 / (1.0 + std::exp(-x)); });
  EXPECT_LE(e.max_rel, 5e-7);
  std::printf("sigmoid: max rel error %.3g\n", e.max_rel);
}

TEST(VectorMath, Erf) {
  Errors e = Measure(ScalarOp::kErf, Sample(-20.0f, 20.0f), [](double x) { return std::erf(x); });
  EXPECT_LE(e.max_abs, 3e-7);
  EXPECT_LE(e.max_rel, 4e-7);  // tiny x included: no denormal step on the way
  std::printf("erf: max abs error %.3g, rel %.3g\n", e.max_abs, e.max_rel);
  ExpectClampedToOneAndOdd(ScalarOp::kErf, 6.0f);
}

// Every float in [0, end] of an exactly odd op (so the sweep covers [-end, end]; past `end` the
// input is clamped): about 1.1e9 values for erf, half a minute with the double-precision
// reference, so off by default (--gtest_also_run_disabled_tests). Their figures are the bounds
// vector_math.h documents.
struct SweepResult {
  Errors e;
  float max_value = 0, worst_abs_at = 0, worst_rel_at = 0;
};

SweepResult EveryFloatUpTo(ScalarOp op, float end_value, double (*reference)(double)) {
  const uint32_t end = std::bit_cast<uint32_t>(end_value);
  constexpr uint32_t kChunk = 1u << 24;
  SweepResult r;
  std::vector<float> in;
  for (uint32_t start = 0; start <= end; start += kChunk) {
    in.clear();
    for (uint32_t u = start; u <= end && u - start < kChunk; ++u)
      in.push_back(std::bit_cast<float>(u));
    std::vector<float> got = RunUnary(sx::Unary(op, sx::Arg(0, DType::kFloat32)), in);
    for (size_t i = 0; i < in.size(); ++i) {
      const double want = reference(static_cast<double>(in[i]));
      const double abs_err = std::fabs(got[i] - want);
      if (abs_err > r.e.max_abs) r.e.max_abs = abs_err, r.worst_abs_at = in[i];
      if (want >= std::numeric_limits<float>::min() && abs_err / want > r.e.max_rel)
        r.e.max_rel = abs_err / want, r.worst_rel_at = in[i];
      r.max_value = std::max(r.max_value, got[i]);
    }
  }
  std::printf(
      "%s over every float in [0, %g]: max abs error %.3g (at %.9g), rel %.3g (at %.9g), "
      "largest value %.9g\n",
      ScalarOpName(op), end_value, r.e.max_abs, r.worst_abs_at, r.e.max_rel, r.worst_rel_at,
      r.max_value);
  return r;
}

TEST(VectorMath, DISABLED_ErfEveryFloat) {
  const SweepResult r = EveryFloatUpTo(ScalarOp::kErf, 6.0f, [](double x) { return std::erf(x); });
  EXPECT_LE(r.e.max_abs, 4.5e-7);
  EXPECT_LE(r.e.max_rel, 4.5e-7);
  EXPECT_LE(r.max_value, 1.0f);
}

TEST(VectorMath, DISABLED_TanhEveryFloat) {
  const SweepResult r =
      EveryFloatUpTo(ScalarOp::kTanh, 10.0f, [](double x) { return std::tanh(x); });
  EXPECT_LE(r.e.max_rel, 3e-7);
  EXPECT_LE(r.max_value, 1.0f);
}

// x / c for a constant c is lowered as x * (1/c): within a ulp or so of the division; a zero or
// non-finite divisor keeps the division (x / 0 = +-inf, 0 / 0 = NaN).
TEST(VectorMath, DivisionByConstant) {
  const std::vector<float> in = Sample(-1e30f, 1e30f, 9973);
  for (double c : {1.4142135, 3.0, -7.0, 0.1, 8.0}) {
    std::vector<float> got = RunUnary(
        sx::Binary(ScalarOp::kDiv, sx::Arg(0, DType::kFloat32), sx::Const(c, DType::kFloat32)), in);
    double max_rel = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      const double want = static_cast<double>(in[i]) / static_cast<float>(c);
      if (std::fabs(want) < std::numeric_limits<float>::min()) continue;  // denormal results
      max_rel = std::max(max_rel, std::fabs(got[i] - want) / std::fabs(want));
    }
    EXPECT_LE(max_rel, 1.2e-7) << "x / " << c;
  }
  std::vector<float> got = RunUnary(
      sx::Binary(ScalarOp::kDiv, sx::Arg(0, DType::kFloat32), sx::Const(0.0)), {1.0f, -2.0f, 0.0f});
  EXPECT_EQ(got[0], std::numeric_limits<float>::infinity());
  EXPECT_EQ(got[1], -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(got[2]));
}

TEST(VectorMath, SqrtAndRsqrt) {
  Errors s = Measure(ScalarOp::kSqrt, Sample(0.0f, 1e30f), [](double x) { return std::sqrt(x); });
  EXPECT_LE(s.max_rel, 6e-8);
  Errors r =
      Measure(ScalarOp::kRsqrt, Sample(1e-30f, 1e30f), [](double x) { return 1.0 / std::sqrt(x); });
  EXPECT_LE(r.max_rel, 1.2e-7);
}

TEST(VectorMath, Pow) {
  std::vector<float> in = Sample(-4.0f, 4.0f, 9973);
  for (double y : {2.0, 3.0, 0.5, -1.0, 1.7, -2.0, 5.0}) {
    ScalarExpr expr = sx::Binary(ScalarOp::kPow, sx::Arg(0, DType::kFloat32), sx::Const(y));
    std::vector<float> got = RunUnary(expr, in);
    for (size_t i = 0; i < in.size(); ++i) {
      double want = std::pow(static_cast<double>(in[i]), y);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got[i])) << in[i] << "^" << y;
      } else if (want == 0.0) {
        EXPECT_EQ(got[i], 0.0f) << in[i] << "^" << y;
      } else if (std::isinf(static_cast<float>(want))) {
        EXPECT_TRUE(std::isinf(got[i])) << in[i] << "^" << y;
      } else {
        double amplification = 1.0 + std::fabs(y * std::log(std::fabs(in[i])));
        ASSERT_NEAR(got[i], want, 2e-7 * amplification * std::fabs(want) + 1.7e-38)
            << in[i] << "^" << y;
      }
    }
  }
}

}  // namespace
}  // namespace fusetune::codegen
