#pragma once
// The greedy baseline: TVM's fusion rules (ir/plan.h's GreedyPlan) under this request's controls.
// Pinned nodes count as opaque, and a greedy group the request refuses (RequestPolicy::OneKernel)
// runs unfused, so the baseline a plan is compared with honours the request as the plan does.
#include "ir/plan.h"
#include "ir/subgraph.h"
#include "server/request_policy.h"

namespace fusetune {

// Over the policy's whole graph.
Plan GreedyBaseline(const RequestPolicy& policy);
// Over a region extracted from the policy's graph, in the region's ids.
Plan GreedyBaseline(const RequestPolicy& policy, const Subgraph& region);

}  // namespace fusetune
