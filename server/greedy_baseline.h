#pragma once
// The greedy baseline: TVM's fusion rules (ir/plan.h's GreedyPlan) over the whole graph, under this
// request's controls. Pinned nodes count as opaque, and a greedy group the request refuses
// (RequestPolicy::BaselineKernel: a never-fuse node, a forbidden group, or a size/argument limit
// the request narrowed below the default) runs unfused, so the baseline a plan is compared with
// honours the request as the plan does. On a default request it is GreedyPlan exactly, the plan
// `fusetune run --plan greedy` runs: the default limits bound the groups the search enumerates,
// not the rules' groups (GPT-2's MLP is one 11-op greedy kernel, past the default 8).
#include "ir/plan.h"
#include "ir/subgraph.h"
#include "server/request_policy.h"

namespace fusetune {

// Over the policy's whole graph.
Plan GreedyBaseline(const RequestPolicy& policy);

// The whole graph's baseline (`whole`, from the overload above) restricted to a region extracted
// from the policy's graph, in the region's ids: its groups that lie inside the region, as they
// are. Not GreedyPlan run on the region's subgraph: there a node read outside the region is an
// output and could not fuse, and the rules' post-dominators would be the region's, so a region's
// baseline could group differently from the whole graph's. A greedy group that a region cut
// crosses (regions are cut at --max-region nodes) is cut there too: its part inside the region
// is one kernel when the request allows that part as one (RequestPolicy::OneKernel), else its
// ops run unfused. That part is the closest to greedy any plan of the region can be; the whole
// graph's timing (server/report_assembly.h) compares the regions' plans with the uncut GreedyPlan.
Plan GreedyBaseline(const RequestPolicy& policy, const Plan& whole, const Subgraph& region);

}  // namespace fusetune
