// The reference interpreter's faster paths give the values of the per-element ones: expressions
// evaluated a row at a time (EvalScalarRow, GenericEval's element-wise ops), random inputs drawn
// straight into float storage.
#include <cmath>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "ir/op.h"
#include "ir/scalar_expr.h"

namespace fusetune {
namespace {

// Equal as stored bits: NaN equals NaN, 0.0 differs from -0.0.
void ExpectSameBits(double got, double want, const std::string& what) {
  EXPECT_EQ(std::memcmp(&got, &want, sizeof got), 0) << what << ": " << got << " vs " << want;
}

TEST(RowEval, EveryOpGivesEvalScalarsValues) {
  const std::vector<double> a = {-2.75, -1,   -0.0,     0,         0.5, 1,
                                 3,     7.25, INFINITY, -INFINITY, NAN, 1e30};
  const std::vector<double> b = {2, -1, 0, -0.0, 3, 0, -2, 7.25, INFINITY, 1, 2, -1e-30};
  const std::vector<double> c = {1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0};
  const int64_t n = static_cast<int64_t>(a.size());
  for (DType dtype : {DType::kFloat32, DType::kInt32}) {
    ScalarExpr x = sx::Arg(0, dtype), y = sx::Arg(1, dtype);
    std::vector<ScalarExpr> exprs;
    for (ScalarOp op :
         {ScalarOp::kNeg, ScalarOp::kAbs, ScalarOp::kExp, ScalarOp::kLog, ScalarOp::kSqrt,
          ScalarOp::kRsqrt, ScalarOp::kTanh, ScalarOp::kSigmoid, ScalarOp::kErf})
      exprs.push_back(sx::Unary(op, x));
    for (ScalarOp op : {ScalarOp::kAdd, ScalarOp::kSub, ScalarOp::kMul, ScalarOp::kDiv,
                        ScalarOp::kPow, ScalarOp::kMax, ScalarOp::kMin, ScalarOp::kLt,
                        ScalarOp::kLe, ScalarOp::kGt, ScalarOp::kGe, ScalarOp::kEq, ScalarOp::kNe})
      exprs.push_back(sx::Binary(op, x, y));
    exprs.push_back(sx::Select(sx::Arg(2, DType::kBool), sx::Unary(ScalarOp::kExp, x),
                               sx::Binary(ScalarOp::kMul, y, sx::Const(3, dtype))));
    exprs.push_back(sx::Cast(sx::Binary(ScalarOp::kAdd, x, y), DType::kInt32));
    exprs.push_back(sx::Cast(x, DType::kBool));
    exprs.push_back(sx::Cast(sx::Arg(0, DType::kInt32), DType::kFloat32));
    exprs.push_back(sx::Const(0.1, dtype));
    const double* rows[] = {a.data(), b.data(), c.data()};
    for (size_t e = 0; e < exprs.size(); ++e) {
      std::vector<double> out(n, -123.0);
      EvalScalarRow(exprs[e], rows, n, out.data());
      for (int64_t j = 0; j < n; ++j) {
        const double args[] = {a[j], b[j], c[j]};
        ExpectSameBits(out[j], EvalScalar(exprs[e], args),
                       "expression " + std::to_string(e) + ", element " + std::to_string(j));
      }
    }
  }
}

Tensor Random(Shape shape, uint64_t seed, DType dtype = DType::kFloat32) {
  return Tensor::Random(TensorType{dtype, std::move(shape)}, seed);
}

// `op` on `inputs` through EvalOp, with its inferred type.
Tensor Apply(const std::string& op, const std::vector<const Tensor*>& inputs) {
  const OpDef* def = FindOp(op);
  Attrs attrs = NormalizeAttrs(*def, {});
  std::vector<TensorType> types;
  for (const Tensor* t : inputs) types.push_back(t->type());
  return EvalOp(*def, inputs, def->infer(types, attrs), attrs);
}

TEST(RowEval, BroadcastElementWiseOpsMatchElementByElement) {
  // Inputs broadcast along the last axis (stride 0) and along outer axes, of three dtypes.
  Tensor cond = Random({4, 1}, 1, DType::kBool), x = Random({1, 5}, 2), y = Random({4, 5}, 3);
  Tensor w = Apply("where", {&cond, &x, &y});
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 5; ++j)
      EXPECT_EQ(w.Get(i * 5 + j), cond.Get(i) != 0 ? x.Get(j) : y.Get(i * 5 + j)) << i << "," << j;

  Tensor a = Random({2, 3, 4}, 4), b = Random({3, 1}, 5);
  Tensor sum = Apply("add", {&a, &b});
  for (int64_t i = 0; i < 2 * 3 * 4; ++i)
    EXPECT_EQ(sum.Get(i), static_cast<double>(static_cast<float>(a.Get(i) + b.Get(i / 4 % 3))))
        << i;

  Tensor p = Random({3, 6}, 6, DType::kInt32), q = Random({6}, 7, DType::kInt32);
  Tensor quotient = Apply("divide", {&p, &q});
  for (int64_t i = 0; i < 18; ++i) {
    const double d = q.Get(i % 6);
    EXPECT_EQ(quotient.Get(i), d == 0 ? 0.0 : std::trunc(p.Get(i) / d)) << i;
  }
}

TEST(RowEval, RandomInputsAreTheSameNumbers) {
  // Tensor::Random as it was, through Set per element: the fast float path draws the same values.
  for (DType dtype : {DType::kFloat32, DType::kInt32, DType::kBool}) {
    for (uint64_t seed : {1u, 7u, 1000003u}) {
      const TensorType type{dtype, {3, 17}};
      Tensor want(type);
      uint64_t state = seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
      for (int64_t i = 0; i < want.size(); ++i) {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        const double unit = static_cast<double>((state * 0x2545F4914F6CDD1Dull) >> 11) * 0x1.0p-53;
        want.Set(i, dtype == DType::kFloat32 ? unit * 2.0 - 1.0
                    : dtype == DType::kInt32 ? std::floor(unit * 16.0) - 8.0
                                             : (unit < 0.5 ? 1.0 : 0.0));
      }
      Tensor got = Tensor::Random(type, seed);
      ASSERT_EQ(std::memcmp(got.data(), want.data(), static_cast<size_t>(type.NumBytes())), 0)
          << DTypeName(dtype) << " seed " << seed;
    }
  }
}

}  // namespace
}  // namespace fusetune
