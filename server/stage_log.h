#pragma once
// How the tuner's stages name things in their `--log-level debug` lines and messages: nodes by
// their `%N` binding, as the user's graph spells them.
#include <span>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/plan.h"

namespace fusetune {

// "[%0 %1 %2]"
std::string NodesText(const Graph& graph, std::span<const ValueId> nodes);
// "[%0] [%1 %2]"
std::string PlanText(const Graph& graph, std::span<const PlanGroup> groups);
// The op name of each node.
std::vector<std::string> OpsOf(const Graph& graph, std::span<const ValueId> nodes);

}  // namespace fusetune
