#pragma once
// What a plan does that the rules do not: its groups and schedules against TVM's greedy grouping
// on default schedules over the same nodes. A tune's report names these as what won where.
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/plan.h"

namespace fusetune {

struct PlanChange {
  std::vector<ValueId> nodes;  // the plan's group
  // Why the group is not greedy's: "attention kernel" (attention as one kernel), "softmax row
  // kernel", "layer norm row kernel" and "RMS norm row kernel" (one written op by op as one kernel,
  // ir/norm_pattern.h), "horizontal
  // GEMM" (sibling matmuls as one), "layer norm folded" (a norm in its matmul's packing),
  // "matmul prologue" (a producer of a matmul's operand in its kernel: the head merge before an
  // out projection), "no fusion" (a group of one op that greedy fuses), "other grouping" (any
  // other group greedy does not form); "" when greedy has this group.
  std::string fusion;
  std::string schedule;       // the group's knobs when they are not its template's default, else ""
  std::string knobs_changed;  // only the knobs that differ from the default, "wpack=1"
};

// The plan's groups that differ from `greedy` (groups of the same nodes, any order) in grouping
// or in schedule; a group equal to greedy's on its default schedule is left out. `threads` picks
// the default schedule (ir/schedule_space.h).
std::vector<PlanChange> ChangesFromGreedy(const Graph& graph, const std::vector<PlanGroup>& plan,
                                          const std::vector<PlanGroup>& greedy, int threads);

// "schedule wpack=1 [%32 %33]; horizontal GEMM [%1 %2 %3]" (schedules by their changed knobs).
std::string DescribeChanges(const Graph& graph, const std::vector<PlanChange>& changes);

}  // namespace fusetune
