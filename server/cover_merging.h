#pragma once
// Fewer kernels within the noise: a cover's groups merged where a candidate is their union.
//
// The partition DP sums per-group figures, each timed alone and unpaired, so a big kernel's noise
// (3%) hides what a small one costs. BERT's FFN 1 with its GELU measured 5,402 µs; the same group
// with the GELU's trailing multiply by 0.5 measured 5,607 µs, so the DP kept the multiply as a
// kernel of its own (70 µs): one more write and read of [S, 3072]. Re-timed in one process the two
// dense kernels ran alike (5,412 and 5,438 µs) and the merged plan was 0.2-0.8 ms faster.
// Two covers whose sums differ by less than that noise are not told apart by these figures, and
// the one with fewer kernels saves traffic between kernels that groups timed alone do not show;
// whole-plan validation then judges the result against the baselines as before.
#include <vector>

#include "server/partition_search.h"

namespace fusetune {

// Starting from `best` (a cover of FindBestPartition over `candidates`), repeatedly replaces two
// or more of its groups by the candidate that is exactly their union, the replacement that raises
// the cost least first, while the cover's cost stays within `floor` (relative) of `best`'s: an
// attention kernel replaces the two products and the softmax chain between them at once, which
// no pair of them could. Groups that recompute a value are never merged (their readers must
// recompute it too). The returned groups are not in execution order; the caller sorts the plan.
Partition MergeWithinNoise(const std::vector<CostedGroup>& candidates, const Partition& best,
                           double floor);

}  // namespace fusetune
