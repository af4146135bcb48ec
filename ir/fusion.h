#pragma once
// Legality of a fused group, decided from the IR alone so the search (which never links LLVM) and
// the code generator share one function. A group is lowerable iff it is connected, convex, and
// matched by a template:
//
//   kElementwise  only ElemWise/Broadcast/Injective ops; one sink; iterate the sink's output
//                 space
//   kReduce       one reduction anchor; prologue inlined into its reads, epilogue on the result
//   kMatmul       one dense/batch_matmul/matmul anchor; prologue into loads, epilogue on the tile
//   kComposite    one softmax/layer_norm anchor; a row kernel, prologue and epilogue as for
//                 kReduce
//
// Prologue ops (producers of the anchor inside the group) must be ElemWise/Broadcast/Injective and
// are inlined through their index maps. Epilogue ops (consumers of the anchor) must be
// ElemWise/Broadcast ops whose output shape equals the anchor's, so they apply element by element
// before the store. A node whose value is used outside the group (or is a graph output) becomes an
// extra kernel output; it must be the sink, the anchor, or an epilogue/element-wise node whose
// shape equals the sink's, so it is stored at the same index as the sink.
//
// Horizontal fusion (a kMatmul group that is not connected): 2 to 4 parts, each a kMatmul group
// of its own with no prologue (anchor and element-wise epilogue only), whose anchors read the same
// value as A with the same layout (batch, m, k, A's transpose), and no path between the parts
// (the union is convex). The code generator computes them as one GEMM, A·[B1;B2;..], each part's
// epilogue storing its own outputs: the Q, K and V projections of attention in one kernel. No
// TVM rule forms such a group (ir/greedy.cc never does); only the search chooses it, by measuring.
//
// A layer norm folded into its consumer (a kMatmul group with `norm` set): the anchor's A is an
// nn.layer_norm over its last axis (A's k axis, A not transposed) whose result nothing outside the
// group reads. The code generator normalises each row of A while packing it, from the row's mean
// and deviation computed first, so the normalised rows are never written to memory. The norm's
// own producers (a residual add) may be inlined as for any prologue. Formed only by the search.
//
// Recomputation (`recompute`, any template but attention and horizontal): nodes the group computes
// but never stores, though nodes outside it read them too; each of those readers' groups computes
// them again. Each must be a cheap op (element-wise, broadcast or injective) that some member
// reads, never the anchor, the sink or a graph output. Paths that leave the group from one of
// them do not break convexity (the outside readers recompute, they do not wait for this group).
// A layer norm written op by op: its x - mean, read by both the variance and the division, is
// computed in both kernels and never written. Formed only by the search.
//
// A softmax, layer norm or RMS norm written op by op (kComposite with `row_norm` set,
// ir/norm_pattern.h): its reductions over one axis and the steps around them, which share
// nn.softmax's or nn.layer_norm's row kernel; the norm's output (a division, or a product by a
// reciprocal root) is the anchor, element-wise producers of x its prologue, element-wise consumers
// of the output (a layer norm's scale and shift) its epilogue; the steps before the output are
// never stored, and nothing outside the kernel may read them. Formed only by the search.
//
// Attention (kAttention, ir/attention_pattern.h): batch_matmul -> element-wise steps (scale,
// mask) -> softmax over the last axis -> batch_matmul, with inlinable producers of Q, K and V,
// computed as one kernel with an online softmax that never writes the score matrix. Also formed
// only by the search.
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/norm_pattern.h"

namespace fusetune {

enum class GroupTemplate { kElementwise, kReduce, kMatmul, kComposite, kAttention };
std::string_view TemplateName(GroupTemplate t);

// The pieces of an attention group (GroupTemplate::kAttention): out = softmax(chain(Q·Kᵀ)) · V.
struct AttentionNodes {
  ValueId scores = -1;         // the first nn.batch_matmul (Q, K): the group's `anchor`
  std::vector<ValueId> chain;  // element-wise steps from the scores to the softmax, in order
  ValueId softmax = -1;        // nn.softmax over the last axis
  ValueId output = -1;         // the second nn.batch_matmul (P, V): the group's `sink`
};

struct FusedGroup {
  GroupTemplate templ = GroupTemplate::kElementwise;
  std::vector<ValueId> nodes;    // ascending (= topological) order
  ValueId anchor = -1;           // the matmul/reduce/composite node; -1 for kElementwise
  ValueId sink = -1;             // the node no other group node reads
  std::vector<ValueId> inputs;   // values read from outside the group, ascending
  std::vector<ValueId> outputs;  // nodes whose value leaves the group, ascending (includes sink)
  // Horizontal groups only: one kMatmul group per sibling product, in anchor order; `anchor` is
  // the first part's and `sink` is -1 (each part has its own). Empty for every other group.
  std::vector<FusedGroup> parts;
  // Attention groups only.
  AttentionNodes attention;
  // kMatmul groups only: the nn.layer_norm folded into the packing of the anchor's A, or -1.
  ValueId norm = -1;
  // Members computed here but stored by no group (see above), ascending; never in `outputs`.
  std::vector<ValueId> recompute;
  // kComposite groups of a norm written op by op only (`anchor` is its output).
  NormOpByOp row_norm;

  bool Horizontal() const { return !parts.empty(); }
  bool Attention() const { return templ == GroupTemplate::kAttention; }
  bool NormWrittenOpByOp() const { return row_norm.output >= 0; }
};

// Parts of a horizontal group: 2 to 4 sibling products.
inline constexpr size_t kMinHorizontalParts = 2;
inline constexpr size_t kMaxHorizontalParts = 4;

// Returns the group when lowerable; otherwise nullopt and, when `why_not` is given, the reason.
// `recompute`: the members to recompute rather than store (a subset of `nodes`).
std::optional<FusedGroup> AnalyzeGroup(const Graph& graph, std::span<const ValueId> nodes,
                                       std::string* why_not = nullptr,
                                       std::span<const ValueId> recompute = {});

// The variant of a group that recomputes, instead of storing, its cheap member read outside it
// (and the cheap members that one reads), or nullopt when it has none or several: the candidate
// the search offers beside the group itself. One value per variant: sets holding several (a
// residual stream's chain of adds, each read by a norm) multiplied the variants for plans
// nothing picked. Cheap: data movement, or arithmetic without division, roots, powers or
// transcendentals (XLA duplicates only such producers): recomputing exp(x - max) in a softmax's
// sum and division measured a tie, x - mean in a layer norm's two reductions 1.3-1.6x. Never
// into a matmul (its prologue runs once per packed block, again for every block of the other
// operand), nor a member an anchor outside reads directly (a matmul, a reduction, a norm: such
// variants tripled a BERT layer's measurements, and joined a GPT-2 stack's residual stream into
// regions twice as slow to validate, for nothing the search chose). Nor a member that one group
// can share with all its readers: there fusing them is the answer, and recomputing would only work
// around the search's group-size limit (a GPT-2 GELU's ten ops).
std::optional<std::vector<ValueId>> RecomputableMembers(const Graph& graph,
                                                        std::span<const ValueId> nodes);

}  // namespace fusetune
