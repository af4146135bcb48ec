#pragma once
#include <string>
#include <vector>

#include "ir/fusion.h"
#include "ir/graph.h"
#include "server/request_policy.h"

namespace fusetune {

// A connected node set the enumeration met and the request's policy refused, with the reason.
struct RefusedGroup {
  std::vector<ValueId> nodes;  // ascending
  std::string why;
};

// Every group of the policy's graph that may be one kernel for the request
// (RequestPolicy::OneKernel: lowerable by the code generator through ir/fusion.h's AnalyzeGroup,
// connected and convex, within the request's size and argument limits, no never-fuse node, not
// forbidden). Every op node appears as a single-node group too, so the unfused plan is always in
// the space. Ordered by (size, nodes). With `refused`, the connected sets that were met and
// refused are listed there with the policy's reason (sets never met, because they would extend a
// pinned node or hold two anchors, are not). Unless the request turns them off, horizontal groups
// (sibling matmuls that read the same A, ir/fusion.h) are candidates too: they connect nodes that
// no edge joins, so a region holds all the siblings of each.
std::vector<FusedGroup> EnumerateCandidateGroups(const RequestPolicy& policy,
                                                 std::vector<RefusedGroup>* refused = nullptr);

}  // namespace fusetune
