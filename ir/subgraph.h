#pragma once
// A piece of a graph as a graph of its own: what a measurement job carries to a worker, and what a
// region is timed as. Values read from outside become parameters p0, p1, ... (scalar constants are
// copied as constants instead, so kernels see the same literal); the listed nodes keep their order
// and are named n0, n1, ...; `outputs` become the result (a tuple when more than one).
#include <span>

#include "ir/graph.h"

namespace fusetune {

struct Subgraph {
  Graph graph;
  std::vector<ValueId> node_map;  // subgraph node i (in `nodes` order) -> original ValueId
};

// `inputs`, `nodes`, `outputs` as Canonicalize (ir/text/signature.h) lists them; `nodes` must be
// in an order where every node comes after the nodes it reads.
Subgraph ExtractSubgraph(const Graph& graph, std::span<const ValueId> inputs,
                         std::span<const ValueId> nodes, std::span<const ValueId> outputs);

}  // namespace fusetune
