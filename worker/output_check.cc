#include "worker/output_check.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "ir/error.h"

namespace fusetune {
namespace {

constexpr double kRelativeTolerance = 1e-4;
constexpr double kAbsoluteTolerance = 1e-5;

struct Difference {
  double max_abs = 0;        // as ir/tensor.h MaxAbsDifference: a NaN against a number is +inf
  double max_magnitude = 0;  // of `want`'s finite elements
};

// One pass over two float32 outputs (the common case, and large ones: a check must not cost
// what a timing does); element by element through Tensor::Get otherwise.
Difference Compare(const Tensor& got, const Tensor& want) {
  Difference d;
  auto visit = [&](double x, double y) {
    if (std::isfinite(y)) d.max_magnitude = std::max(d.max_magnitude, std::fabs(y));
    if (x == y || (std::isnan(x) && std::isnan(y))) return;  // equal, equal infinities, both NaN
    const double diff = std::fabs(x - y);
    d.max_abs = std::isnan(diff) ? INFINITY : std::max(d.max_abs, diff);
  };
  const int64_t n = want.size();
  if (want.dtype() == DType::kFloat32) {
    const float* a = got.as<float>();
    const float* b = want.as<float>();
    for (int64_t i = 0; i < n; ++i) visit(a[i], b[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) visit(got.Get(i), want.Get(i));
  }
  return d;
}

double Allowed(double max_magnitude) {
  return kAbsoluteTolerance + kRelativeTolerance * max_magnitude;
}

}  // namespace

double AllowedError(const Tensor& want) { return Allowed(Compare(want, want).max_magnitude); }

OutputComparison CompareOutputs(std::span<const Tensor> got, std::span<const Tensor> want) {
  if (got.size() != want.size())
    throw UserError(fmt::format("{} outputs, the reference has {}", got.size(), want.size()));
  OutputComparison c;
  for (size_t o = 0; o < got.size(); ++o) {
    if (got[o].type() != want[o].type()) {
      throw UserError(fmt::format("output {} is {}, the reference's is {}", o,
                                  got[o].type().ToString(), want[o].type().ToString()));
    }
    const Difference d = Compare(got[o], want[o]);
    c.max_abs_error = std::max(c.max_abs_error, d.max_abs);
    const double allowed = Allowed(d.max_magnitude);
    if (c.ok() && !(d.max_abs <= allowed)) {
      c.wrong_output = static_cast<int>(o);
      c.wrong_error = d.max_abs;
      c.allowed = allowed;
    }
  }
  return c;
}

}  // namespace fusetune
