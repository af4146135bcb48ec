#include "server/schedule_features.h"

#include <cmath>

#include "ir/attention_schedule.h"
#include "ir/matmul_schedule.h"
#include "ir/schedule_space.h"
#include "server/cost_model.h"

namespace fusetune {
namespace {

float Log2(double x) { return static_cast<float>(std::log2(std::max(x, 1e-9))); }
double Edge(int64_t size, int64_t tile) {
  return static_cast<double>(size) / static_cast<double>((size + tile - 1) / tile * tile);
}
double Balance(double tasks, int threads) {
  return threads <= 1 ? 1.0 : tasks / (std::ceil(tasks / threads) * threads);
}

}  // namespace

std::vector<float> ScheduleFeatures(const Graph& graph, const FusedGroup& group,
                                    const Schedule& schedule, int threads) {
  std::vector<float> f(kScheduleFeatureCount, 0.0f);
  int i = 0;
  f[i + static_cast<int>(group.templ)] = 1;  // 0..4: the template
  i += kFeatureTemplates;
  int injective = 0, reduce = 0, opaque = 0;
  for (ValueId v : group.nodes) {
    OpPattern p = graph.value(v).op->pattern;
    injective += p == OpPattern::kInjective;
    reduce += p == OpPattern::kCommReduce;
    opaque += p == OpPattern::kOpaque || p == OpPattern::kOutEWiseFusable;
  }
  const RooflineTarget unit;  // only ratios matter to the model: fixed figures
  const GroupCost cost = EstimateGroup(graph, group, unit);
  f[i++] = static_cast<float>(group.nodes.size());
  f[i++] = static_cast<float>(injective);
  f[i++] = static_cast<float>(reduce + opaque);
  f[i++] = Log2(cost.flops + 1);
  f[i++] = Log2(cost.bytes + 1);
  f[i++] = Log2((cost.flops + 1) / (cost.bytes + 1));
  f[i++] = Log2(threads);
  // 12..29: the matmul problem and its tiling.
  if (group.templ == GroupTemplate::kMatmul) {
    const MatmulLayout problem = MatmulLayoutOf(graph, group);
    const MatmulTiling t = ResolveMatmulTiling(problem, schedule, threads);
    const MatmulLayout l = TiledMatmulLayout(problem, t);  // what the tiling's knobs describe
    f[i++] = Log2(problem.m);
    f[i++] = Log2(problem.n);
    f[i++] = Log2(problem.k);
    f[i++] = Log2(problem.batch);
    f[i++] = static_cast<float>(t.mr);
    f[i++] = static_cast<float>(t.nr);
    f[i++] = static_cast<float>(t.kc) / static_cast<float>(l.k);
    f[i++] = Log2(t.mc);
    f[i++] = Log2(t.nc);
    f[i++] = static_cast<float>(t.ku * 8 + t.loop);
    f[i++] = static_cast<float>(Edge(l.m, t.mr) * Edge(l.n, t.nr));
    f[i++] = static_cast<float>(Balance(static_cast<double>(t.Tasks(l)), threads));
    f[i++] = Log2(4.0 * t.kc * t.nc);
    f[i++] = static_cast<float>(t.swap);
    f[i++] = static_cast<float>(t.wpack);
    f[i++] = static_cast<float>(t.pf);
    f[i++] = static_cast<float>(t.pb);
    f[i++] = static_cast<float>(schedule.Get("l2", 0));
  } else {
    i += 18;
  }
  // 30..33: the generic knobs (their defaults for matmul groups: no meaning there).
  f[i++] = static_cast<float>(schedule.Get("vector", 16));
  f[i++] = static_cast<float>(schedule.Get("parallel", 1));
  f[i++] = static_cast<float>(schedule.Get("tile", 1));
  // A horizontal group has no one sink (each part has its own): its first output stands in.
  const Shape& out = graph.value(group.sink >= 0 ? group.sink : group.outputs.front()).type.shape;
  f[i++] = Log2(out.empty() ? 1 : out.back());
  // 34..37: the attention kernel's tiling.
  if (group.templ == GroupTemplate::kAttention) {
    const AttentionTiling t =
        ResolveAttentionTiling(AttentionShapeOf(graph, group), schedule, threads);
    f[i++] = Log2(t.q_rows);
    f[i++] = static_cast<float>(t.k_block);
    f[i++] = static_cast<float>(t.rows);
    f[i++] = t.online ? 1.0f : t.blocked ? 2.0f : 0.0f;  // the softmax's form
  } else {
    i += 4;
  }
  // 38..39: the roofline's estimate, and against the group's default schedule.
  const double est = EstimateSchedule(graph, group, schedule, unit, threads);
  const double def = EstimateSchedule(graph, group, Schedule{}, unit, threads);
  f[i++] = Log2(est);
  f[i++] = Log2(est / def);
  return f;
}

int FeatureTemplate(const std::vector<float>& features) {
  for (int t = 0; t < kFeatureTemplates && t < static_cast<int>(features.size()); ++t)
    if (features[t] == 1.0f) return t;
  return -1;
}

}  // namespace fusetune
