#pragma once
// The roofline cost model: a group takes at least its flops over the target's peak and at least
// its bytes moved over the target's bandwidth. It never replaces a measurement; it orders the
// measurements and decides which to skip when a region has more candidates than the budget.
#include "ir/fusion.h"
#include "ir/graph.h"

namespace fusetune {

struct RooflineTarget {
  // Measured once per target fingerprint, at the thread count of the first tune that needed them
  // (the store keys targets by fingerprint alone, so other thread counts reuse those figures).
  double peak_gflops = 100.0;
  double bandwidth_gbs = 20.0;
};

struct GroupCost {
  double flops = 0;
  double bytes = 0;  // kernel inputs read once + outputs written once
  double estimate_us = 0;
};

GroupCost EstimateGroup(const Graph& graph, const FusedGroup& group, const RooflineTarget& target);

}  // namespace fusetune
