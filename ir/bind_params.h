#pragma once
// Binding a graph's parameters to values, as TVM's `bind_params_by_name` does before
// `relay.build`: a bound parameter stays a parameter (the graph's interface and its signatures do
// not change) but carries its weights, as an ONNX initialiser does. The rest of the system treats
// it as a constant of the plan: the schedule space offers weights packed once (`wpack`) for a
// matmul whose B is bound, and `run` uses the bound value unless --inputs gives another.
#include <map>
#include <string>

#include "ir/graph.h"

namespace fusetune {

// A copy of `graph` whose parameters named in `values` (without '%') carry those values. Throws
// UserError naming the parameter for a name the graph has no parameter of (listing its
// parameters) and for a value whose type differs from the parameter's.
Graph BindParams(const Graph& graph, const std::map<std::string, Tensor>& values,
                 const Limits& limits = {});

}  // namespace fusetune
