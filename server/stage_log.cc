#include "server/stage_log.h"

#include <fmt/format.h>

namespace fusetune {

std::string NodesText(const Graph& graph, std::span<const ValueId> nodes) {
  std::vector<std::string> names;
  for (ValueId v : nodes) names.push_back(graph.RefName(v));
  return fmt::format("[{}]", fmt::join(names, " "));
}

std::string PlanText(const Graph& graph, std::span<const PlanGroup> groups) {
  std::vector<std::string> parts;
  for (const PlanGroup& g : groups) parts.push_back(NodesText(graph, g.nodes));
  return fmt::format("{}", fmt::join(parts, " "));
}

std::vector<std::string> OpsOf(const Graph& graph, std::span<const ValueId> nodes) {
  std::vector<std::string> ops;
  for (ValueId v : nodes) ops.push_back(graph.value(v).op->name);
  return ops;
}

}  // namespace fusetune
