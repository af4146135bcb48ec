#pragma once
// Floating-point operations of graph nodes, from each op's OpDef::flops (a matmul's 2·batch·M·N·K,
// an element-wise op's scalar operations per element times the output size).
#include "ir/graph.h"

namespace fusetune {

// One evaluation of node `id`; 0 for an op that defines none (data movement).
double NodeFlops(const Graph& graph, ValueId id);

// The graph's matmuls (dense, batch_matmul, matmul) together: what runs at the FMA peak at best,
// so what `fusetune run` sets against that peak.
double MatmulFlops(const Graph& graph);

}  // namespace fusetune
