#pragma once
// What the learned schedule model (server/learned_schedule_model.h) sees of one (group, schedule)
// at a thread count: the group (template, op mix, flops, bytes), its shape (the matmul problem or
// the row a generic kernel vectorizes), the schedule's knobs resolved against that shape (with the
// tile's use at the edges and the balance of tasks over threads), the thread count, and the
// roofline's estimate of that schedule (server/cost_model.h), so the model starts where the
// roofline is and learns what it misses.
#include <array>
#include <vector>

#include "ir/fusion.h"
#include "ir/graph.h"
#include "ir/plan.h"

namespace fusetune {

// Where each feature is in ScheduleFeatures' vector: the group's template (one-hot over
// GroupTemplate), its op mix and roofline figures, the matmul problem and tiling (0 for other
// templates), the generic knobs and the row a generic kernel vectorizes, the attention tiling, and
// the roofline's estimate. A stored measurement's features are recomputed from its group and
// schedule whenever a model is trained, so the layout may change between builds.
enum ScheduleFeature : int {
  kFeatureTemplate = 0,  // 0..4
  kFeatureNodes = 5,
  kFeatureInjectiveOps,
  kFeatureOtherOps,
  kFeatureLogFlops,
  kFeatureLogBytes,
  kFeatureLogIntensity,
  kFeatureLogThreads,
  kFeatureLogM,
  kFeatureLogN,
  kFeatureLogK,
  kFeatureLogBatch,
  kFeatureMr,
  kFeatureNr,
  kFeatureKcShare,
  kFeatureLogMc,
  kFeatureLogNc,
  kFeatureUnrollAndLoop,
  kFeatureTileUse,
  kFeatureBalance,
  kFeatureLogBBlock,
  kFeatureSwap,
  kFeatureWpack,
  kFeaturePrefetch,
  kFeaturePrefetchBlocks,
  kFeatureL2Block,
  kFeatureVector,
  kFeatureParallel,
  kFeatureTile,
  kFeatureLogRow,
  kFeatureLogQRows,
  kFeatureKBlock,
  kFeatureRows,
  kFeatureSoftmaxForm,  // attention: 0 two-pass, 1 online, 2 two-pass blocked; row kernels: online
  kFeatureLogEstimate,
  kFeatureLogEstimateVsDefault,
  kScheduleFeatureCount
};

// The features that hold a knob's value as the schedule chose it (a register tile, the k unroll
// and loop order, swap, wpack, prefetch, the L2 block, a vector width, serial or parallel, the
// attention kernel's block, rows and softmax form), not a size that follows from the shape. A
// model trained where one of them never took a value has no evidence about schedules that do:
// the ranker explores those by the roofline (server/schedule_model.h).
inline constexpr std::array<int, 14> kKnobFeatures = {
    kFeatureMr,     kFeatureNr,         kFeatureUnrollAndLoop,  kFeatureSwap,
    kFeatureWpack,  kFeaturePrefetch,   kFeaturePrefetchBlocks, kFeatureL2Block,
    kFeatureVector, kFeatureParallel,   kFeatureTile,           kFeatureKBlock,
    kFeatureRows,   kFeatureSoftmaxForm};
// The group's template as features 0..4 hold it; -1 when none is.
inline constexpr int kFeatureTemplates = 5;
int FeatureTemplate(const std::vector<float>& features);

// Throws UserError when the schedule is not one of the group's template.
std::vector<float> ScheduleFeatures(const Graph& graph, const FusedGroup& group,
                                    const Schedule& schedule, int threads);

}  // namespace fusetune
