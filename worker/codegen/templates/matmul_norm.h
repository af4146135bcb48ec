#pragma once
// A layer norm folded into a matmul's A (ir/fusion.h, FusedGroup::norm): the packing of A's rows
// computes each row's mean and deviation from the norm's input, then writes the normalised,
// scaled and shifted row straight into the packed block. 16 lanes along k throughout; the norm's
// input may itself be an inlined expression (a residual add).
#include "ir/fusion.h"
#include "ir/graph.h"
#include "ir/op.h"
#include "worker/codegen/templates/matmul_emit.h"
#include "worker/codegen/templates/matmul_group.h"

namespace fusetune::codegen {

// The PackAFn of `group` (whose `norm` is set), reading its inputs through `buffers`.
PackAFn NormalizedRowsPacker(const Graph& graph, const FusedGroup& group, const BufferMap& buffers,
                             const MatmulLayout& layout);

}  // namespace fusetune::codegen
