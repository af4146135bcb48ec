// One comparison for `fusetune run` and measurement jobs: a NaN or an infinity where the reference
// has a number is an infinite error and a wrong output; NaNs in the same place and equal
// infinities are equal; the tolerance scales with the reference's magnitude.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "ir/error.h"
#include "worker/output_check.h"

namespace fusetune {
namespace {

Tensor Floats(std::vector<double> values) {
  Tensor t(TensorType{DType::kFloat32, {static_cast<int64_t>(values.size())}});
  for (size_t i = 0; i < values.size(); ++i) t.Set(static_cast<int64_t>(i), values[i]);
  return t;
}

std::vector<Tensor> Outputs(Tensor one) { return {std::move(one)}; }

TEST(OutputCheck, NanWhereTheReferenceHasANumberIsWrong) {
  // The NaN comes after a small honest difference: an error that kept the larger of the two
  // with std::max would drop the NaN and report 0.5.
  std::vector<Tensor> got = {Floats({1.5, NAN, 3.0})};
  std::vector<Tensor> want = {Floats({1.0, 2.0, 3.0})};
  OutputComparison c = CompareOutputs(got, want);
  EXPECT_TRUE(std::isinf(c.max_abs_error)) << c.max_abs_error;
  EXPECT_FALSE(c.ok());
  EXPECT_EQ(c.wrong_output, 0);
}

TEST(OutputCheck, NanInTheSecondOutputIsFound) {
  std::vector<Tensor> got = {Floats({1.0}), Floats({NAN, 1.0})};
  std::vector<Tensor> want = {Floats({1.0}), Floats({0.0, 1.0})};
  OutputComparison c = CompareOutputs(got, want);
  EXPECT_TRUE(std::isinf(c.max_abs_error));
  EXPECT_EQ(c.wrong_output, 1);
}

TEST(OutputCheck, InfinityWhereTheReferenceIsFiniteIsWrong) {
  std::vector<Tensor> got = {Floats({INFINITY, 0.0})};
  std::vector<Tensor> want = {Floats({1.0, 0.0})};
  EXPECT_FALSE(CompareOutputs(got, want).ok());
}

TEST(OutputCheck, SameNansAndInfinitiesAreEqual) {
  std::vector<Tensor> got = {Floats({NAN, INFINITY, -INFINITY, 2.0})};
  std::vector<Tensor> want = {Floats({NAN, INFINITY, -INFINITY, 2.0})};
  OutputComparison c = CompareOutputs(got, want);
  EXPECT_EQ(c.max_abs_error, 0.0);
  EXPECT_TRUE(c.ok());
}

TEST(OutputCheck, ReportsTheReferencesLargestFiniteMagnitudeOverEveryOutput) {
  std::vector<Tensor> got = {Floats({1.0, -3.0}), Floats({2.0, INFINITY})};
  std::vector<Tensor> want = {Floats({1.0, -4.0}), Floats({2.0, INFINITY})};
  OutputComparison c = CompareOutputs(got, want);
  EXPECT_EQ(c.max_magnitude, 4.0);  // |-4| of the first output; the infinity does not count
  EXPECT_EQ(c.max_abs_error, 1.0);
}

TEST(OutputCheck, ToleranceScalesWithTheReference) {
  // 1e-4 of the largest finite magnitude (1000 -> 0.1) plus 1e-5.
  std::vector<Tensor> want = {Floats({1000.0, 0.0, INFINITY})};
  EXPECT_NEAR(AllowedError(want[0]), 0.1 + 1e-5, 1e-9);
  std::vector<Tensor> close = {Floats({1000.0, 0.05, INFINITY})};
  std::vector<Tensor> far = {Floats({1000.0, 0.2, INFINITY})};
  EXPECT_TRUE(CompareOutputs(close, want).ok());
  OutputComparison c = CompareOutputs(far, want);
  EXPECT_FALSE(c.ok());
  EXPECT_NEAR(c.wrong_error, 0.2, 1e-6);
}

TEST(OutputCheck, LargeOutputsGiveTheExactLargestDifference) {
  // The float32 pass without branches (no NaN difference) against the element-by-element rule.
  Tensor want = Tensor::Random(TensorType{DType::kFloat32, {100003}}, 3);
  Tensor got = Tensor::Random(TensorType{DType::kFloat32, {100003}}, 3);
  for (int64_t i = 0; i < got.size(); i += 7) got.Set(i, got.Get(i) * (1 + 1e-6));
  got.Set(54321, want.Get(54321) + 0.015625);
  double max_abs = 0, max_magnitude = 0;
  for (int64_t i = 0; i < want.size(); ++i) {
    max_abs = std::max(max_abs, std::fabs(got.Get(i) - want.Get(i)));
    max_magnitude = std::max(max_magnitude, std::fabs(want.Get(i)));
  }
  std::vector<Tensor> gots = {got}, wants = {want};
  OutputComparison c = CompareOutputs(gots, wants);
  EXPECT_EQ(c.max_abs_error, max_abs);
  EXPECT_FALSE(c.ok());
  EXPECT_EQ(c.wrong_error, max_abs);
  EXPECT_EQ(c.allowed, AllowedError(want));
  EXPECT_EQ(AllowedError(want), 1e-5 + 1e-4 * max_magnitude);
  // Equal infinities (a NaN difference in that pass) leave the rest of the output's figures.
  want.Set(9, INFINITY);
  got.Set(9, INFINITY);
  gots = {got};
  wants = {want};
  EXPECT_EQ(CompareOutputs(gots, wants).max_abs_error, max_abs);
}

TEST(OutputCheck, DifferentCountsOrTypesAreErrors) {
  std::vector<Tensor> one = {Floats({1.0})};
  std::vector<Tensor> two = {Floats({1.0}), Floats({1.0})};
  std::vector<Tensor> longer = {Floats({1.0, 2.0})};
  EXPECT_THROW(CompareOutputs(one, two), UserError);
  EXPECT_THROW(CompareOutputs(one, longer), UserError);
}

TEST(OutputCheck, TheReferencesRoundingSpreadWidensTheTolerance) {
  // Magnitude 1: 1e-4 of it (and 1e-5) allows 1.1e-4.
  std::vector<Tensor> want = {Floats({1.0, -0.5})};
  std::vector<Tensor> got = {Floats({1.0 + 5e-4, -0.5})};
  EXPECT_FALSE(CompareOutputs(got, want).ok());
  // A reference 1e-4 from itself when its rounding moves: 10 times that is allowed.
  const std::vector<double> spread = {1e-4};
  OutputComparison c = CompareOutputs(got, want, spread);
  EXPECT_TRUE(c.ok());
  EXPECT_TRUE(c.within_spread);
  EXPECT_NEAR(c.max_abs_error, 5e-4, 1e-7);
  // Past 10 times the spread: wrong, naming the widened tolerance.
  std::vector<Tensor> far = {Floats({1.0 + 2e-3, -0.5})};
  c = CompareOutputs(far, want, spread);
  EXPECT_FALSE(c.ok());
  EXPECT_NEAR(c.allowed, 1e-3, 1e-9);
  // Never past 1% of the magnitude, however wide the spread.
  const std::vector<double> huge = {1.0};
  EXPECT_TRUE(CompareOutputs(Outputs(Floats({1.009, -0.5})), want, huge).ok());
  EXPECT_FALSE(CompareOutputs(Outputs(Floats({1.02, -0.5})), want, huge).ok());
  // A spread below the plain tolerance changes nothing.
  const std::vector<double> tiny = {1e-9};
  EXPECT_TRUE(CompareOutputs(Outputs(Floats({1.0 + 1e-4, -0.5})), want, tiny).ok());
  EXPECT_FALSE(CompareOutputs(Outputs(Floats({1.0 + 1e-4, -0.5})), want, tiny).within_spread);
}

TEST(OutputCheck, TheSpreadIsComputedOnlyWhenItCouldDecide) {
  std::vector<Tensor> want = {Floats({1.0, 2.0})};
  int asked = 0;
  auto spread = [&] {
    ++asked;
    return std::vector<double>{1e-4};
  };
  EXPECT_TRUE(CheckOutputs(Outputs(Floats({1.0, 2.0 + 1e-4})), want, spread).ok());
  EXPECT_EQ(asked, 0) << "within the plain tolerance";
  // A wrong kernel is off by the magnitude: past what any spread allows, not worth a reference.
  EXPECT_FALSE(CheckOutputs(Outputs(Floats({1.0, 3.0})), want, spread).ok());
  EXPECT_FALSE(CheckOutputs(Outputs(Floats({NAN, 2.0})), want, spread).ok());
  EXPECT_EQ(asked, 0) << "past 1% of the magnitude, or not a number";
  OutputComparison c = CheckOutputs(Outputs(Floats({1.0, 2.0 + 8e-4})), want, spread);
  EXPECT_EQ(asked, 1);
  EXPECT_TRUE(c.ok());
  EXPECT_TRUE(c.within_spread);
  EXPECT_EQ(RoundingSpread(Outputs(Floats({1.5, 2.0})), want), std::vector<double>{0.5});
}

}  // namespace
}  // namespace fusetune
