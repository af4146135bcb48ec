#include "worker/output_check.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "ir/error.h"

namespace fusetune {
namespace {

constexpr double kRelativeTolerance = 1e-4;
constexpr double kAbsoluteTolerance = 1e-5;

}  // namespace

double AllowedError(const Tensor& want) {
  double magnitude = 0;
  for (int64_t i = 0; i < want.size(); ++i)
    if (std::isfinite(want.Get(i))) magnitude = std::max(magnitude, std::fabs(want.Get(i)));
  return kAbsoluteTolerance + kRelativeTolerance * magnitude;
}

OutputComparison CompareOutputs(std::span<const Tensor> got, std::span<const Tensor> want) {
  if (got.size() != want.size())
    throw UserError(fmt::format("{} outputs, the reference has {}", got.size(), want.size()));
  OutputComparison c;
  for (size_t o = 0; o < got.size(); ++o) {
    if (got[o].type() != want[o].type()) {
      throw UserError(fmt::format("output {} is {}, the reference's is {}", o,
                                  got[o].type().ToString(), want[o].type().ToString()));
    }
    const double error = MaxAbsDifference(got[o], want[o]);  // a NaN against a number: +inf
    c.max_abs_error = std::max(c.max_abs_error, error);
    const double allowed = AllowedError(want[o]);
    if (c.ok() && !(error <= allowed)) {
      c.wrong_output = static_cast<int>(o);
      c.wrong_error = error;
      c.allowed = allowed;
    }
  }
  return c;
}

}  // namespace fusetune
