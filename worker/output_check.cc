#include "worker/output_check.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "ir/error.h"

namespace fusetune {
namespace {

constexpr double kRelativeTolerance = 1e-4;
constexpr double kAbsoluteTolerance = 1e-5;
// CheckOutputs: how many times the reference's own rounding spread an output may differ by, and
// the most of its magnitude that may ever be.
constexpr double kSpreadFactor = 10;
constexpr double kMaxRelativeTolerance = 1e-2;

struct Difference {
  double max_abs = 0;        // as ir/tensor.h MaxAbsDifference: a NaN against a number is +inf
  double max_magnitude = 0;  // of `want`'s finite elements
};

// Two float32 outputs without a NaN among their differences (every honest kernel's): the same
// figures as the exact loop below, in a loop without branches (a seed output at S=384 has 1.8 M
// elements, and the exact loop's tests per element took ~11 ms of each plan's check). Where
// x == y the difference is 0, which leaves the maximum as skipping it does; |y| < inf is
// isfinite(y), false for a NaN. nullopt when some difference is NaN (a NaN in either, or equal
// infinities): then the exact loop decides.
std::optional<Difference> CompareFloats(const float* got, const float* want, int64_t n) {
  double max_abs = 0, max_magnitude = 0;
  bool nan = false;
  for (int64_t i = 0; i < n; ++i) {
    const double x = got[i], y = want[i];
    const double diff = std::fabs(x - y), magnitude = std::fabs(y);
    nan |= diff != diff;
    max_abs = diff > max_abs ? diff : max_abs;
    max_magnitude = magnitude < INFINITY && magnitude > max_magnitude ? magnitude : max_magnitude;
  }
  if (nan) return std::nullopt;
  return Difference{max_abs, max_magnitude};
}

// One pass over two outputs, element by element through Tensor::Get unless both are float32
// without a NaN difference (CompareFloats).
Difference Compare(const Tensor& got, const Tensor& want) {
  const int64_t n = want.size();
  if (want.dtype() == DType::kFloat32)
    if (std::optional<Difference> d = CompareFloats(got.as<float>(), want.as<float>(), n))
      return *d;
  Difference d;
  auto visit = [&](double x, double y) {
    if (std::isfinite(y)) d.max_magnitude = std::max(d.max_magnitude, std::fabs(y));
    if (x == y || (std::isnan(x) && std::isnan(y))) return;  // equal, equal infinities, both NaN
    const double diff = std::fabs(x - y);
    d.max_abs = std::isnan(diff) ? INFINITY : std::max(d.max_abs, diff);
  };
  for (int64_t i = 0; i < n; ++i) visit(got.Get(i), want.Get(i));
  return d;
}

double Allowed(double max_magnitude) {
  return kAbsoluteTolerance + kRelativeTolerance * max_magnitude;
}

double AllowedWithSpread(double max_magnitude, double spread) {
  return std::max(Allowed(max_magnitude),
                  std::min(kSpreadFactor * spread, kMaxRelativeTolerance * max_magnitude));
}

}  // namespace

double AllowedError(const Tensor& want) { return Allowed(Compare(want, want).max_magnitude); }

OutputComparison CompareOutputs(std::span<const Tensor> got, std::span<const Tensor> want,
                                std::span<const double> spread) {
  if (got.size() != want.size())
    throw UserError(fmt::format("{} outputs, the reference has {}", got.size(), want.size()));
  FT_CHECK(spread.empty() || spread.size() == want.size(),
           "a rounding spread for another number of outputs");
  OutputComparison c;
  for (size_t o = 0; o < got.size(); ++o) {
    if (got[o].type() != want[o].type()) {
      throw UserError(fmt::format("output {} is {}, the reference's is {}", o,
                                  got[o].type().ToString(), want[o].type().ToString()));
    }
    const Difference d = Compare(got[o], want[o]);
    c.max_abs_error = std::max(c.max_abs_error, d.max_abs);
    c.max_magnitude = std::max(c.max_magnitude, d.max_magnitude);
    double allowed = Allowed(d.max_magnitude);
    if (!spread.empty() && !(d.max_abs <= allowed)) {
      allowed = AllowedWithSpread(d.max_magnitude, spread[o]);
      c.within_spread |= d.max_abs <= allowed;
    }
    if (c.ok() && !(d.max_abs <= allowed)) {
      c.wrong_output = static_cast<int>(o);
      c.wrong_error = d.max_abs;
      c.allowed = allowed;
    }
  }
  return c;
}

OutputComparison CheckOutputs(std::span<const Tensor> got, std::span<const Tensor> want,
                              const std::function<std::vector<double>()>& spread) {
  OutputComparison c = CompareOutputs(got, want);
  // Past what any spread could allow (c.allowed is about 1e-4 of the magnitude): wrong as it is.
  const double widest = c.allowed * (kMaxRelativeTolerance / kRelativeTolerance);
  if (c.ok() || !(c.wrong_error <= widest)) return c;
  return CompareOutputs(got, want, spread());
}

std::vector<double> RoundingSpread(std::span<const Tensor> perturbed,
                                   std::span<const Tensor> want) {
  FT_CHECK(perturbed.size() == want.size(), "a perturbed reference with another number of outputs");
  std::vector<double> spread;
  for (size_t o = 0; o < want.size(); ++o) spread.push_back(Compare(perturbed[o], want[o]).max_abs);
  return spread;
}

}  // namespace fusetune
