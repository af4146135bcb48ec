#pragma once
#include <vector>

#include "ir/fusion.h"
#include "ir/graph.h"
#include "server/search_options.h"

namespace fusetune {

// Every group the code generator can lower (ir/fusion.h's AnalyzeGroup, the same function the
// code generator uses), connected and convex, of at most options.max_group_size ops, honouring
// the request's never-fuse and forbidden-group controls and the kernel-argument limit. Every op
// node appears as a single-node group too, so the unfused plan is always in the space. Ordered by
// (size, nodes).
std::vector<FusedGroup> EnumerateCandidateGroups(const Graph& graph, const SearchOptions& options);

}  // namespace fusetune
