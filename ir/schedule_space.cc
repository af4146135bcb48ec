// Schedule spaces per template. Knobs (see worker/codegen/templates/templates.h and
// ir/matmul_schedule.h): element-wise, reduction and composite kernels have `vector` (lanes of the
// innermost vectorized loop: 4, 8, 16 or 32, where 32 on a 16-lane target is two registers per
// step, i.e. an unroll by two and, for reductions and the row passes, two accumulator chains),
// `parallel` (outer loop on the thread pool or not) and, for element-wise kernels, `tile`
// (blocked visits when a read gathers along the row); matmul kernels have their tiling knobs.
// The first schedule of a space is the default (empty for the generic templates, so default
// measurements share one key whatever the target's width). Spaces are small enough to measure
// whole under a budget; server/schedule_model.h ranks them and server/schedule_search.h decides
// how much of each is measured.
#include "ir/schedule_space.h"

#include <algorithm>
#include <climits>
#include <map>
#include <string>

#include <fmt/format.h>

#include "ir/error.h"

#include "ir/attention_schedule.h"
#include "ir/matmul_schedule.h"

namespace fusetune {
namespace {

Schedule Knobs(std::initializer_list<std::pair<const char*, int64_t>> knobs) {
  Schedule s;
  for (const auto& [k, v] : knobs) s.Set(k, v);
  return s;
}

bool HasOp(const Graph& graph, const FusedGroup& group, const char* op) {
  for (ValueId v : group.nodes)
    if (graph.value(v).op->name == op) return true;
  return false;
}

}  // namespace

MatmulLayout MatmulLayoutOf(const Graph& graph, const FusedGroup& group) {
  const Value& anchor = graph.value(group.anchor);
  std::vector<TensorType> in_types;
  for (ValueId in : anchor.inputs) in_types.push_back(graph.value(in).type);
  return anchor.op->matmul(in_types, anchor.attrs);
}

bool MatmulWeightsConstant(const Graph& graph, const FusedGroup& group) {
  if (group.templ != GroupTemplate::kMatmul || group.Horizontal() || group.anchor < 0) return false;
  const ValueId b = graph.value(group.anchor).inputs.at(1);
  if (std::find(group.inputs.begin(), group.inputs.end(), b) == group.inputs.end()) return false;
  const Value& v = graph.value(b);
  return (v.kind == ValueKind::kConst || v.kind == ValueKind::kParam) && v.data != nullptr;
}

ValueId ViewedGroupInput(const Graph& graph, const FusedGroup& group, ValueId v) {
  for (;;) {
    if (std::find(group.inputs.begin(), group.inputs.end(), v) != group.inputs.end()) return v;
    const Value& node = graph.value(v);
    if (!node.op || !node.op->row_major_view || node.inputs.empty()) return -1;
    v = node.inputs[0];
  }
}

bool MatmulSwapOffered(const Graph& graph, const FusedGroup& group) {
  if (group.templ != GroupTemplate::kMatmul || group.Horizontal() || group.anchor < 0 ||
      group.norm >= 0)
    return false;
  const Value& anchor = graph.value(group.anchor);
  return MatmulSwappable(MatmulLayoutOf(graph, group)) &&
         ViewedGroupInput(graph, group, anchor.inputs.at(0)) >= 0 &&
         ViewedGroupInput(graph, group, anchor.inputs.at(1)) >= 0;
}

namespace {

// A row kernel's statistics in one pass (online=1, worker/codegen/templates/composite.cc): a
// layer norm's always (one read of the row and one accumulator chain fewer: 0.67x of two passes
// at 256 x 768); a softmax's only where its row is past the row cache: one pass costs a second
// exp per element, 1.3-1.6x slower than two passes up to 50,257-wide rows, 0.95x at 300,000.
bool OnlineRowsOffered(const Graph& graph, const FusedGroup& group) {
  if (group.templ != GroupTemplate::kComposite) return false;
  const bool by_op = group.NormWrittenOpByOp();
  const Value& anchor = graph.value(group.anchor);
  if (by_op && group.row_norm.kind == RowNorm::kRmsNorm) return false;  // one pass already
  if (by_op ? group.row_norm.kind == RowNorm::kLayerNorm : anchor.op->name != "nn.softmax")
    return true;
  const Shape& shape = graph.value(by_op ? group.row_norm.input : anchor.inputs.at(0)).type.shape;
  int64_t axis = by_op ? group.row_norm.axis : anchor.attrs.GetInt("axis");
  if (axis < 0) axis += static_cast<int64_t>(shape.size());
  return shape.at(axis) > kRowCacheFloats;
}

}  // namespace

std::vector<Schedule> ScheduleSpace(const Graph& graph, const FusedGroup& group, int threads) {
  if (group.templ == GroupTemplate::kMatmul) {
    auto space =
        MatmulScheduleSpace(MatmulLayoutOf(graph, group), threads,
                            MatmulWeightsConstant(graph, group), MatmulSwapOffered(graph, group));
    if (!space.empty()) return space;
    return {Schedule{}};
  }
  if (group.templ == GroupTemplate::kAttention)
    return AttentionScheduleSpace(AttentionShapeOf(graph, group), threads);
  // Generic templates: the default (the target's widest vectors, parallel); half- and
  // quarter-width vectors (fewer masked lanes on short rows); double width (two registers per
  // step: more accumulator chains for reductions, an unroll for element-wise); plain row order
  // for element-wise kernels that transpose (the default tiles them); a row kernel's statistics
  // in one pass (composite.cc); and at several threads the serial variants (small kernels can
  // lose more to the pool's hand-off than they gain).
  std::vector<Schedule> space = {Schedule{}, Knobs({{"vector", 8}}), Knobs({{"vector", 32}}),
                                 Knobs({{"vector", 4}})};
  if (group.templ == GroupTemplate::kElementwise && HasOp(graph, group, "transpose"))
    space.push_back(Knobs({{"tile", 0}}));
  if (OnlineRowsOffered(graph, group)) space.push_back(Knobs({{"online", 1}}));
  if (threads > 1) {
    space.push_back(Knobs({{"parallel", 0}}));
    space.push_back(Knobs({{"parallel", 0}, {"vector", 8}}));
    space.push_back(Knobs({{"parallel", 0}, {"vector", 32}}));
  }
  return space;
}

int ScheduleDistance(const Schedule& a, const Schedule& b) {
  constexpr int64_t kUnset = INT64_MIN;
  std::map<std::string, std::pair<int64_t, int64_t>> knobs;
  for (const auto& [k, v] : a.knobs) knobs[k] = {v, kUnset};
  for (const auto& [k, v] : b.knobs) {
    auto [it, inserted] = knobs.try_emplace(k, kUnset, v);
    if (!inserted) it->second.second = v;
  }
  auto differs = [&](const char* knob) {
    auto it = knobs.find(knob);
    return it != knobs.end() && it->second.first != it->second.second;
  };
  const bool rows = differs("mr"), cols = differs("nr");
  int d = rows || cols ? 1 : 0;
  for (const auto& [k, v] : knobs) {
    if (k == "mr" || k == "nr" || (k == "mc" && rows) || (k == "nc" && cols)) continue;
    d += v.first != v.second;
  }
  return d;
}

Schedule AdaptSchedule(const Graph& from_graph, const FusedGroup& from, const Schedule& tuned,
                       const Graph& to_graph, const FusedGroup& to, int threads) {
  if (from.templ != to.templ) {
    throw UserError(fmt::format("cannot adapt a {} schedule to a {} group",
                                TemplateName(from.templ), TemplateName(to.templ)));
  }
  if (from.templ == GroupTemplate::kMatmul)
    return AdaptMatmulSchedule(MatmulLayoutOf(from_graph, from), tuned,
                               MatmulLayoutOf(to_graph, to), threads);
  return tuned;
}

}  // namespace fusetune
