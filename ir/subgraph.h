#pragma once
// A piece of a graph as a graph of its own: what a measurement job carries to a worker, and what a
// region is timed as. Values read from outside become parameters p0, p1, ... (scalar constants are
// copied as constants instead, so kernels see the same literal); the listed nodes keep their order
// and are named n0, n1, ...; `outputs` become the result (a tuple when more than one). The piece
// maps its values to the original graph's and back, so nothing needs to read names to translate.
#include <span>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"
#include "ir/plan.h"

namespace fusetune {

struct Subgraph {
  Graph graph;
  // Per value of `graph`: the original value it stands for (a parameter: the input it replaces).
  std::vector<ValueId> to_original;
  // Each original value the piece holds (its inputs, the constants it reads, its nodes) -> its
  // value in `graph`.
  std::unordered_map<ValueId, ValueId> to_sub;

  ValueId ToOriginal(ValueId sub_value) const { return to_original.at(sub_value); }
  ValueId ToSub(ValueId original) const { return to_sub.at(original); }
  // A plan over one side's ids as the same plan over the other's (each group's nodes ascending;
  // ToSub also orders the groups to run on `graph`).
  Plan PlanToOriginal(const Plan& sub_plan) const;
  Plan PlanToSub(const Plan& original_plan) const;
};

// `inputs`, `nodes`, `outputs` as Canonicalize (ir/text/signature.h) lists them; `nodes` must be
// in an order where every node comes after the nodes it reads.
Subgraph ExtractSubgraph(const Graph& graph, std::span<const ValueId> inputs,
                         std::span<const ValueId> nodes, std::span<const ValueId> outputs);

}  // namespace fusetune
