#pragma once
// How outputs are judged against the reference interpreter's, in one place for `fusetune run` and
// for measurement jobs. A NaN or an infinity where the reference has a number makes the error
// infinite (never dropped); NaNs in the same place, and equal infinities, count as equal.
#include <span>

#include "ir/tensor.h"

namespace fusetune {

struct OutputComparison {
  double max_abs_error = 0;  // over every output
  int wrong_output = -1;     // the first output past its tolerance; -1 when all are within
  double wrong_error = 0;    // that output's error
  double allowed = 0;        // and its tolerance
  bool ok() const { return wrong_output < 0; }
};

// Throws UserError when the counts or types of the outputs differ.
OutputComparison CompareOutputs(std::span<const Tensor> got, std::span<const Tensor> want);

// The error allowed for an output whose reference is `want`: float32 kernels differ from exact
// (double) evaluation by rounding and by the polynomial math functions (relative errors below
// 1e-6), so 1e-4 of the output's largest finite magnitude, plus a tiny absolute floor, separates
// honest rounding from a wrong kernel by orders of magnitude.
double AllowedError(const Tensor& want);

}  // namespace fusetune
