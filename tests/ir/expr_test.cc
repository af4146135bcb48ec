// Scalar and index expressions: construction folds constants and identities; evaluation.
#include <cmath>

#include <gtest/gtest.h>

#include "ir/index_expr.h"
#include "ir/scalar_expr.h"

namespace fusetune {
namespace {

TEST(ScalarExpr, FoldsConstants) {
  ScalarExpr e = sx::Binary(ScalarOp::kAdd, sx::Const(2), sx::Const(3));
  ASSERT_EQ(e->op, ScalarOp::kConst);
  EXPECT_EQ(e->value, 5.0);
  ScalarExpr u = sx::Unary(ScalarOp::kExp, sx::Const(0));
  ASSERT_EQ(u->op, ScalarOp::kConst);
  EXPECT_EQ(u->value, 1.0);
  // Constant condition picks a branch.
  ScalarExpr x = sx::Arg(0, DType::kFloat32);
  EXPECT_EQ(sx::Select(sx::Const(1, DType::kBool), x, sx::Const(7)), x);
  EXPECT_EQ(sx::Select(sx::Const(0, DType::kBool), sx::Const(7), x), x);
  // Float32 constants are stored as float32 values.
  EXPECT_EQ(sx::Const(0.1)->value, static_cast<double>(0.1f));
  EXPECT_EQ(sx::Const(2.7, DType::kInt32)->value, 2.0);
}

TEST(ScalarExpr, EvaluatesAndSubstitutes) {
  ScalarExpr x = sx::Arg(0, DType::kFloat32), y = sx::Arg(1, DType::kFloat32);
  ScalarExpr e = sx::Binary(ScalarOp::kMul, sx::Unary(ScalarOp::kNeg, x), y);
  double args[] = {3.0, 4.0};
  EXPECT_EQ(EvalScalar(e, args), -12.0);
  EXPECT_EQ(CountScalarFlops(e), 2);
  // Inline: x := exp(arg0), y := 2
  ScalarExpr repl[] = {sx::Unary(ScalarOp::kExp, sx::Arg(0, DType::kFloat32)), sx::Const(2)};
  ScalarExpr s = sx::Substitute(e, repl);
  double a2[] = {0.0};
  EXPECT_EQ(EvalScalar(s, a2), -2.0);
  // Comparisons are bool.
  EXPECT_EQ(sx::Binary(ScalarOp::kLt, x, y)->dtype, DType::kBool);
  // Integer division truncates toward zero.
  ScalarExpr d = sx::Binary(ScalarOp::kDiv, sx::Arg(0, DType::kInt32), sx::Arg(1, DType::kInt32));
  double a3[] = {-7.0, 2.0};
  EXPECT_EQ(EvalScalar(d, a3), -3.0);
  // Cast to int32 truncates, to bool tests non-zero.
  double a4[] = {-2.75};
  EXPECT_EQ(EvalScalar(sx::Cast(x, DType::kInt32), a4), -2.0);
  EXPECT_EQ(EvalScalar(sx::Cast(x, DType::kBool), a4), 1.0);
  EXPECT_EQ(sx::Cast(x, DType::kFloat32), x);  // no-op cast disappears
}

TEST(IndexExpr, FoldsIdentities) {
  IndexExpr i = ix::Var(0);
  EXPECT_EQ(ix::Add(i, ix::Const(0)), i);
  EXPECT_EQ(ix::Add(ix::Const(0), i), i);
  EXPECT_EQ(ix::Mul(i, ix::Const(1)), i);
  EXPECT_EQ(ix::FloorDiv(i, ix::Const(1)), i);
  IndexExpr zero = ix::Mul(i, ix::Const(0));
  ASSERT_EQ(zero->op, IndexOp::kConst);
  EXPECT_EQ(zero->value, 0);
  IndexExpr m = ix::Mod(i, ix::Const(1));
  ASSERT_EQ(m->op, IndexOp::kConst);
  EXPECT_EQ(m->value, 0);
  IndexExpr c = ix::Add(ix::Add(i, ix::Const(3)), ix::Const(4));
  EXPECT_EQ(FormatIndex(c), "(i0 + 7)");
  EXPECT_EQ(ix::FloorDiv(ix::Const(-7), ix::Const(2))->value, -4);
  EXPECT_EQ(ix::Mod(ix::Const(-7), ix::Const(2))->value, 1);
}

TEST(IndexExpr, EvaluatesAndSubstitutes) {
  IndexExpr flat = ix::Add(ix::Mul(ix::Var(0), ix::Const(4)), ix::Var(1));
  int64_t coords[] = {2, 3};
  EXPECT_EQ(EvalIndex(flat, coords), 11);
  EXPECT_EQ(EvalIndex(ix::Mod(flat, ix::Const(5)), coords), 1);
  EXPECT_EQ(EvalIndex(ix::FloorDiv(flat, ix::Const(5)), coords), 2);
  IndexExpr vars[] = {ix::Var(1), ix::Const(1)};
  IndexExpr s = ix::Substitute(flat, vars);  // i1*4 + 1
  int64_t c2[] = {0, 5};
  EXPECT_EQ(EvalIndex(s, c2), 21);
}

}  // namespace
}  // namespace fusetune
