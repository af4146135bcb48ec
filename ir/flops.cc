#include "ir/flops.h"

#include <vector>

#include "ir/op.h"

namespace fusetune {

double NodeFlops(const Graph& graph, ValueId id) {
  const Value& node = graph.value(id);
  if (node.kind != ValueKind::kNode || !node.op->flops) return 0;
  std::vector<TensorType> in_types;
  for (ValueId in : node.inputs) in_types.push_back(graph.value(in).type);
  return node.op->flops(in_types, node.type, node.attrs);
}

double MatmulFlops(const Graph& graph) {
  double flops = 0;
  for (ValueId id = 0; id < static_cast<ValueId>(graph.values().size()); ++id) {
    const Value& v = graph.value(id);
    if (v.kind == ValueKind::kNode && v.op->kind == OpKind::kMatmul) flops += NodeFlops(graph, id);
  }
  return flops;
}

}  // namespace fusetune
