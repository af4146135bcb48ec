#pragma once
// The roofline cost model: a group takes at least its flops over the target's peak and at least
// its bytes moved over the target's bandwidth. It never replaces a measurement; it orders the
// measurements and decides which to skip when a region has more candidates than the budget.
//
// EstimateSchedule refines the group's roofline for one schedule of its template, so a group's
// schedule space can be ranked before any of it is measured (server/schedule_model.h):
//   matmul     the peak scaled by the register tile's use at the edges (m % mr, n % nr), the
//              micro-kernel's FMAs per load and independent accumulators, the k block's setup,
//              and the balance of its tasks over the threads; the bytes of packing B once per m
//              block, reading A once per n block and the partial sums of k blocks
//   generic    the peak scaled by the vector width and its masked tail on the row, accumulation
//              chains for reductions; serial against parallel at the thread count, with the
//              pool's hand-off; untiled transposes read more lines
#include "ir/fusion.h"
#include "ir/graph.h"
#include "ir/plan.h"

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

// The estimated time (µs) of `group` under `schedule` at `threads` threads; infinity for a
// schedule its template would refuse. Only its order among one group's schedules is meaningful.
double EstimateSchedule(const Graph& graph, const FusedGroup& group, const Schedule& schedule,
                        const RooflineTarget& target, int threads);

}  // namespace fusetune
