#pragma once
// Each code-generation template's schedule knobs: the default and a bounded space to try. Pure IR
// (no LLVM), so the search can enumerate (group, schedule) jobs without linking the code generator.
#include <vector>

#include "ir/fusion.h"
#include "ir/plan.h"

namespace fusetune {

// The schedules worth measuring for `group` at `threads` threads; the first is the template's
// default. Never empty.
std::vector<Schedule> ScheduleSpace(const Graph& graph, const FusedGroup& group, int threads);

}  // namespace fusetune
