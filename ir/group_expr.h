#pragma once
// The inlined expression of a value inside a fused group: what makes code-generation templates
// small. Starting from a group member at some position (coordinates given as IndexExprs over the
// template's iteration variables), every producer inside the group is inlined by composing its
// op's index map (`access`) and element expression (`scalar`) from the catalog, until the walk
// reaches values that come from outside the group (loads of kernel inputs) or the group's anchor.
//
//   exp(subtract(%x, %m)) at (i, j, k)  ->  expr = exp(arg0 - arg1),
//                                           leaves = [load %x at (i, j, k), load %m at (i, j, 0)]
//
// Leaves are deduplicated (the same value at the same index is one leaf), and a value reached
// twice at the same position is inlined once, so the result is a DAG no larger than the group.
#include <optional>
#include <span>
#include <vector>

#include "ir/fusion.h"
#include "ir/graph.h"
#include "ir/index_expr.h"
#include "ir/scalar_expr.h"

namespace fusetune {

struct ExprLeaf {
  enum class Kind {
    kInput,   // load of `value` (a group input) at `index` (one IndexExpr per dim of its shape)
    kAnchor,  // the anchor's result at `index` (its output coordinates); the template supplies it
    kIndex,   // the integer value of index[0] itself (int32), e.g. a concatenate bound test
  };
  Kind kind = Kind::kInput;
  ValueId value = -1;
  std::vector<IndexExpr> index;
  DType dtype = DType::kFloat32;
  // The load sits under a select that may not pick it (concatenate), so `index` can be out of
  // bounds where the value is unused: the template must clamp each coordinate into the shape.
  bool clamp = false;
};

struct InlinedExpr {
  ScalarExpr expr;  // kArg i is leaves[i]
  std::vector<ExprLeaf> leaves;
};

struct InlineOptions {
  // Stop at the anchor (it becomes a kAnchor leaf). When false, reaching the anchor is a bug
  // (FT_CHECK): use it for element-wise groups and prologues that cannot reach an anchor.
  bool stop_at_anchor = true;
};

// `value`'s element at `coords` (one IndexExpr per dim of value's shape, over the iteration
// variables) with every group producer inlined. `value` may be a group member or a group input.
InlinedExpr InlineValue(const Graph& graph, const FusedGroup& group, ValueId value,
                        std::span<const IndexExpr> coords, const InlineOptions& options = {});

// The identity coordinates Var(0) .. Var(rank - 1).
std::vector<IndexExpr> IdentityCoords(int rank);

}  // namespace fusetune
