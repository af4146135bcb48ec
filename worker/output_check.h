#pragma once
// How outputs are judged against the reference interpreter's, in one place for `fusetune run` and
// for measurement jobs. A NaN or an infinity where the reference has a number makes the error
// infinite (never dropped); NaNs in the same place, and equal infinities, count as equal.
#include <functional>
#include <span>
#include <vector>

#include "ir/tensor.h"

namespace fusetune {

struct OutputComparison {
  double max_abs_error = 0;  // over every output
  double max_magnitude = 0;  // the reference's largest finite |value| over every output
  int wrong_output = -1;     // the first output past its tolerance; -1 when all are within
  double wrong_error = 0;    // that output's error
  double allowed = 0;        // and its tolerance
  // Some output was within its tolerance only by the graph's own rounding spread (below).
  bool within_spread = false;
  bool ok() const { return wrong_output < 0; }
};

// Throws UserError when the counts or types of the outputs differ. `spread`, when given, is the
// reference's rounding spread per output (RoundingSpread); see CheckOutputs.
OutputComparison CompareOutputs(std::span<const Tensor> got, std::span<const Tensor> want,
                                std::span<const double> spread = {});

// How far each output of the reference evaluated again with its rounding perturbed
// (ir/interpreter.h InterpretPerturbed) lies from the reference.
std::vector<double> RoundingSpread(std::span<const Tensor> perturbed, std::span<const Tensor> want);

// CompareOutputs; when an output is past its tolerance, again with `spread()`, called only then
// (it costs a second evaluation of the reference). A deep graph amplifies float32 rounding:
// 12 GPT-2 blocks with random weights put every honest plan, greedy's and unfused ones too, 1e-3
// from the reference where 1e-4 of the output's magnitude allows 4e-4, and a reference whose
// every value moved by one ulp lies 5.6e-4 from it. So an output may also differ by up to
// 10 times that spread (PyTorch Inductor's accuracy check likewise scales its tolerance by
// eager float32's own error), but never by more than 1% of its magnitude: a wrong kernel
// (an index, a broadcast, a missed term) is off by the magnitude itself.
OutputComparison CheckOutputs(std::span<const Tensor> got, std::span<const Tensor> want,
                              const std::function<std::vector<double>()>& spread);

// The error allowed for an output whose reference is `want`: float32 kernels differ from exact
// (double) evaluation by rounding and by the polynomial math functions (relative errors below
// 1e-6), so 1e-4 of the output's largest finite magnitude, plus a tiny absolute floor, separates
// honest rounding from a wrong kernel by orders of magnitude.
double AllowedError(const Tensor& want);

}  // namespace fusetune
