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
  f[kFeatureTemplate + static_cast<int>(group.templ)] = 1;
  int injective = 0, reduce = 0, opaque = 0;
  for (ValueId v : group.nodes) {
    OpPattern p = graph.value(v).op->pattern;
    injective += p == OpPattern::kInjective;
    reduce += p == OpPattern::kCommReduce;
    opaque += p == OpPattern::kOpaque || p == OpPattern::kOutEWiseFusable;
  }
  const RooflineTarget unit;  // only ratios matter to the model: fixed figures
  const GroupCost cost = EstimateGroup(graph, group, unit);
  f[kFeatureNodes] = static_cast<float>(group.nodes.size());
  f[kFeatureInjectiveOps] = static_cast<float>(injective);
  f[kFeatureOtherOps] = static_cast<float>(reduce + opaque);
  f[kFeatureLogFlops] = Log2(cost.flops + 1);
  f[kFeatureLogBytes] = Log2(cost.bytes + 1);
  f[kFeatureLogIntensity] = Log2((cost.flops + 1) / (cost.bytes + 1));
  f[kFeatureLogThreads] = Log2(threads);
  if (group.templ == GroupTemplate::kMatmul) {
    const MatmulLayout problem = MatmulLayoutOf(graph, group);
    const MatmulTiling t = ResolveMatmulTiling(problem, schedule, threads);
    const MatmulLayout l = TiledMatmulLayout(problem, t);  // what the tiling's knobs describe
    f[kFeatureLogM] = Log2(problem.m);
    f[kFeatureLogN] = Log2(problem.n);
    f[kFeatureLogK] = Log2(problem.k);
    f[kFeatureLogBatch] = Log2(problem.batch);
    f[kFeatureMr] = static_cast<float>(t.mr);
    f[kFeatureNr] = static_cast<float>(t.nr);
    f[kFeatureKcShare] = static_cast<float>(t.kc) / static_cast<float>(l.k);
    f[kFeatureLogMc] = Log2(t.mc);
    f[kFeatureLogNc] = Log2(t.nc);
    f[kFeatureUnrollAndLoop] = static_cast<float>(t.ku * 8 + t.loop);
    f[kFeatureTileUse] = static_cast<float>(Edge(l.m, t.mr) * Edge(l.n, t.nr));
    f[kFeatureBalance] = static_cast<float>(Balance(static_cast<double>(t.Tasks(l)), threads));
    f[kFeatureLogBBlock] = Log2(4.0 * t.kc * t.nc);
    f[kFeatureSwap] = static_cast<float>(t.swap);
    f[kFeatureWpack] = static_cast<float>(t.wpack);
    f[kFeaturePrefetch] = static_cast<float>(t.pf);
    f[kFeaturePrefetchBlocks] = static_cast<float>(t.pb);
    f[kFeatureL2Block] = static_cast<float>(schedule.Get("l2", 0));
  }
  // The generic knobs (their defaults for matmul groups: no meaning there).
  f[kFeatureVector] = static_cast<float>(schedule.Get("vector", 16));
  f[kFeatureParallel] = static_cast<float>(schedule.Get("parallel", 1));
  f[kFeatureTile] = static_cast<float>(schedule.Get("tile", 1));
  if (group.templ == GroupTemplate::kComposite)
    f[kFeatureSoftmaxForm] = static_cast<float>(schedule.Get("online", 0));
  // A horizontal group has no one sink (each part has its own): its first output stands in.
  const Shape& out = graph.value(group.sink >= 0 ? group.sink : group.outputs.front()).type.shape;
  f[kFeatureLogRow] = Log2(out.empty() ? 1 : out.back());
  if (group.templ == GroupTemplate::kAttention) {
    const AttentionTiling t =
        ResolveAttentionTiling(AttentionShapeOf(graph, group), schedule, threads);
    f[kFeatureLogQRows] = Log2(t.q_rows);
    f[kFeatureKBlock] = static_cast<float>(t.k_block);
    f[kFeatureRows] = static_cast<float>(t.rows);
    f[kFeatureSoftmaxForm] = t.online ? 1.0f : t.blocked ? 2.0f : 0.0f;
  }
  // The roofline's estimate, and against the group's default schedule.
  const double est = EstimateSchedule(graph, group, schedule, unit, threads);
  const double def = EstimateSchedule(graph, group, Schedule{}, unit, threads);
  f[kFeatureLogEstimate] = Log2(est);
  f[kFeatureLogEstimateVsDefault] = Log2(est / def);
  return f;
}

int FeatureTemplate(const std::vector<float>& features) {
  for (int t = 0; t < kFeatureTemplates && t < static_cast<int>(features.size()); ++t)
    if (features[kFeatureTemplate + t] == 1.0f) return t;
  return -1;
}

}  // namespace fusetune
