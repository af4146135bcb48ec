#pragma once
// The roofline cost model: a group takes at least its flops over the target's peak and at least
// its bytes moved over the target's bandwidth. It never replaces a measurement; it orders the
// measurements and decides which to skip when a region has more candidates than the budget.
#include "ir/fusion.h"
#include "ir/graph.h"

namespace fusetune {

struct RooflineTarget {
  double peak_gflops = 100.0;   // measured once per target (threads included)
  double bandwidth_gbs = 20.0;  // measured once per target
};

struct GroupCost {
  double flops = 0;
  double bytes = 0;  // kernel inputs read once + outputs written once
  double estimate_us = 0;
};

GroupCost EstimateGroup(const Graph& graph, const FusedGroup& group, const RooflineTarget& target);

}  // namespace fusetune
