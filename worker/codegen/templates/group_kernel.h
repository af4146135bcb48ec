#pragma once
// Shared machinery of the element-wise, reduction and composite templates: a kernel under
// construction for one fused group (its parameters in ABI order), and the translation of inlined
// group expressions (ir/group_expr.h) into kernel IR: leaves become loads at flat indexes that
// are simplified so a reshape's unravel/ravel pairs cancel and broadcasts become stride-0 reads.
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ir/fusion.h"
#include "ir/graph.h"
#include "ir/group_expr.h"
#include "worker/codegen/kernel_ir.h"

namespace fusetune::codegen {

// A flat (row-major) index over the template's iteration axes: an affine part plus terms that
// are not affine (kept as IndexExprs times a stride).
struct FlatIndex {
  std::vector<int64_t> coef;  // per iteration axis
  int64_t constant = 0;
  std::vector<std::pair<IndexExpr, int64_t>> other;
  bool Affine() const { return other.empty(); }
};

// Flat index of `coords` (IndexExprs over iteration axes with the given extents) into `shape`.
FlatIndex MakeFlatIndex(std::span<const IndexExpr> coords, const Shape& shape,
                        std::span<const int64_t> extents);

// An IndexExpr over iteration axes as kernel IR, each axis replaced by `axes[axis]`.
KExpr ToKExpr(const IndexExpr& e, std::span<const KExpr> axes);
KExpr ToKExpr(const FlatIndex& index, std::span<const KExpr> axes);

class GroupKernel {
 public:
  GroupKernel(const Graph& graph, const FusedGroup& group, const std::string& name);

  const Graph& graph() const { return graph_; }
  const FusedGroup& group() const { return group_; }
  Kernel& kernel() { return kernel_; }
  int Buffer(ValueId value) const { return buffers_.at(value); }
  const TensorType& Type(ValueId value) const { return graph_.value(value).type; }

  // Kernel IR arguments for an inlined expression's leaves. Iteration axis i has extent
  // extents[i] and value axes[i]; kAnchor leaves are supplied by `anchor`. `flat` turns a load's
  // FlatIndex into kernel IR (default: ToKExpr(index, axes)); templates that collapse axes pass
  // their own.
  using AnchorFn = std::function<KExpr(const ExprLeaf&)>;
  using FlatFn = std::function<KExpr(const FlatIndex&)>;
  std::vector<KExpr> LeafArgs(const InlinedExpr& expr, std::span<const KExpr> axes,
                              std::span<const int64_t> extents, const AnchorFn& anchor = nullptr,
                              const FlatFn& flat = nullptr);
  // eval(expr, LeafArgs(...)).
  KExpr Lower(const InlinedExpr& expr, std::span<const KExpr> axes,
              std::span<const int64_t> extents, const AnchorFn& anchor = nullptr,
              const FlatFn& flat = nullptr);

  // dst[0] = combine(init, acc[0..lanes)) (combine: a ScalarExpr of (accumulator, value)):
  // halving steps acc[l] = combine(acc[l], acc[l + half]), one vector op each, down to an odd
  // count, then the rest in order. A chain of lanes - 1 scalar steps was about 45 cycles of
  // latency per reduced row (twice per softmax row).
  KStmt CombineLanes(int acc, int lanes, const ScalarExpr& combine, KExpr init, int dst);

  // for l in [0, extent): update(slot, l), `width` lanes at a time, over ReductionChains(extent,
  // width) accumulators of `width` lanes (slot < chains * width): whole blocks of `chains`
  // vectors give each vector its own accumulator, the rest goes to the first. With one
  // accumulator every add waited for the one before (a row of 768 floats: 48 dependent adds a
  // pass); four ran the op-by-op layer norm's row kernel 79 -> 63 us on an AMD Zen 4.
  KStmt ChainedLoop(int64_t extent, int width,
                    const std::function<KStmt(KExpr slot, KExpr l)>& update);

  // A fresh loop variable / local buffer.
  int Var(const std::string& name) { return kernel_.NewVar(name); }
  int Local(const std::string& name, DType dtype, int64_t size) {
    return kernel_.AddLocal(name, dtype, size);
  }

 private:
  const Graph& graph_;
  const FusedGroup& group_;
  Kernel kernel_;
  std::map<ValueId, int> buffers_;
};

// The accumulators of a ChainedLoop over `extent` elements `width` lanes at a time: up to 4, as
// many as whole vectors of the extent allow. Its accumulator buffers hold chains * width lanes.
int ReductionChains(int64_t extent, int width);

// Coordinates of the axes of `shape` recovered from one flat loop variable (row-major).
std::vector<KExpr> Unflatten(KExpr flat, std::span<const int64_t> shape);

}  // namespace fusetune::codegen
