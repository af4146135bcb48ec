#pragma once
#include <limits>
#include <vector>

#include "ir/graph.h"

namespace fusetune {

struct CostedGroup {
  std::vector<ValueId> nodes;                             // ascending, all inside the region
  double cost = std::numeric_limits<double>::infinity();  // µs; infinity = invalid / unmeasured
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

// The exact cover of `region` (ascending node ids, at most 64) by candidates with the least summed
// cost whose groups can run in some order (each group's inputs from the region produced by earlier
// groups). Ties go to fewer groups, then to the smaller candidate index, so the answer is
// deterministic.
Partition FindBestPartition(const Graph& graph, const std::vector<ValueId>& region,
                            const std::vector<CostedGroup>& candidates);
// The same best cover, with the runner-up (what the best won against, for the debug log).
RankedPartitions FindBestPartitions(const Graph& graph, const std::vector<ValueId>& region,
                                    const std::vector<CostedGroup>& candidates);

}  // namespace fusetune
