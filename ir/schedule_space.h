#pragma once
// Each code-generation template's schedule knobs: the default and a bounded space to try. Pure IR
// (no LLVM), so the search can enumerate (group, schedule) jobs without linking the code generator.
#include <vector>

#include "ir/fusion.h"
#include "ir/op.h"
#include "ir/plan.h"

namespace fusetune {

// The matmul problem of a kMatmul group's anchor.
MatmulLayout MatmulLayoutOf(const Graph& graph, const FusedGroup& group);

// The schedules worth measuring for `group` at `threads` threads; the first is the template's
// default. Never empty.
std::vector<Schedule> ScheduleSpace(const Graph& graph, const FusedGroup& group, int threads);

// A schedule tuned for group `from` of `from_graph`, adapted to group `to` of `to_graph`: the same
// group (same template, ops and wiring) at other sizes, at the same thread count. Matmul groups
// get AdaptMatmulSchedule (tiles clamped, default blocks recomputed for the new sizes). The other
// templates' knobs (vector, parallel, tile) are valid at every size, since their kernels mask the
// tail of the vectorized loop, and are kept as they are. Throws UserError when the groups use
// different templates or the schedule is not valid for `from`.
Schedule AdaptSchedule(const Graph& from_graph, const FusedGroup& from, const Schedule& tuned,
                       const Graph& to_graph, const FusedGroup& to, int threads);

}  // namespace fusetune
