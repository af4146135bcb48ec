#pragma once
// The attention template (ir/attention_pattern.h): out = softmax(chain(Q·Kᵀ)) · V as one kernel
// that never writes the score matrix, in one of two forms (knob `online`):
//
//   kernel(buffers)                      fusetune_parallel_for(tasks, task, buffers)
//   task(buffers, begin, end)            a task = (batch entry b, block of q_rows queries)
//     pack K(b), V(b) -> thread scratch    K as [key block][d][k_block], V as [key][e padded to
//                                          16]; skipped when this thread's previous task packed b
//                                          (a computed operand's prologue is evaluated here, 16
//                                          lanes at a time)
//     pack the task's Q rows
//     rows_<R>(..) per R queries          R = `rows`, then single rows for the remainder
//
//   two-pass (online=0, default up to 2,048 keys), rows_R(b, m0, q, k, v, p):
//     for each key block j0: s[r][j0..] = chain(q[r] · K[j0..])   into p, R x N floats
//     per row: mx = max s; p = exp(s - mx) in place, l = sum p   the R rows' chains interleaved
//     o[r][:] = sum_j p[r][j] V[j]           all keys, R x e/16 accumulators in registers
//     out[b, m0 + r, :] = o / l
//
//   online (online=1), rows_R(b, m0, q, k, v, p): for each key block j0 (k_block keys):
//     s[r][:] = q[r] · K[j0..]             R x k_block/16 accumulators, K vectors reused R times
//     s = chain(s) (scale, mask)           the element-wise steps, read at (b, m0 + r, j0 + lane)
//     mx = max(m, max s); a = exp(m - mx)  online softmax: rescale what is accumulated so far
//     p = exp(s - mx); l = l a + sum p
//     o[r][:] = o a + sum_j p[j] V[j0+j]   p goes through a small buffer to be broadcast
//     out[b, m0 + r, :] = o / l
//
// A chain ending in where(mask, C, s) with a mask that does not read the scores (GPT-2's causal
// -FLT_MAX) skips key blocks: a block masked in all R rows of a call gets no product (two-pass:
// C stored, the exp and P·V passes end after the last computed block; online: the block skipped)
// once every row has a score far enough above C for exp to give exactly 0. A causal mask skips
// nearly half the blocks; the tuner's random masks never do.
//
// The schedule's knobs are ir/attention_schedule.h's (q_rows, k_block, rows, online).
#include <string>

#include "ir/fusion.h"
#include "ir/graph.h"
#include "ir/plan.h"
#include "worker/codegen/target.h"

namespace llvm {
class Function;
class Module;
}  // namespace llvm

namespace fusetune::codegen {

// Emits `void symbol(void** buffers)` (kernel_abi.h) for an attention group into `module`.
// Throws UserError on a bad schedule knob.
llvm::Function* EmitAttentionKernel(llvm::Module& module, const Graph& graph,
                                    const FusedGroup& group, const Schedule& schedule,
                                    const TargetInfo& target, const std::string& symbol,
                                    int threads);

}  // namespace fusetune::codegen
