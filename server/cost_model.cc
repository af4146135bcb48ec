#include "server/cost_model.h"

#include <algorithm>

namespace fusetune {

GroupCost EstimateGroup(const Graph& graph, const FusedGroup& group, const RooflineTarget& target) {
  GroupCost cost;
  for (ValueId v : group.nodes) {
    const Value& node = graph.value(v);
    std::vector<TensorType> in_types;
    for (ValueId in : node.inputs) in_types.push_back(graph.value(in).type);
    if (node.op->flops) cost.flops += node.op->flops(in_types, node.type, node.attrs);
  }
  for (ValueId v : group.inputs) cost.bytes += static_cast<double>(graph.value(v).type.NumBytes());
  for (ValueId v : group.outputs) cost.bytes += static_cast<double>(graph.value(v).type.NumBytes());
  // GFLOP/s and GB/s are both 1e3 per microsecond.
  cost.estimate_us =
      std::max(cost.flops / (target.peak_gflops * 1e3), cost.bytes / (target.bandwidth_gbs * 1e3));
  return cost;
}

}  // namespace fusetune
