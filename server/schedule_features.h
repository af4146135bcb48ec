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

inline constexpr int kScheduleFeatureCount = 40;

// The features that hold a knob's value as the schedule chose it (a register tile, the k unroll
// and loop order, swap, wpack, prefetch, the L2 block, a vector width, serial or parallel, the
// attention kernel's block, rows and pass count), not a size that follows from the shape. A model
// trained where one of them never took a value has no evidence about schedules that do: the
// ranker explores those by the roofline (server/schedule_model.h).
inline constexpr std::array<int, 14> kKnobFeatures = {16, 17, 21, 25, 26, 27, 28,
                                                      29, 30, 31, 32, 35, 36, 37};
// The group's template as features 0..4 hold it (one-hot over GroupTemplate); -1 when none is.
inline constexpr int kFeatureTemplates = 5;
int FeatureTemplate(const std::vector<float>& features);

// Throws UserError when the schedule is not one of the group's template.
std::vector<float> ScheduleFeatures(const Graph& graph, const FusedGroup& group,
                                    const Schedule& schedule, int threads);

}  // namespace fusetune
