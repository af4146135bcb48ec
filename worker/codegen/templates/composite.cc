// kComposite: nn.softmax and nn.layer_norm as whole-row kernels along their axis. Per row
// (parallel over rows): the prologue fills a row cache once, then
//   softmax:    m = max(row); row = exp(row - m), s = sum(row); out = epilogue(row * (1/s))
//   layer_norm: mean = sum(row)/n; inv = rsqrt(sum((row-mean)^2)/n + eps);
//               out = epilogue((row - mean) * inv * gamma + beta)
// Each pass is vectorized along the row with a vector accumulator (acc[l % W]) and a horizontal
// combine. Rows along an inner axis (axis not last) are read with a stride (gathers).
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

constexpr int64_t kMaxCachedRow = 1 << 18;  // floats (1 MiB of stack per thread at most)

ScalarExpr F(int i) { return sx::Arg(i, DType::kFloat32); }
ScalarExpr Bin(ScalarOp op, ScalarExpr a, ScalarExpr b) {
  return sx::Binary(op, std::move(a), std::move(b));
}
ScalarExpr MaxCombine() { return sx::Select(Bin(ScalarOp::kGt, F(1), F(0)), F(1), F(0)); }
ScalarExpr SumCombine() { return Bin(ScalarOp::kAdd, F(0), F(1)); }

}  // namespace

Kernel BuildCompositeKernel(const Graph& graph, const FusedGroup& group, const TemplateKnobs& knobs,
                            const std::string& name) {
  GroupKernel gk(graph, group, name);
  const Value& anchor = graph.value(group.anchor);
  // A softmax written op by op (ir/softmax_pattern.h) is nn.softmax of its input: the anchor is
  // its division, and the steps before it are this kernel's passes.
  const bool op_by_op = group.SoftmaxWrittenOpByOp();
  const std::string op = op_by_op ? "nn.softmax" : anchor.op->name;
  const bool softmax = op == "nn.softmax";
  if (!softmax && op != "nn.layer_norm") throw UserError(fmt::format("no row kernel for {}", op));
  const ValueId input = op_by_op ? group.softmax.input : anchor.inputs.at(0);
  const Shape& shape = graph.value(input).type.shape;
  const int rank = static_cast<int>(shape.size());
  if (rank == 0) throw UserError(fmt::format("{} of a scalar", op));
  const int axis =
      op_by_op ? group.softmax.axis : NormalizeAxis(op, anchor.attrs.GetInt("axis"), rank);
  std::vector<int64_t> extents(shape.begin(), shape.end());
  std::vector<int64_t> before(extents.begin(), extents.begin() + axis),
      after(extents.begin() + axis + 1, extents.end());
  const int64_t len = extents[axis];
  const int64_t inner =
      std::accumulate(after.begin(), after.end(), int64_t{1}, std::multiplies<>());
  const int64_t outer =
      std::accumulate(before.begin(), before.end(), int64_t{1}, std::multiplies<>());
  const int w = std::max(1, knobs.vector);
  const LoopKind vec = w > 1 ? LoopKind::kVectorized : LoopKind::kSerial;

  Kernel& k = gk.kernel();
  const int p = gk.Var("p");
  KExpr o = inner == 1 ? kir::Var(p) : kir::FloorDiv(kir::Var(p), kir::Int(inner));
  KExpr i = inner == 1 ? kir::Int(0) : kir::Mod(kir::Var(p), kir::Int(inner));
  std::vector<KExpr> before_coord = Unflatten(o, before), after_coord = Unflatten(i, after);
  // Coordinates of element l of the row, and its flat position.
  auto coords = [&](KExpr l) {
    std::vector<KExpr> c = before_coord;
    c.push_back(l);
    c.insert(c.end(), after_coord.begin(), after_coord.end());
    return c;
  };
  auto flat = [&](KExpr l) {
    return kir::Add(kir::Mul(kir::Add(kir::Mul(o, kir::Int(len)), l), kir::Int(inner)), i);
  };

  const InlinedExpr prologue = InlineValue(graph, group, input, IdentityCoords(rank));
  std::vector<InlinedExpr> epilogues;
  for (ValueId out : group.outputs)
    epilogues.push_back(InlineValue(graph, group, out, IdentityCoords(rank)));

  const bool cached = len <= kMaxCachedRow;
  // A prologue that is one contiguous load of the input is re-read from L1 by the later passes
  // rather than copied into the row cache: the copy was a memcpy call per row (with the exp
  // constants spilled around it), 10-20% of softmax at S = 256. Softmax still caches exp().
  const bool plain_load =
      inner == 1 && prologue.leaves.size() == 1 && prologue.expr->op == ScalarOp::kArg &&
      prologue.leaves[0].kind == ExprLeaf::Kind::kInput && !prologue.leaves[0].clamp;
  const bool fill_row = cached && !plain_load;
  const int row = gk.Local("row", DType::kFloat32, cached ? len : 1);
  const int acc = gk.Local("acc", DType::kFloat32, w);
  const int s1 = gk.Local("s1", DType::kFloat32, 1), s2 = gk.Local("s2", DType::kFloat32, 1);
  auto x = [&](KExpr l) { return gk.Lower(prologue, coords(l), extents); };
  auto row_value = [&](KExpr l) { return fill_row ? kir::Load(row, l) : x(l); };
  auto scalar = [](int buffer) { return kir::Load(buffer, kir::Int(0)); };
  auto fconst = [](double v) { return kir::Eval(sx::Const(v), {}); };

  std::vector<KStmt> stmts;
  auto combine_lanes = [&](double init, const ScalarExpr& combine, int dst) {
    stmts.push_back(gk.CombineLanes(acc, w, combine, fconst(init), dst));
  };
  // acc = init; for l: (row[l] = x(l)); acc[l % w] = combine(acc, value(l)); dst = combine(lanes).
  auto reduce_pass = [&](double init, const ScalarExpr& combine, bool fill,
                         const std::function<KExpr(KExpr)>& value, int dst) {
    const int l0 = gk.Var("l");
    stmts.push_back(kir::For(l0, w, vec, kir::Store(acc, kir::Var(l0), fconst(init)), w));
    const int l = gk.Var("l");
    KExpr slot = kir::Mod(kir::Var(l), kir::Int(w));
    std::vector<KStmt> body;
    if (fill && fill_row) body.push_back(kir::Store(row, kir::Var(l), x(kir::Var(l))));
    body.push_back(
        kir::Store(acc, slot, kir::Eval(combine, {kir::Load(acc, slot), value(kir::Var(l))})));
    stmts.push_back(kir::For(l, len, vec, kir::Block(std::move(body)), w));
    combine_lanes(init, combine, dst);
  };
  auto store_outputs = [&](const std::function<KExpr(KExpr)>& normalised) {
    const int l = gk.Var("l");
    KExpr value = normalised(kir::Var(l));
    std::vector<KStmt> stores;
    for (size_t n = 0; n < group.outputs.size(); ++n) {
      KExpr out = gk.Lower(epilogues[n], coords(kir::Var(l)), extents,
                           [&](const ExprLeaf&) { return value; });
      stores.push_back(kir::Store(gk.Buffer(group.outputs[n]), flat(kir::Var(l)), out));
    }
    stmts.push_back(kir::For(l, len, vec, kir::Block(std::move(stores)), w));
  };

  if (softmax) {
    reduce_pass(-std::numeric_limits<double>::infinity(), MaxCombine(), true, row_value, s1);
    // exp(x - max) is kept in the row cache for the normalising pass.
    ScalarExpr shifted_exp = sx::Unary(ScalarOp::kExp, Bin(ScalarOp::kSub, F(0), F(1)));
    auto e = [&](KExpr l) { return kir::Eval(shifted_exp, {row_value(l), scalar(s1)}); };
    if (cached) {
      const int l0 = gk.Var("l");
      const int l1 = gk.Var("l");
      stmts.push_back(kir::For(l0, w, vec, kir::Store(acc, kir::Var(l0), fconst(0.0)), w));
      KExpr slot = kir::Mod(kir::Var(l1), kir::Int(w));
      stmts.push_back(kir::For(
          l1, len, vec,
          kir::Block({kir::Store(row, kir::Var(l1), e(kir::Var(l1))),
                      kir::Store(acc, slot,
                                 kir::Eval(SumCombine(),
                                           {kir::Load(acc, slot), kir::Load(row, kir::Var(l1))}))}),
          w));
      combine_lanes(0.0, SumCombine(), s2);
    } else {
      reduce_pass(0.0, SumCombine(), false, e, s2);
    }
    stmts.push_back(kir::Store(s2, kir::Int(0),
                               kir::Eval(Bin(ScalarOp::kDiv, sx::Const(1.0), F(0)), {scalar(s2)})));
    store_outputs([&](KExpr l) {
      KExpr num = cached ? kir::Load(row, l) : e(l);
      return kir::Eval(Bin(ScalarOp::kMul, F(0), F(1)), {num, scalar(s2)});
    });
  } else {
    const double eps = anchor.attrs.GetFloat("epsilon");
    const bool center = anchor.attrs.GetBool("center"), scale = anchor.attrs.GetBool("scale");
    reduce_pass(0.0, SumCombine(), true, row_value, s1);
    stmts.push_back(kir::Store(
        s1, kir::Int(0),
        kir::Eval(Bin(ScalarOp::kDiv, F(0), sx::Const(static_cast<double>(len))), {scalar(s1)})));
    ScalarExpr square_dev =
        Bin(ScalarOp::kMul, Bin(ScalarOp::kSub, F(0), F(1)), Bin(ScalarOp::kSub, F(0), F(1)));
    reduce_pass(
        0.0, SumCombine(), false,
        [&](KExpr l) {
          return kir::Eval(square_dev, {row_value(l), scalar(s1)});
        },
        s2);
    ScalarExpr inv = sx::Unary(
        ScalarOp::kRsqrt,
        Bin(ScalarOp::kAdd, Bin(ScalarOp::kDiv, F(0), sx::Const(static_cast<double>(len))),
            sx::Const(eps)));
    stmts.push_back(kir::Store(s2, kir::Int(0), kir::Eval(inv, {scalar(s2)})));
    InlinedExpr gamma =
        InlineValue(graph, group, anchor.inputs.at(1), std::vector<IndexExpr>{ix::Var(axis)});
    InlinedExpr beta =
        InlineValue(graph, group, anchor.inputs.at(2), std::vector<IndexExpr>{ix::Var(axis)});
    store_outputs([&](KExpr l) {
      KExpr y = kir::Eval(Bin(ScalarOp::kMul, Bin(ScalarOp::kSub, F(0), F(1)), F(2)),
                          {row_value(l), scalar(s1), scalar(s2)});
      if (scale)
        y = kir::Eval(Bin(ScalarOp::kMul, F(0), F(1)), {y, gk.Lower(gamma, coords(l), extents)});
      if (center)
        y = kir::Eval(Bin(ScalarOp::kAdd, F(0), F(1)), {y, gk.Lower(beta, coords(l), extents)});
      return y;
    });
  }
  KStmt body = kir::Block(std::move(stmts));
  body = kir::Alloc(row, kir::Alloc(acc, kir::Alloc(s1, kir::Alloc(s2, body))));
  k.body =
      kir::For(p, outer * inner, knobs.parallel ? LoopKind::kParallel : LoopKind::kSerial, body);
  return std::move(k);
}

}  // namespace fusetune::codegen
