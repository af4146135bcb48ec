#pragma once
// What the learned schedule model (server/learned_schedule_model.h) sees of one (group, schedule)
// at a thread count: the group (template, op mix, flops, bytes), its shape (the matmul problem or
// the row a generic kernel vectorizes), the schedule's knobs resolved against that shape (with the
// tile's use at the edges and the balance of tasks over threads), the thread count, and the
// roofline's estimate of that schedule (server/cost_model.h), so the model starts where the
// roofline is and learns what it misses.
#include <vector>

#include "ir/fusion.h"
#include "ir/graph.h"
#include "ir/plan.h"

namespace fusetune {

inline constexpr int kScheduleFeatureCount = 30;

// Throws UserError when the schedule is not one of the group's template.
std::vector<float> ScheduleFeatures(const Graph& graph, const FusedGroup& group,
                                    const Schedule& schedule, int threads);

}  // namespace fusetune
