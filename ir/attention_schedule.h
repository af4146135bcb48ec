#pragma once
// Schedules of the attention template (worker/codegen/templates/attention.h). Pure IR, so the
// search can enumerate them without linking LLVM.
//
// Knobs (Schedule keys), all optional:
//   q_rows   query rows per parallel task (a task is one batch entry, i.e. one head, and a block
//            of q_rows queries); clamped to M
//   k_block  keys per block of the online softmax: the scores of `rows` queries against k_block
//            keys live in registers (k_block % 16 == 0, 16..256); clamped to N rounded up to 16
//   rows     queries computed together in the micro-kernel (1..8): each loaded K or V vector is
//            used `rows` times
//   online   1: one pass over the keys, the softmax online (each key block rescales the output
//            rows accumulated so far); 0: two passes, the `rows` queries' scores against every
//            key kept in a row buffer (rows x N floats), one max and one exp per score, then P·V
//            over all keys with no rescaling: fewer registers live in each loop and no per-block
//            rescale, for a buffer the online form never writes. Default 0 up to N = 2048 (the
//            buffer of 4 rows in L1), 1 beyond: the two-pass form measured 0.97-1.00x greedy's
//            three kernels at S = 128-256 and 0.71-0.80x at 512, the online one 1.14-1.16x and
//            0.92x (BENCHMARKS.md, "Attention in two passes")
//   blocked  the two-pass form's order, 1 by default: the task's q_rows queries go through each
//            pass together, key block by key block, `rows` at a time, so each packed K block and
//            V block is read by all of them while it is in L1; 0: `rows` queries at a time over
//            all keys, streaming the whole of K and V from L2 for every `rows` queries. Blocked,
//            the task's scores (q_rows x N) and output rows (q_rows x E) live in buffers; 3-4%
//            faster than by rows at S = 128-512 on the Intel Xeon and level under a causal mask
//            (paired; BENCHMARKS.md, "Attention blocked over its queries ..."). blocked=1
//            with online=1 is an error
// The vector width is fixed at 16 floats (one AVX-512 register; two AVX2 registers elsewhere):
// the mask and scale steps are read through the 16-lane row loads the matmul epilogue uses.
#include <cstdint>
#include <vector>

#include "ir/fusion.h"
#include "ir/graph.h"
#include "ir/plan.h"

namespace fusetune {

// The sizes of an attention group: out[b, m, e] = softmax(s[b, m, :]) · V[b, :, e], s = Q·Kᵀ.
struct AttentionShape {
  int64_t batch = 1, m = 0, n = 0, d = 0, e = 0;  // d: Q/K depth, e: V width
};
AttentionShape AttentionShapeOf(const Graph& graph, const FusedGroup& group);

struct AttentionTiling {
  int64_t q_rows = 32;
  int64_t k_block = 64;
  int rows = 4;
  bool online = false;
  bool blocked = true;  // resolved: false when online
  int64_t Tasks(const AttentionShape& s) const { return s.batch * ((s.m + q_rows - 1) / q_rows); }
};

// Every knob resolved against the problem; throws UserError on an unknown knob or a bad value.
AttentionTiling ResolveAttentionTiling(const AttentionShape& shape, const Schedule& schedule,
                                       int threads);

// The default first, then variants of each knob; never empty.
std::vector<Schedule> AttentionScheduleSpace(const AttentionShape& shape, int threads);

}  // namespace fusetune
