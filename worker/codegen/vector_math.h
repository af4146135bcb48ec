#pragma once
// Vectorisable math for generated kernels: each function takes a float or <N x float> LLVM value
// and emits straight-line IR (polynomials, bit tricks, selects) returning the same type, so the
// functions vectorise at any width with no calls into libm. Maximum errors over the whole float
// range, measured by tests/codegen/vector_math_test.cc against double-precision libm (relative
// unless marked absolute; "ulp" = float units in the last place):
//
//   exp       Cody-Waite reduction + degree-5 polynomial (Cephes expf)   rel <= 1e-7 (measured
//   8e-8)
//             x < -87 -> 0 (no denormals: they are slow); x > 88.7228 -> +inf; NaN -> NaN
//   fast_exp  same reduction, degree-4 Taylor polynomial, no NaN/inf fix-ups on overflow
//                                                                         rel <= 6e-5
//   log       frexp + degree-8 polynomial (Cephes logf), denormals handled  abs <= 2e-7 near 1,
//             rel <= 3e-7 elsewhere; log(0) = -inf, log(<0) = NaN
//   tanh      x P(x^2) / Q(x^2) on x clamped to [-9, 9] (Eigen's float tanh), result clamped
//             to [-1, 1]              rel <= 3e-7 over every float (measured 2.95e-7 at 7.168)
//   fast_tanh 1 - 2/(fast_exp(2x)+1) on x clamped to [-9, 9]              abs <= 4e-5
//   sigmoid   1/(1+exp(-x))                                               rel <= 5e-7
//   erf       x P(x^2) / Q(x^2) on x clamped to [-4, 4] (XLA's ErfImpl32), result clamped to
//             [-1, 1]                              abs and rel <= 4.5e-7 over every float
//             (measured 4.46e-7 at x = 3.915, where erf rounds to 1; the sampled sweep sees 3e-7)
//   sqrt      the hardware square root (llvm.sqrt), correctly rounded
//   rsqrt     1/sqrt(x) (two correctly rounded steps)                     rel <= 1.2e-7
//   pow       exp(y*log|x|) with sign and zero rules; constant y in {0.5, 1, 2, 3, -1, -0.5}
//             becomes sqrt / multiplies / divides             rel <= 2e-7 * (1 + |y ln|x||)
namespace llvm {
class IRBuilderBase;
class Value;
}  // namespace llvm

namespace fusetune::codegen {

llvm::Value* EmitExp(llvm::IRBuilderBase& b, llvm::Value* x);
llvm::Value* EmitFastExp(llvm::IRBuilderBase& b, llvm::Value* x);
llvm::Value* EmitLog(llvm::IRBuilderBase& b, llvm::Value* x);
llvm::Value* EmitTanh(llvm::IRBuilderBase& b, llvm::Value* x);
llvm::Value* EmitFastTanh(llvm::IRBuilderBase& b, llvm::Value* x);
llvm::Value* EmitSigmoid(llvm::IRBuilderBase& b, llvm::Value* x);
llvm::Value* EmitErf(llvm::IRBuilderBase& b, llvm::Value* x);
llvm::Value* EmitSqrt(llvm::IRBuilderBase& b, llvm::Value* x);
llvm::Value* EmitRsqrt(llvm::IRBuilderBase& b, llvm::Value* x);
// x^y; `constant_y` set when y is a known constant (enables the cheap special cases).
llvm::Value* EmitPow(llvm::IRBuilderBase& b, llvm::Value* x, llvm::Value* y,
                     const double* constant_y = nullptr);

}  // namespace fusetune::codegen
