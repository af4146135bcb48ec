#pragma once
// Scalar expressions: the per-element meaning of element-wise and broadcast ops. The op catalog
// defines each such op once as a ScalarExpr over its inputs; the reference interpreter evaluates
// it exactly in double, and the code generator lowers the same tree to vector code. This is how
// "one op is defined in one place" holds across the interpreter and the kernels.
#include <memory>
#include <span>
#include <vector>

#include "ir/dtype.h"

namespace fusetune {

enum class ScalarOp {
  kConst,  // value
  kArg,    // arg_index: the op's input number
  // unary
  kNeg,
  kAbs,
  kExp,
  kFastExp,
  kLog,
  kSqrt,
  kRsqrt,
  kTanh,
  kFastTanh,
  kSigmoid,
  kErf,
  kCast,  // to `dtype` (float->int truncates toward zero; ->bool is "!= 0")
  // binary
  kAdd,
  kSub,
  kMul,
  kDiv,
  kPow,
  kMax,
  kMin,
  kLt,
  kLe,
  kGt,
  kGe,
  kEq,
  kNe,  // comparisons give bool (1.0 / 0.0)
  // ternary
  kSelect,  // operands[0] != 0 ? operands[1] : operands[2]
};

struct ScalarNode;
using ScalarExpr = std::shared_ptr<const ScalarNode>;

struct ScalarNode {
  ScalarOp op;
  DType dtype;         // result dtype
  double value = 0.0;  // kConst
  int arg_index = -1;  // kArg
  std::vector<ScalarExpr> operands;
};

namespace sx {
ScalarExpr Const(double value, DType dtype = DType::kFloat32);
ScalarExpr Arg(int index, DType dtype);
ScalarExpr Unary(ScalarOp op, ScalarExpr a);
ScalarExpr Cast(ScalarExpr a, DType to);
ScalarExpr Binary(ScalarOp op, ScalarExpr a, ScalarExpr b);  // comparisons yield bool
ScalarExpr Select(ScalarExpr cond, ScalarExpr a, ScalarExpr b);
// Replace every kArg i with args[i]: how a producer is inlined into its consumer.
ScalarExpr Substitute(const ScalarExpr& e, std::span<const ScalarExpr> args);
}  // namespace sx

// Exact evaluation in double (float32 results are rounded by the caller when stored).
double EvalScalar(const ScalarExpr& e, std::span<const double> args);

// EvalScalar of `n` elements at once: args[i] holds argument i's n values, `out` receives n
// results. Each node is computed for the whole row before its parent, by the functions EvalScalar
// applies per element (a kSelect computes both branches and picks), so every value is the one
// EvalScalar gives; the tree is walked once per row instead of once per element, which is where
// the reference interpreter spent an element-wise op's time (a `where` of 1.8 M elements: 31 ms).
void EvalScalarRow(const ScalarExpr& e, std::span<const double* const> args, int64_t n,
                   double* out);

// Flops of one evaluation, counting transcendental functions as one each.
int CountScalarFlops(const ScalarExpr& e);

// Whether `e` uses only operations a vector unit does in one instruction: no division, root,
// power or transcendental. What XLA calls not expensive: cheap enough to compute again wherever
// the value is read.
bool IsCheapToRecompute(const ScalarExpr& e);

const char* ScalarOpName(ScalarOp op);

}  // namespace fusetune
