#pragma once
// A plan: the graph's nodes covered by fused groups, each with a schedule, in an order that
// respects every dependency. A node is in one group, except a node recomputed (ir/fusion.h): it
// is in every group that reads it, each computing it again, and stored by none. Built-in plans:
// unfused (one kernel per op) and greedy (TVM FuseOps' rules, see greedy.cc). Plans read and write
// as JSON: {"groups":[{"nodes":["%0","%1"], "schedule":"tile_m=8,tile_n=32"}]}.
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace fusetune {

// Schedule knobs of a code-generation template; explicit and serialisable ("k=v,k=v", sorted by
// key). An empty schedule means the template's default.
struct Schedule {
  std::vector<std::pair<std::string, int64_t>> knobs;

  int64_t Get(const std::string& key, int64_t fallback) const;
  void Set(const std::string& key, int64_t value);
  std::string ToString() const;
  static Schedule Parse(const std::string& text);  // throws UserError
  bool operator==(const Schedule&) const = default;
};

struct PlanGroup {
  std::vector<ValueId> nodes;  // ascending
  Schedule schedule;
};

struct Plan {
  std::string name;  // "unfused", "greedy", "tuned", or a file name
  std::vector<PlanGroup> groups;
};

Plan UnfusedPlan(const Graph& graph);
// `never_fuse`, when given, pins nodes as Opaque for this call only: the per-request control TVM
// users could not get without re-registering an op's pattern.
Plan GreedyPlan(const Graph& graph, const std::function<bool(ValueId)>& never_fuse = {});

// Orders groups so each runs after the groups producing its inputs (ties: smallest first node).
// FT_CHECKs that the groups are acyclic.
void SortGroupsTopologically(const Graph& graph, Plan& plan);

// Per group, the nodes it shares with other groups: those it recomputes (ascending).
std::vector<std::vector<ValueId>> RecomputedNodes(std::span<const PlanGroup> groups);

// Checks that the groups cover every node (once, or recomputed in every group that reads it), each
// is lowerable, and that they can run in the given order (each group's inputs are produced by
// earlier groups). Throws UserError.
void ValidatePlan(const Graph& graph, const Plan& plan);

std::string PlanToJson(const Graph& graph, const Plan& plan);
Plan PlanFromJson(const Graph& graph, const std::string& json, const std::string& source_name);

}  // namespace fusetune
