#include "ir/scalar_expr.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "ir/error.h"

namespace fusetune {
namespace {

bool IsComparison(ScalarOp op) {
  return op == ScalarOp::kLt || op == ScalarOp::kLe || op == ScalarOp::kGt || op == ScalarOp::kGe ||
         op == ScalarOp::kEq || op == ScalarOp::kNe;
}

bool IsUnary(ScalarOp op) { return op >= ScalarOp::kNeg && op <= ScalarOp::kErf; }
bool IsBinary(ScalarOp op) { return op >= ScalarOp::kAdd && op <= ScalarOp::kNe; }

bool IsConst(const ScalarExpr& e) { return e->op == ScalarOp::kConst; }

// Converting to int32 truncates toward zero; NaN becomes 0 and out-of-range values saturate, so
// the result is defined for every input (a C cast would not be).
double ToInt32(double v) {
  if (std::isnan(v)) return 0.0;
  v = std::trunc(v);
  if (v > std::numeric_limits<int32_t>::max()) return std::numeric_limits<int32_t>::max();
  if (v < std::numeric_limits<int32_t>::min()) return std::numeric_limits<int32_t>::min();
  return v;
}

// The value `v` takes when stored as `dtype`, so constants fold to what a kernel would compute.
double RoundTo(double v, DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return static_cast<double>(static_cast<float>(v));
    case DType::kInt32:
      return ToInt32(v);
    case DType::kBool:
      return v != 0.0 ? 1.0 : 0.0;
    default:
      return v;
  }
}

ScalarExpr Make(ScalarNode node) { return std::make_shared<const ScalarNode>(std::move(node)); }

ScalarNode NodeOf(ScalarOp op, DType dtype) {
  ScalarNode n;
  n.op = op;
  n.dtype = dtype;
  return n;
}

// Folds `e` to a constant when all its operands are constants.
ScalarExpr Fold(ScalarExpr e) {
  if (e->operands.empty()) return e;
  for (const auto& o : e->operands)
    if (!IsConst(o)) return e;
  return sx::Const(EvalScalar(e, {}), e->dtype);
}

double EvalUnary(ScalarOp op, double a) {
  switch (op) {
    case ScalarOp::kNeg:
      return -a;
    case ScalarOp::kAbs:
      return std::fabs(a);
    case ScalarOp::kExp:
    case ScalarOp::kFastExp:
      return std::exp(a);
    case ScalarOp::kLog:
      return std::log(a);
    case ScalarOp::kSqrt:
      return std::sqrt(a);
    case ScalarOp::kRsqrt:
      return 1.0 / std::sqrt(a);
    case ScalarOp::kTanh:
    case ScalarOp::kFastTanh:
      return std::tanh(a);
    case ScalarOp::kSigmoid:
      return 1.0 / (1.0 + std::exp(-a));
    case ScalarOp::kErf:
      return std::erf(a);
    default:
      FT_CHECK(false, fmt::format("{} is not unary", ScalarOpName(op)));
  }
}

double EvalBinary(ScalarOp op, DType dtype, double a, double b) {
  const bool integer = dtype == DType::kInt32;
  switch (op) {
    case ScalarOp::kAdd:
      return a + b;
    case ScalarOp::kSub:
      return a - b;
    case ScalarOp::kMul:
      return a * b;
    case ScalarOp::kDiv:
      // Integer division truncates (C and TVM semantics); x/0 on ints is defined here as 0.
      if (integer) return b == 0.0 ? 0.0 : ToInt32(a / b);
      return a / b;
    case ScalarOp::kPow:
      return integer ? ToInt32(std::pow(a, b)) : std::pow(a, b);
    case ScalarOp::kMax:
      return a < b ? b : a;
    case ScalarOp::kMin:
      return b < a ? b : a;
    case ScalarOp::kLt:
      return a < b;
    case ScalarOp::kLe:
      return a <= b;
    case ScalarOp::kGt:
      return a > b;
    case ScalarOp::kGe:
      return a >= b;
    case ScalarOp::kEq:
      return a == b;
    case ScalarOp::kNe:
      return a != b;
    default:
      FT_CHECK(false, fmt::format("{} is not binary", ScalarOpName(op)));
  }
}

}  // namespace

namespace sx {

ScalarExpr Const(double value, DType dtype) {
  ScalarNode n = NodeOf(ScalarOp::kConst, dtype);
  n.value = RoundTo(value, dtype);
  return Make(std::move(n));
}

ScalarExpr Arg(int index, DType dtype) {
  ScalarNode n = NodeOf(ScalarOp::kArg, dtype);
  n.arg_index = index;
  return Make(std::move(n));
}

ScalarExpr Unary(ScalarOp op, ScalarExpr a) {
  FT_CHECK(IsUnary(op), fmt::format("sx::Unary with {}", ScalarOpName(op)));
  ScalarNode n = NodeOf(op, a->dtype);
  n.operands = {std::move(a)};
  return Fold(Make(std::move(n)));
}

ScalarExpr Cast(ScalarExpr a, DType to) {
  if (a->dtype == to) return a;
  ScalarNode n = NodeOf(ScalarOp::kCast, to);
  n.operands = {std::move(a)};
  return Fold(Make(std::move(n)));
}

ScalarExpr Binary(ScalarOp op, ScalarExpr a, ScalarExpr b) {
  FT_CHECK(IsBinary(op), fmt::format("sx::Binary with {}", ScalarOpName(op)));
  ScalarNode n = NodeOf(op, IsComparison(op) ? DType::kBool : a->dtype);
  n.operands = {std::move(a), std::move(b)};
  return Fold(Make(std::move(n)));
}

ScalarExpr Select(ScalarExpr cond, ScalarExpr a, ScalarExpr b) {
  if (IsConst(cond)) return cond->value != 0.0 ? a : b;
  ScalarNode n = NodeOf(ScalarOp::kSelect, a->dtype);
  n.operands = {std::move(cond), std::move(a), std::move(b)};
  return Make(std::move(n));
}

ScalarExpr Substitute(const ScalarExpr& e, std::span<const ScalarExpr> args) {
  switch (e->op) {
    case ScalarOp::kConst:
      return e;
    case ScalarOp::kArg:
      FT_CHECK(e->arg_index >= 0 && e->arg_index < static_cast<int>(args.size()),
               fmt::format("Substitute: no replacement for arg {}", e->arg_index));
      return args[e->arg_index];
    case ScalarOp::kCast:
      return Cast(Substitute(e->operands[0], args), e->dtype);
    case ScalarOp::kSelect:
      return Select(Substitute(e->operands[0], args), Substitute(e->operands[1], args),
                    Substitute(e->operands[2], args));
    default:
      if (IsUnary(e->op)) return Unary(e->op, Substitute(e->operands[0], args));
      return Binary(e->op, Substitute(e->operands[0], args), Substitute(e->operands[1], args));
  }
}

}  // namespace sx

double EvalScalar(const ScalarExpr& e, std::span<const double> args) {
  const ScalarNode& n = *e;
  switch (n.op) {
    case ScalarOp::kConst:
      return n.value;
    case ScalarOp::kArg:
      return args[n.arg_index];
    case ScalarOp::kCast: {
      double a = EvalScalar(n.operands[0], args);
      return RoundTo(a, n.dtype);
    }
    case ScalarOp::kSelect:
      return EvalScalar(n.operands[0], args) != 0.0 ? EvalScalar(n.operands[1], args)
                                                    : EvalScalar(n.operands[2], args);
    default:
      if (IsUnary(n.op)) return EvalUnary(n.op, EvalScalar(n.operands[0], args));
      return EvalBinary(n.op, n.dtype, EvalScalar(n.operands[0], args),
                        EvalScalar(n.operands[1], args));
  }
}

void EvalScalarRow(const ScalarExpr& e, std::span<const double* const> args, int64_t n,
                   double* out) {
  const ScalarNode& node = *e;
  switch (node.op) {
    case ScalarOp::kConst:
      std::fill(out, out + n, node.value);
      return;
    case ScalarOp::kArg:
      std::copy(args[node.arg_index], args[node.arg_index] + n, out);
      return;
    case ScalarOp::kCast:
      EvalScalarRow(node.operands[0], args, n, out);
      for (int64_t j = 0; j < n; ++j) out[j] = RoundTo(out[j], node.dtype);
      return;
    case ScalarOp::kSelect: {
      std::vector<double> a(n), b(n);
      EvalScalarRow(node.operands[0], args, n, out);
      EvalScalarRow(node.operands[1], args, n, a.data());
      EvalScalarRow(node.operands[2], args, n, b.data());
      for (int64_t j = 0; j < n; ++j) out[j] = out[j] != 0.0 ? a[j] : b[j];
      return;
    }
    default:
      EvalScalarRow(node.operands[0], args, n, out);
      if (IsUnary(node.op)) {
        for (int64_t j = 0; j < n; ++j) out[j] = EvalUnary(node.op, out[j]);
        return;
      }
      std::vector<double> b(n);
      EvalScalarRow(node.operands[1], args, n, b.data());
      for (int64_t j = 0; j < n; ++j) out[j] = EvalBinary(node.op, node.dtype, out[j], b[j]);
  }
}

int CountScalarFlops(const ScalarExpr& e) {
  // Constants, argument reads and casts move data; everything else counts as one operation.
  int own =
      (e->op == ScalarOp::kConst || e->op == ScalarOp::kArg || e->op == ScalarOp::kCast) ? 0 : 1;
  for (const auto& o : e->operands) own += CountScalarFlops(o);
  return own;
}

bool IsCheapToRecompute(const ScalarExpr& e) {
  switch (e->op) {
    case ScalarOp::kExp:
    case ScalarOp::kFastExp:
    case ScalarOp::kLog:
    case ScalarOp::kSqrt:
    case ScalarOp::kRsqrt:
    case ScalarOp::kTanh:
    case ScalarOp::kFastTanh:
    case ScalarOp::kSigmoid:
    case ScalarOp::kErf:
    case ScalarOp::kDiv:
    case ScalarOp::kPow:
      return false;
    default:
      break;
  }
  for (const auto& o : e->operands)
    if (!IsCheapToRecompute(o)) return false;
  return true;
}

const char* ScalarOpName(ScalarOp op) {
  switch (op) {
    case ScalarOp::kConst:
      return "const";
    case ScalarOp::kArg:
      return "arg";
    case ScalarOp::kNeg:
      return "neg";
    case ScalarOp::kAbs:
      return "abs";
    case ScalarOp::kExp:
      return "exp";
    case ScalarOp::kFastExp:
      return "fast_exp";
    case ScalarOp::kLog:
      return "log";
    case ScalarOp::kSqrt:
      return "sqrt";
    case ScalarOp::kRsqrt:
      return "rsqrt";
    case ScalarOp::kTanh:
      return "tanh";
    case ScalarOp::kFastTanh:
      return "fast_tanh";
    case ScalarOp::kSigmoid:
      return "sigmoid";
    case ScalarOp::kErf:
      return "erf";
    case ScalarOp::kCast:
      return "cast";
    case ScalarOp::kAdd:
      return "add";
    case ScalarOp::kSub:
      return "sub";
    case ScalarOp::kMul:
      return "mul";
    case ScalarOp::kDiv:
      return "div";
    case ScalarOp::kPow:
      return "pow";
    case ScalarOp::kMax:
      return "max";
    case ScalarOp::kMin:
      return "min";
    case ScalarOp::kLt:
      return "lt";
    case ScalarOp::kLe:
      return "le";
    case ScalarOp::kGt:
      return "gt";
    case ScalarOp::kGe:
      return "ge";
    case ScalarOp::kEq:
      return "eq";
    case ScalarOp::kNe:
      return "ne";
    case ScalarOp::kSelect:
      return "select";
  }
  return "?";
}

}  // namespace fusetune
