// Schedule spaces per template. Knobs (see worker/codegen/templates/templates.h and
// ir/matmul_schedule.h): element-wise, reduction and composite kernels have `vector` (lanes of the
// innermost vectorized loop) and `parallel` (outer loop on the thread pool or not); matmul
// kernels have their tiling knobs. The first schedule of a space is the default (empty for the
// generic templates, so default measurements share one key whatever the target's width).
#include "ir/schedule_space.h"

#include <fmt/format.h>

#include "ir/error.h"

#include "ir/matmul_schedule.h"

namespace fusetune {
namespace {

MatmulLayout LayoutOf(const Graph& graph, const FusedGroup& group) {
  const Value& anchor = graph.value(group.anchor);
  std::vector<TensorType> in_types;
  for (ValueId in : anchor.inputs) in_types.push_back(graph.value(in).type);
  return anchor.op->matmul(in_types, anchor.attrs);
}

Schedule Knobs(std::initializer_list<std::pair<const char*, int64_t>> knobs) {
  Schedule s;
  for (const auto& [k, v] : knobs) s.Set(k, v);
  return s;
}

}  // namespace

std::vector<Schedule> ScheduleSpace(const Graph& graph, const FusedGroup& group, int threads) {
  if (group.templ == GroupTemplate::kMatmul) {
    auto space = MatmulScheduleSpace(LayoutOf(graph, group), threads);
    if (!space.empty()) return space;
    return {Schedule{}};
  }
  // Generic templates: the default (widest vectors, parallel), half-width vectors (fewer masked
  // lanes on short rows), and at several threads the serial variant (small kernels can lose more
  // to the pool's hand-off than they gain).
  std::vector<Schedule> space = {Schedule{}, Knobs({{"vector", 8}})};
  if (threads > 1) space.push_back(Knobs({{"parallel", 0}}));
  return space;
}

Schedule AdaptSchedule(const Graph& from_graph, const FusedGroup& from, const Schedule& tuned,
                       const Graph& to_graph, const FusedGroup& to, int threads) {
  if (from.templ != to.templ) {
    throw UserError(fmt::format("cannot adapt a {} schedule to a {} group",
                                TemplateName(from.templ), TemplateName(to.templ)));
  }
  if (from.templ == GroupTemplate::kMatmul)
    return AdaptMatmulSchedule(LayoutOf(from_graph, from), tuned, LayoutOf(to_graph, to), threads);
  return tuned;
}

}  // namespace fusetune
