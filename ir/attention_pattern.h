#pragma once
// Attention as one kernel: which groups the attention template (worker/codegen/templates/
// attention.h) can lower. Decided from the IR alone, like every legality (ir/fusion.h).
//
//        Q   K                 every node of the group is one of:
//         \ /                    scores   nn.batch_matmul(Q, K): [B, M, N]
//       scores                   chain    element-wise/broadcast steps of the scores' shape, in a
//         |  (chain)                      line (multiply or divide by a scale, add a mask), whose
//       softmax (last axis)               other operands are read from memory
//         |   V                  softmax  nn.softmax over the last axis: P; or a softmax written
//                                         op by op over it (ir/norm_pattern.h), its max, shift,
//                                         exp and sum steps of the group, read by nothing else
//          \ /                   output   nn.batch_matmul(P, V) with P not transposed: the sink
//        output                  prologue element-wise/injective producers of Q, K or V
//                                         (reshape, transpose, strided_slice, a scale), inlined
//                                         while the kernel packs its operands
//
// The scores may carry leading 1s between the products ([1, heads, M, N], as GPT-2's export
// writes them for its [1, 1, M, N] causal mask): reshapes, expand_dims and squeezes that only add
// or drop leading 1s are steps of the chain, the softmax may be over the last axis of such a
// tensor, and P may reach the output through such a reshape.
//
// Only the output leaves the group: a score or probability used elsewhere would have to be
// written, which is what the kernel exists to avoid. Everything is float32. Transposes and
// reshapes after the output (the heads merged back) are not part of the group; they stay an
// element-wise kernel of their own. No rule forms such a group: the search offers it
// (server/candidates.cc) and keeps it only when it measures faster.
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ir/fusion.h"
#include "ir/graph.h"

namespace fusetune {

// Cheap test: the group holds an nn.softmax, or a softmax written op by op and a batch_matmul,
// and its nodes could be attention (then AnalyzeAttention decides, with a reason when it refuses).
bool IsAttentionCandidate(const Graph& graph, std::span<const ValueId> nodes);

// `group` has nodes, inputs, outputs and sink filled in and is known convex and connected.
// Returns it as a kAttention group, or nullopt and a reason.
std::optional<FusedGroup> AnalyzeAttention(const Graph& graph, FusedGroup group,
                                           std::string* why_not);

// The attention chains of a graph: for each softmax over the last axis between two batch
// matmuls as above, the smallest group (scores, chain, softmax, output) and the inlinable
// producers of each operand (Q, K, V) that only that operand reads, nearest first. The candidate
// enumerator builds its groups from these.
struct AttentionChain {
  std::vector<ValueId> core;                    // ascending
  std::vector<std::vector<ValueId>> prologues;  // Q, K, V: each ascending, possibly empty
};
std::vector<AttentionChain> FindAttentionChains(const Graph& graph);

}  // namespace fusetune
