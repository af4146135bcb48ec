// kElementwise: iterate the sink's output space with every producer inlined.
//
//   1. inline each group output at the identity coordinates of the sink's shape
//   2. flat index of every load (affine part + leftovers, reshape pairs cancelled)
//   3. collapse adjacent axes a, a+1 when every load is affine in both with
//      coef[a] == coef[a+1] * extent[a+1] (contiguous for all of them: broadcasts block it)
//   4. parallel for p over the outer collapsed axes { vectorized for v over the innermost {
//        out_k[flat] = expr_k } }
#include <algorithm>
#include <functional>
#include <numeric>

#include <fmt/format.h>

#include "ir/error.h"
#include "ir/group_expr.h"
#include "worker/codegen/templates/group_kernel.h"
#include "worker/codegen/templates/templates.h"

namespace fusetune::codegen {
namespace {

void CollectVars(const IndexExpr& e, std::vector<bool>& used) {
  if (!e) return;
  if (e->op == IndexOp::kVar) used[e->var] = true;
  CollectVars(e->a, used);
  CollectVars(e->b, used);
}

}  // namespace

Kernel BuildElementwiseKernel(const Graph& graph, const FusedGroup& group,
                              const TemplateKnobs& knobs, const std::string& name) {
  GroupKernel gk(graph, group, name);
  Shape shape = graph.value(group.sink).type.shape;
  const int rank = static_cast<int>(shape.size());
  std::vector<int64_t> extents(shape.begin(), shape.end());
  if (extents.empty()) extents.push_back(1);  // a scalar: one iteration of one axis
  const int axes = static_cast<int>(extents.size());

  std::vector<InlinedExpr> exprs;
  for (ValueId out : group.outputs) {
    FT_CHECK(graph.value(out).type.shape == shape,
             "element-wise group output with a shape other than the sink's");
    InlineOptions options;
    options.stop_at_anchor = false;
    exprs.push_back(InlineValue(graph, group, out, IdentityCoords(rank), options));
  }

  // Which axes may merge with their inner neighbour: blocked by any non-affine use.
  std::vector<bool> irregular(axes, false);
  std::vector<FlatIndex> loads;
  for (const InlinedExpr& e : exprs) {
    for (const ExprLeaf& leaf : e.leaves) {
      if (leaf.kind == ExprLeaf::Kind::kInput && !leaf.clamp) {
        FlatIndex index = MakeFlatIndex(leaf.index, graph.value(leaf.value).type.shape, extents);
        for (const auto& [term, stride] : index.other) CollectVars(term, irregular);
        loads.push_back(std::move(index));
      } else {
        for (const IndexExpr& i : leaf.index) CollectVars(i, irregular);
      }
    }
  }
  // dims: ranges [first, last] of axes that one loop covers.
  std::vector<std::pair<int, int>> dims;
  for (int a = 0; a < axes; ++a) dims.push_back({a, a});
  for (int d = static_cast<int>(dims.size()) - 2; d >= 0; --d) {
    auto [first, mid] = dims[d];
    auto [next, last] = dims[d + 1];
    bool ok = true;
    for (int a = first; a <= last && ok; ++a) ok = !irregular[a];
    for (const FlatIndex& index : loads) {
      if (!ok) break;
      // Row-major consistency of the merged range, given the innermost axis's coefficient.
      int64_t expect = index.coef[last];
      for (int a = last; a >= first && ok; --a) {
        if (extents[a] != 1 && index.coef[a] != expect) ok = false;
        expect *= extents[a];
      }
    }
    if (ok) {
      dims[d] = {first, last};
      dims.erase(dims.begin() + d + 1);
    }
    (void)mid;
    (void)next;
  }

  Kernel& k = gk.kernel();
  std::vector<int64_t> range_extent;
  for (auto [first, last] : dims) {
    range_extent.push_back(1);
    for (int a = first; a <= last; ++a) range_extent.back() *= extents[a];
  }
  // Loops: each covers one axis range, with a multiplier when a long 1-D range is split in two
  // (outer chunks for the threads, an inner vectorized part).
  struct Loop {
    int range;
    int64_t extent;
    int64_t mult;
  };
  std::vector<Loop> loops;
  for (int r = 0; r < static_cast<int>(dims.size()); ++r) loops.push_back({r, range_extent[r], 1});
  if (loops.size() == 1 && loops[0].extent >= 65536) {
    for (int64_t chunk = 4096; chunk >= 512; chunk -= 16) {
      if (loops[0].extent % chunk == 0) {
        loops = {{0, loops[0].extent / chunk, chunk}, {0, chunk, 1}};
        break;
      }
    }
  }
  const int nloops = static_cast<int>(loops.size());

  std::vector<int64_t> outer_extents;
  for (int l = 0; l + 1 < nloops; ++l) outer_extents.push_back(loops[l].extent);
  const int64_t outer_total =
      std::accumulate(outer_extents.begin(), outer_extents.end(), int64_t{1}, std::multiplies<>());
  const int64_t inner_extent = loops[nloops - 1].extent;
  FlatIndex out_index;
  out_index.coef.assign(axes, 0);
  {
    int64_t s = 1;
    for (int a = axes - 1; a >= 0; --a) {
      out_index.coef[a] = s;
      s *= extents[a];
    }
  }

  // The stores of one iteration, given the innermost loop's position and the flattened outer
  // position as kernel IR.
  auto stores_at = [&](KExpr inner_pos, KExpr outer_pos) {
    std::vector<KExpr> loop_var(nloops);
    loop_var[nloops - 1] = inner_pos;
    if (nloops > 1) {
      std::vector<KExpr> coords = Unflatten(outer_pos, outer_extents);
      for (int l = 0; l + 1 < nloops; ++l) loop_var[l] = coords[l];
    }
    // The position within each axis range, then each original axis's coordinate (for leftover
    // non-affine terms and index leaves).
    std::vector<KExpr> range_pos(dims.size(), kir::Int(0));
    for (int l = 0; l < nloops; ++l)
      range_pos[loops[l].range] =
          kir::Add(range_pos[loops[l].range], kir::Mul(loop_var[l], kir::Int(loops[l].mult)));
    std::vector<KExpr> axis_coord(axes);
    for (size_t r = 0; r < dims.size(); ++r) {
      std::vector<int64_t> sub(extents.begin() + dims[r].first,
                               extents.begin() + dims[r].second + 1);
      std::vector<KExpr> c = Unflatten(range_pos[r], sub);
      for (int a = dims[r].first; a <= dims[r].second; ++a) axis_coord[a] = c[a - dims[r].first];
    }
    // A load's affine part in loop variables: a range moves with its innermost axis's coefficient.
    auto flat = [&](const FlatIndex& index) {
      KExpr out = kir::Int(index.constant);
      for (int l = 0; l < nloops; ++l) {
        int64_t c = index.coef[dims[loops[l].range].second] * loops[l].mult;
        if (c != 0) out = kir::Add(out, kir::Mul(loop_var[l], kir::Int(c)));
      }
      for (const auto& [e, stride] : index.other)
        out = kir::Add(out, kir::Mul(ToKExpr(e, axis_coord), kir::Int(stride)));
      return out;
    };
    std::vector<KStmt> stores;
    for (size_t i = 0; i < exprs.size(); ++i) {
      KExpr value = gk.Lower(exprs[i], axis_coord, extents, nullptr, flat);
      stores.push_back(kir::Store(gk.Buffer(group.outputs[i]), flat(out_index), value));
    }
    return kir::Block(std::move(stores));
  };

  // Tiling for reads that gather along the innermost loop (a transpose): a W-wide vector of the
  // output reads W input rows; visiting T consecutive outer positions per block of W columns
  // reuses those rows' cache lines (and TLB entries) T times instead of once.
  const int w = knobs.vector;
  bool gathers = false;
  for (const FlatIndex& index : loads) {
    const int last = dims[loops[nloops - 1].range].second;
    int64_t c = index.coef[last] * loops[nloops - 1].mult;
    if (c != 0 && c != 1) gathers = true;
    for (const auto& [e, stride] : index.other) {
      std::vector<bool> used(axes, false);
      CollectVars(e, used);
      for (int a = dims[loops[nloops - 1].range].first; a <= last; ++a)
        gathers = gathers || used[a];
    }
  }
  int64_t tile = 1;
  if (knobs.tile && gathers && nloops > 1 && w > 1 && inner_extent >= w) {
    for (int64_t t : {16, 8, 4, 2}) {
      if (outer_extents.back() % t == 0) {
        tile = t;
        break;
      }
    }
  }

  KStmt body;
  if (tile > 1) {
    const int pb = gk.Var("pb"), vb = gk.Var("vb"), pi = gk.Var("pi"), vi = gk.Var("vi");
    KExpr outer_pos = kir::Add(kir::Mul(kir::Var(pb), kir::Int(tile)), kir::Var(pi));
    const int64_t full = inner_extent / w, rest = inner_extent % w;
    std::vector<KStmt> blocks;
    KExpr inner_pos = kir::Add(kir::Mul(kir::Var(vb), kir::Int(w)), kir::Var(vi));
    blocks.push_back(kir::For(
        vb, full, LoopKind::kSerial,
        kir::For(pi, tile, LoopKind::kSerial,
                 kir::For(vi, w, LoopKind::kVectorized, stores_at(inner_pos, outer_pos), w))));
    if (rest > 0) {
      const int vr = gk.Var("vr");
      KExpr rest_pos = kir::Add(kir::Int(full * w), kir::Var(vr));
      blocks.push_back(
          kir::For(pi, tile, LoopKind::kSerial,
                   kir::For(vr, rest, LoopKind::kVectorized, stores_at(rest_pos, outer_pos), w)));
    }
    body =
        kir::For(pb, outer_total / tile, knobs.parallel ? LoopKind::kParallel : LoopKind::kSerial,
                 kir::Block(std::move(blocks)));
  } else {
    const int inner = gk.Var("v");
    const int outer = nloops > 1 ? gk.Var("p") : -1;
    body = stores_at(kir::Var(inner), outer >= 0 ? kir::Var(outer) : kir::Int(0));
    if (w > 1 && inner_extent > 1) {
      body = kir::For(inner, inner_extent, LoopKind::kVectorized, body, w);
    } else {
      body = kir::For(inner, inner_extent, LoopKind::kSerial, body);
    }
    if (outer >= 0)
      body = kir::For(outer, outer_total, knobs.parallel ? LoopKind::kParallel : LoopKind::kSerial,
                      body);
  }
  k.body = body;
  return std::move(k);
}

}  // namespace fusetune::codegen
