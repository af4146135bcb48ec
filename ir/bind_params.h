#pragma once
// Binding a graph's parameters to values, as TVM's `bind_params_by_name` does before
// `relay.build`: a bound parameter stays a parameter (the graph's interface and its signatures do
// not change) but carries its weights, as an ONNX initialiser does. The rest of the system treats
// it as a constant of the plan: the schedule space offers weights packed once (`wpack`) for a
// matmul whose B is bound, and `run` uses the bound value unless --inputs gives another.
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace fusetune {

// A copy of `graph` whose parameters named in `values` (without '%') carry those values. Throws
// UserError naming the parameter for a name the graph has no parameter of (listing its
// parameters) and for a value whose type differs from the parameter's.
Graph BindParams(const Graph& graph, const std::map<std::string, Tensor>& values,
                 const Limits& limits = {});

// The names (without '%') of `graph`'s parameters that carry weights, bound or ONNX initialisers,
// in parameter order.
std::vector<std::string> BoundParamNames(const Graph& graph);

// BindParams for a holder of the graph without its weights (a server: the client keeps them):
// each parameter named in `types` is bound to zeros standing for its weights, so the tuner sees
// a constant and offers wpack as for the real ones. Nothing on a server computes with the values
// (jobs time kernels on random inputs). One zero tensor per type, shared, and calloc'd: untouched
// pages cost no memory. Throws as BindParams does for a name or a type that does not fit.
Graph BindParamPlaceholders(const Graph& graph, const std::map<std::string, TensorType>& types,
                            const Limits& limits = {});

}  // namespace fusetune
