#pragma once
#include <vector>

#include "ir/fusion.h"
#include "ir/graph.h"

namespace fusetune {

// A region: nodes inside which fusion choices interact, with the candidate groups that lie wholly
// inside it.
struct Region {
  std::vector<ValueId> nodes;      // ascending
  std::vector<FusedGroup> groups;  // candidates inside the region, singletons included
};

// Connected components of "some multi-node candidate group holds both nodes", cut into pieces of
// at most `max_nodes` consecutive nodes (in value order) where the cuts separate the fewest bytes
// of values from readers a candidate fuses them with (deterministic: ties go to fewer pieces,
// then later cuts); candidates that a cut splits are dropped. Every op node is in exactly one
// region. Ordered by first node.
std::vector<Region> BuildRegions(const Graph& graph, const std::vector<FusedGroup>& candidates,
                                 int max_nodes);

}  // namespace fusetune
