#pragma once
// Budget pruning: which candidate groups a --budget leaves unmeasured. A pure function of what the
// measurement planning knows (server/measurement_planning.h), so its rule is tested on its own.
#include <set>
#include <string>
#include <vector>

namespace fusetune {

// One candidate group of a region, as the budget sees it.
struct BudgetCandidate {
  std::string signature;  // the group's; equal groups in several regions share it
  double benefit = 0;     // the cost model's estimate of what fusing saves (µs): higher goes first
  int unmeasured = 0;     // schedules with no measurement yet: what measuring it costs
  bool baseline = false;  // a single op or a greedy group: always measured
};

struct BudgetDecision {
  std::set<std::string> pruned;        // signatures left unmeasured
  std::vector<int> pruned_per_region;  // unmeasured schedules of each region's pruned groups
  int pruned_total = 0;                // unmeasured schedules of the pruned groups, each once
};

// Per region (in order), beyond its baselines, the groups the cost model expects to gain most are
// kept while their unmeasured schedules fit in `budget` (0: no limit); ties go to the smaller
// signature. A group with every schedule measured costs nothing and is always kept. A group is
// pruned only if no region keeps it: one that an earlier region keeps costs later regions
// nothing, and a baseline of any region is never pruned.
BudgetDecision PruneToBudget(const std::vector<std::vector<BudgetCandidate>>& regions, int budget);

}  // namespace fusetune
