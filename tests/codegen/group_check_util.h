#pragma once
// Test helper: compile fused groups of a Relay graph, run each on the reference interpreter's
// values of its inputs, and compare its outputs with the interpreter's values of its nodes.
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/plan.h"

namespace fusetune::testing {

// |got - want| <= abs + rel * |want| per element; NaN must meet NaN, inf the same inf.
struct Tolerance {
  double abs = 1e-6;
  double rel = 1e-6;
};

struct GroupResult {
  std::string group;  // "%0,%1"
  double max_abs_error = 0;
  bool ok = true;
  std::string first_failure;
};

Graph ParseGraph(const std::string& relay);

// `groups` lists node names (without '%'); empty: every node alone. `seed` picks the inputs;
// every group is compiled with `schedule`.
std::vector<GroupResult> CheckGroups(const Graph& graph,
                                     const std::vector<std::vector<std::string>>& groups,
                                     Tolerance tol, int threads, uint64_t seed = 1,
                                     const Schedule& schedule = {});

// Every node of the graph in one group (the whole graph must be one legal group).
GroupResult CheckWholeGraph(const std::string& relay, Tolerance tol, int threads,
                            uint64_t seed = 1);

}  // namespace fusetune::testing
