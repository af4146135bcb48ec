// kReduce: sum / max / min / mean with the prologue inlined into the reads and the epilogue
// applied to the reduced value before the store.
//
// Last input axis reduced (rows):      parallel for row { acc[W] = init
//                                        for reduced axes.. { vectorized for r: acc[r % W] op=
//                                        x(row, r) } s = combine lanes; out[row] =
//                                        epilogue(finalize(s)) }
// Last input axis kept (columns):      parallel for outer { for column chunks {
//                                        vectorized for t: acc[t] = init
//                                        for reduced axes.. { vectorized for t: acc[t] op= x(outer,
//                                        .., t) } vectorized for t: out[outer, t] =
//                                        epilogue(finalize(acc[t])) } }
#include <algorithm>
#include <functional>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "ir/error.h"
#include "ir/group_expr.h"
#include "worker/codegen/templates/group_kernel.h"
#include "worker/codegen/templates/templates.h"

namespace fusetune::codegen {
namespace {

// The combiner as a ScalarExpr of (accumulator, value), NaN handling as in the reference.
ScalarExpr Combine(ReduceCombiner combiner, DType dtype) {
  ScalarExpr a = sx::Arg(0, dtype), v = sx::Arg(1, dtype);
  switch (combiner) {
    case ReduceCombiner::kSum:
      return sx::Binary(ScalarOp::kAdd, a, v);
    case ReduceCombiner::kMax:
      return sx::Select(sx::Binary(ScalarOp::kNe, v, v), v,
                        sx::Select(sx::Binary(ScalarOp::kGt, v, a), v, a));
    case ReduceCombiner::kMin:
      return sx::Select(sx::Binary(ScalarOp::kNe, v, v), v,
                        sx::Select(sx::Binary(ScalarOp::kLt, v, a), v, a));
  }
  return a;
}

double InitValue(ReduceCombiner combiner, DType dtype) {
  const bool is_float = dtype == DType::kFloat32;
  switch (combiner) {
    case ReduceCombiner::kSum:
      return 0.0;
    case ReduceCombiner::kMax:
      return is_float ? -std::numeric_limits<double>::infinity()
                      : std::numeric_limits<int32_t>::min();
    case ReduceCombiner::kMin:
      return is_float ? std::numeric_limits<double>::infinity()
                      : std::numeric_limits<int32_t>::max();
  }
  return 0.0;
}

}  // namespace

Kernel BuildReduceKernel(const Graph& graph, const FusedGroup& group, const TemplateKnobs& knobs,
                         const std::string& name) {
  GroupKernel gk(graph, group, name);
  const Value& anchor = graph.value(group.anchor);
  const ValueId input = anchor.inputs.at(0);
  const TensorType& in_type = graph.value(input).type;
  const Shape& in_shape = in_type.shape;
  const int rank = in_type.rank();
  const ReduceInfo info = anchor.op->reduce;
  const DType dtype = anchor.type.dtype;
  FT_CHECK(dtype == DType::kFloat32 || dtype == DType::kInt32, "reduction of a bool tensor");
  std::vector<int> reduced = ReduceAxes(in_type, anchor.attrs);
  std::vector<bool> is_reduced(rank, false);
  for (int a : reduced) is_reduced[a] = true;
  std::vector<int> kept;
  for (int a = 0; a < rank; ++a)
    if (!is_reduced[a]) kept.push_back(a);
  int64_t count = 1;
  for (int a : reduced) count *= in_shape[a];
  const bool keepdims = anchor.attrs.GetBool("keepdims");
  const Shape& out_shape = anchor.type.shape;
  const int w = std::max(1, knobs.vector);

  const ScalarExpr combine = Combine(info.combiner, dtype);
  const KExpr init = kir::Eval(sx::Const(InitValue(info.combiner, dtype), dtype), {});
  auto finalize = [&](KExpr acc) {
    if (!info.mean) return acc;
    return kir::Eval(
        sx::Binary(ScalarOp::kDiv, sx::Arg(0, dtype), sx::Const(static_cast<double>(count), dtype)),
        {acc});
  };
  std::vector<InlinedExpr> epilogues;
  for (ValueId out : group.outputs) {
    FT_CHECK(graph.value(out).type.shape == out_shape,
             "reduction group output with a shape other than the anchor's");
    epilogues.push_back(
        InlineValue(graph, group, out, IdentityCoords(static_cast<int>(out_shape.size()))));
  }
  const InlinedExpr prologue = InlineValue(graph, group, input, IdentityCoords(rank));

  // Output coordinates from the kept axes' coordinates (reduced axes are 0 with keepdims).
  auto out_coords = [&](const std::vector<KExpr>& kept_coord) {
    std::vector<KExpr> coords;
    size_t next = 0;
    for (int a = 0; a < rank; ++a) {
      if (is_reduced[a]) {
        if (keepdims) coords.push_back(kir::Int(0));
      } else {
        coords.push_back(kept_coord[next++]);
      }
    }
    return coords;
  };
  std::vector<int64_t> out_extents(out_shape.begin(), out_shape.end());
  std::vector<int64_t> in_extents(in_shape.begin(), in_shape.end());

  // Nested loops over the reduced axes (minus `skip`), innermost last, around `body`.
  auto reduced_loops = [&](std::vector<KExpr>& coord, int skip,
                           const std::function<KStmt()>& body) {
    std::vector<int> vars;
    for (int a : reduced) {
      if (a == skip) continue;
      vars.push_back(gk.Var(fmt::format("r{}", a)));
      coord[a] = kir::Var(vars.back());
    }
    KStmt s = body();
    size_t i = vars.size();
    for (auto it = reduced.rbegin(); it != reduced.rend(); ++it) {
      if (*it == skip) continue;
      s = kir::For(vars[--i], in_shape[*it], LoopKind::kSerial, s);
    }
    return s;
  };

  Kernel& k = gk.kernel();
  const int p = gk.Var("p");
  std::vector<int64_t> kept_extents;
  const bool rows = rank == 0 || is_reduced[rank - 1];
  if (rows) {
    for (int a : kept) kept_extents.push_back(in_shape[a]);
  } else {
    for (size_t i = 0; i + 1 < kept.size(); ++i) kept_extents.push_back(in_shape[kept[i]]);
  }
  const int64_t outer_total =
      std::accumulate(kept_extents.begin(), kept_extents.end(), int64_t{1}, std::multiplies<>());
  std::vector<KExpr> kept_coord = Unflatten(kir::Var(p), kept_extents);
  std::vector<KExpr> coord(rank, kir::Int(0));
  for (size_t i = 0; i < kept_extents.size(); ++i) coord[kept[i]] = kept_coord[i];

  KStmt body;
  if (rows) {
    // One vector for each of the last axis' chains (ChainedLoop).
    const int wa = rank > 0 ? w * ReductionChains(in_shape[rank - 1], w) : w;
    const int acc = gk.Local("acc", dtype, wa), res = gk.Local("res", dtype, 1);
    const int lane = gk.Var("l");
    std::vector<KStmt> stmts;
    stmts.push_back(
        kir::For(lane, wa, LoopKind::kVectorized, kir::Store(acc, kir::Var(lane), init), wa));
    if (rank > 0) {
      const int last = rank - 1;
      stmts.push_back(reduced_loops(coord, last, [&] {
        return gk.ChainedLoop(in_shape[last], w, [&](KExpr slot, KExpr l) {
          coord[last] = l;
          KExpr value = gk.Lower(prologue, coord, in_extents);
          return kir::Store(acc, slot, kir::Eval(combine, {kir::Load(acc, slot), value}));
        });
      }));
    } else {
      stmts.push_back(kir::Store(acc, kir::Int(0),
                                 kir::Eval(combine, {kir::Load(acc, kir::Int(0)),
                                                     gk.Lower(prologue, coord, in_extents)})));
    }
    stmts.push_back(gk.CombineLanes(acc, wa, combine, init, res));
    KExpr value = finalize(kir::Load(res, kir::Int(0)));
    std::vector<KExpr> oc = out_coords(kept_coord);
    for (size_t i = 0; i < group.outputs.size(); ++i) {
      KExpr out = gk.Lower(epilogues[i], oc, out_extents, [&](const ExprLeaf&) { return value; });
      stmts.push_back(kir::Store(gk.Buffer(group.outputs[i]), kir::Var(p), out));
    }
    body = kir::Alloc(acc, kir::Alloc(res, kir::Block(std::move(stmts))));
  } else {
    const int t_axis = rank - 1;
    const int64_t extent = in_shape[t_axis];
    const int64_t chunk = std::min<int64_t>(extent, 4096);
    const int acc = gk.Local("acc", dtype, chunk);
    // One chunk of columns [base, base + n).
    auto chunk_body = [&](KExpr base, int64_t n) {
      std::vector<KStmt> stmts;
      const int t0 = gk.Var("t");
      const LoopKind vec = w > 1 ? LoopKind::kVectorized : LoopKind::kSerial;
      stmts.push_back(kir::For(t0, n, vec, kir::Store(acc, kir::Var(t0), init), w));
      const int t1 = gk.Var("t");
      std::vector<KExpr> c = coord;
      stmts.push_back(reduced_loops(c, -1, [&] {
        c[t_axis] = kir::Add(base, kir::Var(t1));
        KExpr value = gk.Lower(prologue, c, in_extents);
        KStmt update = kir::Store(acc, kir::Var(t1),
                                  kir::Eval(combine, {kir::Load(acc, kir::Var(t1)), value}));
        return kir::For(t1, n, vec, update, w);
      }));
      const int t2 = gk.Var("t");
      std::vector<KExpr> kc = kept_coord;
      kc.push_back(kir::Add(base, kir::Var(t2)));
      std::vector<KExpr> oc = out_coords(kc);
      KExpr value = finalize(kir::Load(acc, kir::Var(t2)));
      KExpr flat = kir::Add(kir::Mul(kir::Var(p), kir::Int(extent)), kc.back());
      std::vector<KStmt> stores;
      for (size_t i = 0; i < group.outputs.size(); ++i) {
        KExpr out = gk.Lower(epilogues[i], oc, out_extents, [&](const ExprLeaf&) { return value; });
        stores.push_back(kir::Store(gk.Buffer(group.outputs[i]), flat, out));
      }
      stmts.push_back(kir::For(t2, n, vec, kir::Block(std::move(stores)), w));
      return kir::Block(std::move(stmts));
    };
    std::vector<KStmt> chunks;
    const int64_t full = extent / chunk, rest = extent % chunk;
    if (full == 1) {
      chunks.push_back(chunk_body(kir::Int(0), chunk));
    } else if (full > 1) {
      const int c = gk.Var("c");
      chunks.push_back(kir::For(c, full, LoopKind::kSerial,
                                chunk_body(kir::Mul(kir::Var(c), kir::Int(chunk)), chunk)));
    }
    if (rest > 0) chunks.push_back(chunk_body(kir::Int(full * chunk), rest));
    body = kir::Alloc(acc, kir::Block(std::move(chunks)));
  }
  k.body = kir::For(p, outer_total, knobs.parallel ? LoopKind::kParallel : LoopKind::kSerial, body);
  return std::move(k);
}

}  // namespace fusetune::codegen
