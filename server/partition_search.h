#pragma once
#include <limits>
#include <vector>

#include "ir/graph.h"

namespace fusetune {

struct CostedGroup {
  std::vector<ValueId> nodes;                             // ascending, all inside the region
  double cost = std::numeric_limits<double>::infinity();  // µs; infinity = invalid / unmeasured
  std::vector<ValueId> recompute;  // members computed but not stored (ir/fusion.h), ascending
};

struct Partition {
  std::vector<size_t> groups;  // indices into the candidates, in a valid execution order
  double cost = std::numeric_limits<double>::infinity();
  bool found() const { return cost < std::numeric_limits<double>::infinity(); }
};

// The best and the second-best cover: the runner-up is the cheapest cover whose set of groups
// differs from the best's (not the same groups in another order). Either may be not found.
struct RankedPartitions {
  Partition best;
  Partition runner_up;
};

// The cover of `region` (ascending node ids, at most 64) by candidates with the least summed cost
// whose groups can run in some order (each group's inputs from the region produced by earlier
// groups). Each node is stored by exactly one group, or by none when it is recomputed: then every
// group reading it recomputes it (holds it in `recompute`), and nothing outside the region reads
// it. Ties go to fewer groups, then to the smaller candidate index, so the answer is
// deterministic.
Partition FindBestPartition(const Graph& graph, const std::vector<ValueId>& region,
                            const std::vector<CostedGroup>& candidates);
// The same best cover, with the runner-up (what the best won against, for the debug log).
RankedPartitions FindBestPartitions(const Graph& graph, const std::vector<ValueId>& region,
                                    const std::vector<CostedGroup>& candidates);

}  // namespace fusetune
