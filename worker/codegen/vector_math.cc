#include "worker/codegen/vector_math.h"

#include <cmath>
#include <initializer_list>
#include <optional>
#include <vector>

#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsX86.h>

namespace fusetune::codegen {
namespace {

using llvm::Value;

Value* C(llvm::IRBuilderBase&, Value* like, double v) {
  return llvm::ConstantFP::get(like->getType(), v);
}
Value* CI(llvm::IRBuilderBase&, llvm::Type* type, int64_t v) {
  return llvm::ConstantInt::get(type, v, true);
}
llvm::Type* IntTypeLike(llvm::IRBuilderBase& b, Value* x) {
  return x->getType()->getWithNewType(b.getInt32Ty());
}

Value* Fma(llvm::IRBuilderBase& b, Value* x, Value* y, Value* z) {
  return b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {x->getType()}, {x, y, z});
}
Value* Unary(llvm::IRBuilderBase& b, llvm::Intrinsic::ID id, Value* x) {
  return b.CreateIntrinsic(id, {x->getType()}, {x});
}
Value* Binary(llvm::IRBuilderBase& b, llvm::Intrinsic::ID id, Value* x, Value* y) {
  return b.CreateIntrinsic(id, {x->getType()}, {x, y});
}

// Horner evaluation of c[0]*x^n + c[1]*x^(n-1) + ... + c[n].
Value* Polynomial(llvm::IRBuilderBase& b, Value* x, std::initializer_list<double> coefficients) {
  auto it = coefficients.begin();
  Value* acc = C(b, x, *it++);
  for (; it != coefficients.end(); ++it) acc = Fma(b, acc, x, C(b, x, *it));
  return acc;
}

// y * 2^n for integer-valued float n in [-252, 254]: two normal-range factors 2^(n>>1) and
// 2^(n - (n>>1)), so results near overflow stay exact and tiny ones become denormals gracefully.
Value* ScaleByPow2(llvm::IRBuilderBase& b, Value* y, Value* n) {
  llvm::Type* int_type = IntTypeLike(b, n);
  Value* ni = b.CreateFPToSI(n, int_type);
  Value* n1 = b.CreateAShr(ni, CI(b, int_type, 1));
  Value* n2 = b.CreateSub(ni, n1);
  auto pow2 = [&](Value* e) {
    return b.CreateBitCast(b.CreateShl(b.CreateAdd(e, CI(b, int_type, 127)), CI(b, int_type, 23)),
                           y->getType());
  };
  return b.CreateFMul(b.CreateFMul(y, pow2(n1)), pow2(n2));
}

constexpr double kLog2e = 1.44269504088896341;
constexpr double kLn2Hi = 0.693359375;
constexpr double kLn2Lo = -2.12194440e-4;
constexpr double kExpHi = 88.72283935546875;  // above: +inf
// Below kExpLo the result is 0: e^-87 (1.6e-38) is still a normal float, so no lane ever makes a
// denormal, whose arithmetic costs a microcode assist (~100 cycles per instruction on Intel
// cores) and turned a masked softmax row (exp of -10000) into a 10x slower kernel.
constexpr double kExpLo = -87.0;

// The AVX-512 scalef instruction for this vector width, if the function's target has it:
// y * 2^floor(n) in one instruction, with overflow to inf built in.
std::optional<llvm::Intrinsic::ID> Scalef(llvm::IRBuilderBase& b, Value* x) {
  auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(x->getType());
  if (!vt) return std::nullopt;
  llvm::Attribute features = b.GetInsertBlock()->getParent()->getFnAttribute("target-features");
  if (!features.isValid()) return std::nullopt;
  llvm::StringRef f = features.getValueAsString();
  if (!f.contains("+avx512f")) return std::nullopt;
  switch (vt->getNumElements()) {
    case 16:
      return llvm::Intrinsic::x86_avx512_mask_scalef_ps_512;
    case 8:
      return f.contains("+avx512vl") ? std::optional(llvm::Intrinsic::x86_avx512_mask_scalef_ps_256)
                                     : std::nullopt;
    case 4:
      return f.contains("+avx512vl") ? std::optional(llvm::Intrinsic::x86_avx512_mask_scalef_ps_128)
                                     : std::nullopt;
    default:
      return std::nullopt;
  }
}

// A clamp that keeps NaN (select on ordered compares, unlike minnum/maxnum).
Value* ClampKeepNaN(llvm::IRBuilderBase& b, Value* x, double lo, double hi) {
  Value* low = b.CreateSelect(b.CreateFCmpOLT(x, C(b, x, lo)), C(b, x, lo), x);
  return b.CreateSelect(b.CreateFCmpOGT(low, C(b, x, hi)), C(b, x, hi), low);
}

// e^x for x in [kExpLo, 100] (NaN passes through): n = rint(x log2 e), r = x - n ln 2 in two
// steps, e^r by a polynomial, then the scaling by 2^n.
Value* ExpCore(llvm::IRBuilderBase& b, Value* x, bool fast) {
  Value* n = Unary(b, llvm::Intrinsic::rint, b.CreateFMul(x, C(b, x, kLog2e)));
  Value* r = Fma(b, n, C(b, x, -kLn2Hi), x);
  r = Fma(b, n, C(b, x, -kLn2Lo), r);
  Value* y;
  if (fast) {
    y = Polynomial(b, r, {1.0 / 24, 1.0 / 6, 0.5, 1.0, 1.0});
  } else {
    Value* p = Polynomial(b, r,
                          {1.9875691500E-4, 1.3981999507E-3, 8.3334519073E-3, 4.1665795894E-2,
                           1.6666665459E-1, 5.0000001201E-1});
    y = b.CreateFAdd(Fma(b, p, b.CreateFMul(r, r), r), C(b, x, 1.0));
  }
  if (auto scalef = Scalef(b, x)) {
    auto* vt = llvm::cast<llvm::FixedVectorType>(x->getType());
    Value* all = b.getIntN(std::max(8u, vt->getNumElements()), -1);
    std::vector<Value*> args = {y, n, y, all};
    // Only the 512-bit form takes a rounding operand (4: the current mode); the VL forms do not.
    if (vt->getNumElements() == 16) args.push_back(b.getInt32(4));
    return b.CreateIntrinsic(*scalef, {}, args);
  }
  // Without scalef: n beyond 127 cannot be built as one float, so clamp (inf via select below).
  return ScaleByPow2(b, y, Binary(b, llvm::Intrinsic::minnum, n, C(b, n, 128.0)));
}

}  // namespace

Value* EmitExp(llvm::IRBuilderBase& b, Value* x) {
  // Clamped to [kExpLo, 100]: large enough that 2^n overflows to inf, small enough that n and r
  // stay exact; NaN propagates through the arithmetic.
  Value* y = ExpCore(b, ClampKeepNaN(b, x, kExpLo, 100.0), /*fast=*/false);
  y = b.CreateSelect(b.CreateFCmpOLT(x, C(b, x, kExpLo)), C(b, x, 0.0), y);
  if (!Scalef(b, x)) y = b.CreateSelect(b.CreateFCmpOGT(x, C(b, x, kExpHi)), C(b, x, INFINITY), y);
  return y;
}

Value* EmitFastExp(llvm::IRBuilderBase& b, Value* x) {
  Value* y = ExpCore(b, ClampKeepNaN(b, x, kExpLo, 100.0), /*fast=*/true);
  y = b.CreateSelect(b.CreateFCmpOLT(x, C(b, x, kExpLo)), C(b, x, 0.0), y);
  if (!Scalef(b, x)) y = b.CreateSelect(b.CreateFCmpOGT(x, C(b, x, kExpHi)), C(b, x, INFINITY), y);
  return y;
}

Value* EmitLog(llvm::IRBuilderBase& b, Value* x) {
  llvm::Type* int_type = IntTypeLike(b, x);
  // Denormals: scale into the normal range first and correct the exponent.
  Value* tiny = b.CreateFCmpOLT(x, C(b, x, 1.17549435e-38));
  Value* xs = b.CreateSelect(tiny, b.CreateFMul(x, C(b, x, 8388608.0)), x);
  Value* bias = b.CreateSelect(tiny, CI(b, int_type, 126 + 23), CI(b, int_type, 126));
  Value* bits = b.CreateBitCast(xs, int_type);
  Value* e =
      b.CreateSub(b.CreateLShr(bits, CI(b, int_type, 23)), bias);  // x = m * 2^e, m in [0.5, 1)
  Value* m = b.CreateBitCast(
      b.CreateOr(b.CreateAnd(bits, CI(b, int_type, 0x807FFFFF)), CI(b, int_type, 0x3F000000)),
      x->getType());
  Value* small = b.CreateFCmpOLT(m, C(b, x, 0.707106781186547524));
  Value* ef = b.CreateSIToFP(b.CreateSub(e, b.CreateZExt(small, int_type)), x->getType());
  Value* t = b.CreateFSub(b.CreateSelect(small, b.CreateFAdd(m, m), m), C(b, x, 1.0));
  Value* z = b.CreateFMul(t, t);
  Value* p = Polynomial(
      b, t,
      {7.0376836292E-2, -1.1514610310E-1, 1.1676998740E-1, -1.2420140846E-1, 1.4249322787E-1,
       -1.6668057665E-1, 2.0000714765E-1, -2.4999993993E-1, 3.3333331174E-1});
  Value* y = b.CreateFMul(b.CreateFMul(p, t), z);
  y = Fma(b, ef, C(b, x, kLn2Lo), y);
  y = Fma(b, z, C(b, x, -0.5), y);
  Value* r = b.CreateFAdd(t, y);
  r = Fma(b, ef, C(b, x, kLn2Hi), r);
  r = b.CreateSelect(b.CreateFCmpOEQ(x, C(b, x, INFINITY)), x, r);
  r = b.CreateSelect(b.CreateFCmpOEQ(x, C(b, x, 0.0)), C(b, x, -INFINITY), r);
  return b.CreateSelect(b.CreateFCmpULT(x, C(b, x, 0.0)), C(b, x, NAN), r);  // also NaN -> NaN
}

Value* EmitTanh(llvm::IRBuilderBase& b, Value* x) {
  // One rational function of x, x P(x^2) / Q(x^2) of degrees 13 / 6 on x clamped to [-9, 9],
  // past which tanh is +-1 in float (Eigen's float tanh; MLAS, and so ONNX Runtime, uses the
  // same). It replaced a two-branch form (an odd polynomial below 0.625, an exp and a division
  // above) whose both branches every lane paid: GPT-2's tanh-GELU after FFN 1 cost 4.7-5.5% of
  // that dense, now 2.2-3.5%.
  Value* xc = ClampKeepNaN(b, x, -9.0, 9.0);
  Value* z = b.CreateFMul(xc, xc);
  Value* p = Polynomial(
      b, z,
      {-2.76076847742355e-16, 2.00018790482477e-13, -8.60467152213735e-11, 5.12229709037114e-08,
       1.48572235717979e-05, 6.37261928875436e-04, 4.89352455891786e-03});
  Value* q = Polynomial(
      b, z,
      {1.19825839466702e-06, 1.18534705686654e-04, 2.26843463243900e-03, 4.89352518554385e-03});
  // x last, as in erf: a tiny x makes no denormal intermediate. The rounding can land a ulp past
  // 1: clamped (NaN passes through).
  return ClampKeepNaN(b, b.CreateFMul(b.CreateFDiv(p, q), xc), -1.0, 1.0);
}

Value* EmitFastTanh(llvm::IRBuilderBase& b, Value* x) {
  Value* xc = ClampKeepNaN(b, x, -9.0, 9.0);
  Value* e = EmitFastExp(b, b.CreateFAdd(xc, xc));
  return b.CreateFSub(C(b, x, 1.0), b.CreateFDiv(C(b, x, 2.0), b.CreateFAdd(e, C(b, x, 1.0))));
}

Value* EmitSigmoid(llvm::IRBuilderBase& b, Value* x) {
  Value* e = EmitExp(b, b.CreateFNeg(x));
  return b.CreateFDiv(C(b, x, 1.0), b.CreateFAdd(C(b, x, 1.0), e));
}

Value* EmitErf(llvm::IRBuilderBase& b, Value* x) {
  // One rational function of x on [-4, 4] (erf(4) is 1 in float): x P(x^2) / Q(x^2), the
  // coefficients of XLA's ErfImpl32 / Eigen's float erf. It replaced a two-branch form (a
  // polynomial for |x| < 1, Abramowitz-Stegun 7.1.26 with an exp and a division beyond) whose
  // both branches every lane paid: BERT's erf-GELU after FFN 1 cost 8% of that dense.
  Value* xc = ClampKeepNaN(b, x, -4.0, 4.0);
  Value* z = b.CreateFMul(xc, xc);
  Value* p = Polynomial(
      b, z,
      {-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06, -5.69250639462346e-05,
       -7.34990630326855e-04, -2.95459980854025e-03, -1.60960333262415e-02});
  Value* q = Polynomial(b, z,
                        {-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
                         -7.37332916720468e-03, -1.42647390514189e-02});
  // x last, so a tiny x gives no denormal intermediate (P(0) is -0.016); the rounding of the last
  // steps can land a ulp past 1: clamped (NaN passes through).
  return ClampKeepNaN(b, b.CreateFMul(b.CreateFDiv(p, q), xc), -1.0, 1.0);
}

Value* EmitSqrt(llvm::IRBuilderBase& b, Value* x) { return Unary(b, llvm::Intrinsic::sqrt, x); }

Value* EmitRsqrt(llvm::IRBuilderBase& b, Value* x) {
  return b.CreateFDiv(C(b, x, 1.0), EmitSqrt(b, x));
}

Value* EmitPow(llvm::IRBuilderBase& b, Value* x, Value* y, const double* constant_y) {
  if (constant_y) {
    double c = *constant_y;
    if (c == 1.0) return x;
    if (c == 2.0) return b.CreateFMul(x, x);
    if (c == 3.0) return b.CreateFMul(b.CreateFMul(x, x), x);
    if (c == 0.5) return EmitSqrt(b, x);
    if (c == -1.0) return b.CreateFDiv(C(b, x, 1.0), x);
    if (c == -0.5) return EmitRsqrt(b, x);
    if (c == 0.0) return C(b, x, 1.0);
  }
  Value* ax = Unary(b, llvm::Intrinsic::fabs, x);
  Value* magnitude = EmitExp(b, b.CreateFMul(y, EmitLog(b, ax)));
  // Negative base: defined for integral y (sign from parity), NaN otherwise.
  Value* y_integral = b.CreateFCmpOEQ(Unary(b, llvm::Intrinsic::trunc, y), y);
  Value* half_y = b.CreateFMul(y, C(b, y, 0.5));
  Value* y_odd =
      b.CreateAnd(y_integral, b.CreateFCmpONE(Unary(b, llvm::Intrinsic::trunc, half_y), half_y));
  Value* negative = b.CreateSelect(
      y_integral, b.CreateSelect(y_odd, b.CreateFNeg(magnitude), magnitude), C(b, x, NAN));
  Value* r = b.CreateSelect(b.CreateFCmpOLT(x, C(b, x, 0.0)), negative, magnitude);
  // exp(y * log 0) already gives 0 (y > 0) and inf (y < 0); y == 0 gives 1 for every x.
  return b.CreateSelect(b.CreateFCmpOEQ(y, C(b, y, 0.0)), C(b, x, 1.0), r);
}

}  // namespace fusetune::codegen
