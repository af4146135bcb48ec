#include "ir/schedule_space.h"

#include "ir/matmul_schedule.h"

namespace fusetune {

std::vector<Schedule> ScheduleSpace(const Graph& graph, const FusedGroup& group, int threads) {
  if (group.templ == GroupTemplate::kMatmul) {
    const Value& anchor = graph.value(group.anchor);
    std::vector<TensorType> in_types;
    for (ValueId in : anchor.inputs) in_types.push_back(graph.value(in).type);
    auto space = MatmulScheduleSpace(anchor.op->matmul(in_types, anchor.attrs), threads);
    if (!space.empty()) return space;
  }
  // Element-wise, reduction and composite templates: their default schedule only, until the
  // code generator exposes their knobs here.
  return {Schedule{}};
}

}  // namespace fusetune
