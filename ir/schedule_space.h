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

// Whether the B operand (the weights) of a kMatmul group's anchor is a graph constant: a group
// input (no prologue computes it) that is a kConst or a kParam carrying data (an ONNX
// initialiser), in a group that is not horizontal. Only then does the space offer wpack=1
// (ir/matmul_schedule.h): packing B once when the kernel is bound is sound for any input the
// caller binds, but only a weight is worth it and is what the peers pack ahead.
bool MatmulWeightsConstant(const Graph& graph, const FusedGroup& group);

// The group input whose memory `v` is, itself or through reshapes (OpDef::row_major_view), else
// -1: an operand the matmul template reads where it lies instead of evaluating it element by
// element as a prologue.
ValueId ViewedGroupInput(const Graph& graph, const FusedGroup& group, ValueId v);

// Whether a kMatmul group's product reads both operands in place (ViewedGroupInput, no folded
// norm, not horizontal) and is one swap=1 applies to (MatmulSwappable): then its space offers
// the weights read in place where A has 16 rows or more (ir/matmul_schedule.h).
bool MatmulSwapOffered(const Graph& graph, const FusedGroup& group);

// The longest row (in floats) the softmax and layer-norm row kernel keeps in a per-thread cache
// between its passes (1 MiB); a longer row is read again by every pass.
inline constexpr int64_t kRowCacheFloats = int64_t{1} << 18;

// The schedules worth measuring for `group` at `threads` threads; the first is the template's
// default. Never empty.
std::vector<Schedule> ScheduleSpace(const Graph& graph, const FusedGroup& group, int threads);

// How many knobs two schedules of one group differ in: the schedule search's notion of a
// neighbour (distance 1). A knob only one of them spells differs. The register tile (mr, nr) is
// one knob, and a cache block rounded to a tile dimension (mc to mr, nc to nr) follows that
// dimension: where it changed, the block is not counted, else no tile change would be one step
// from any schedule, every space entry spelling its blocks resolved.
int ScheduleDistance(const Schedule& a, const Schedule& b);

// A schedule tuned for group `from` of `from_graph`, adapted to group `to` of `to_graph`: the same
// group (same template, ops and wiring) at other sizes, at the same thread count. Matmul groups
// get AdaptMatmulSchedule (tiles clamped, default blocks recomputed for the new sizes). The other
// templates' knobs (vector, parallel, tile) are valid at every size, since their kernels mask the
// tail of the vectorized loop, and are kept as they are. Throws UserError when the groups use
// different templates or the schedule is not valid for `from`.
Schedule AdaptSchedule(const Graph& from_graph, const FusedGroup& from, const Schedule& tuned,
                       const Graph& to_graph, const FusedGroup& to, int threads);

}  // namespace fusetune
