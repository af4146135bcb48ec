// kComposite: nn.softmax and nn.layer_norm (or one written op by op, ir/norm_pattern.h) as
// whole-row kernels along their axis. Per row (parallel over rows): the prologue fills a row
// cache once, then
//   softmax:    m = max(row); row = exp(row - m), s = sum(row); out = epilogue(row * (1/s))
//   layer_norm: mean = sum(row)/n; inv = rsqrt(sum((row-mean)^2)/n + eps);
//               out = epilogue((row - mean) * inv * gamma + beta)
//   RMS norm:   the same with mean = 0, one pass before the writes (written op by op only)
// Each pass is vectorized along the row with a vector accumulator (acc[l % W]) and a horizontal
// combine. Rows along an inner axis (axis not last) are read with a stride (gathers).
// online=1 gathers a row's statistics in one pass instead of two, then writes the outputs:
//   softmax:    per lane a running max m and a sum s rescaled when m grows (one exp per element:
//               exp(-|x - m|) serves either case); S = sum of s * exp(m - M) over the lanes;
//               out = epilogue(exp(row - M) / S), exp computed again instead of cached
//   layer_norm: sums of d = row - shift and of d^2, the shift the mean of the row's first vector
//               (so the difference of squares does not cancel when the mean is large against the
//               spread, nor when the first element is an outlier)
// It reads the row twice instead of three times and computes exp twice: rows past the caches are
// where it can pay, so the search measures it and keeps it only where it is faster.
#include <algorithm>
#include <functional>
#include <limits>
#include <numeric>
#include <optional>

#include <fmt/format.h>

#include "ir/error.h"
#include "ir/group_expr.h"
#include "ir/norm_pattern.h"
#include "ir/schedule_space.h"
#include "worker/codegen/templates/group_kernel.h"
#include "worker/codegen/templates/templates.h"

namespace fusetune::codegen {
namespace {

ScalarExpr F(int i) { return sx::Arg(i, DType::kFloat32); }
ScalarExpr Bin(ScalarOp op, ScalarExpr a, ScalarExpr b) {
  return sx::Binary(op, std::move(a), std::move(b));
}
ScalarExpr MaxCombine() { return sx::Select(Bin(ScalarOp::kGt, F(1), F(0)), F(1), F(0)); }
ScalarExpr SumCombine() { return Bin(ScalarOp::kAdd, F(0), F(1)); }
// The online softmax's step (sum, x, -, max) -> the new sum: exp(min - max) is exp(x - m) when x
// is not above the running max m, else the factor that rescales the sum to the new max x.
ScalarExpr OnlineSumStep() {
  ScalarExpr e = sx::Unary(ScalarOp::kExp, Bin(ScalarOp::kSub, Bin(ScalarOp::kMin, F(1), F(3)),
                                               Bin(ScalarOp::kMax, F(1), F(3))));
  return sx::Select(Bin(ScalarOp::kGt, F(1), F(3)),
                    Bin(ScalarOp::kAdd, Bin(ScalarOp::kMul, F(0), e), sx::Const(1.0)),
                    Bin(ScalarOp::kAdd, F(0), e));
}

}  // namespace

Kernel BuildCompositeKernel(const Graph& graph, const FusedGroup& group, const TemplateKnobs& knobs,
                            const std::string& name) {
  GroupKernel gk(graph, group, name);
  const Value& anchor = graph.value(group.anchor);
  // A softmax, layer norm or RMS norm written op by op (ir/norm_pattern.h) is nn.softmax,
  // nn.layer_norm (unscaled, unshifted) or a layer norm that takes no mean, of its input: the
  // anchor is its output, and the steps before it are this kernel's passes.
  const bool op_by_op = group.NormWrittenOpByOp();
  const std::string op = op_by_op ? std::string(group.row_norm.Name()) : anchor.op->name;
  if (!op_by_op && op != "nn.softmax" && op != "nn.layer_norm")
    throw UserError(fmt::format("no row kernel for {}", op));
  const bool softmax = op_by_op ? group.row_norm.kind == RowNorm::kSoftmax : op == "nn.softmax";
  const bool centred = !op_by_op || group.row_norm.kind != RowNorm::kRmsNorm;
  if (!centred && knobs.online)
    throw UserError("schedule knob online=1: an RMS norm's statistics are one pass already");
  const ValueId input = op_by_op ? group.row_norm.input : anchor.inputs.at(0);
  const Shape& shape = graph.value(input).type.shape;
  const int rank = static_cast<int>(shape.size());
  if (rank == 0) throw UserError(fmt::format("{} of a scalar", op));
  const int axis =
      op_by_op ? group.row_norm.axis : NormalizeAxis(op, anchor.attrs.GetInt("axis"), rank);
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

  const bool cached = len <= kRowCacheFloats;  // 1 MiB of stack per thread at most
  // A prologue that is one contiguous load of the input is re-read from L1 by the later passes
  // rather than copied into the row cache: the copy was a memcpy call per row (with the exp
  // constants spilled around it), 10-20% of softmax at S = 256. Softmax still caches exp().
  const bool plain_load =
      inner == 1 && prologue.leaves.size() == 1 && prologue.expr->op == ScalarOp::kArg &&
      prologue.leaves[0].kind == ExprLeaf::Kind::kInput && !prologue.leaves[0].clamp;
  const bool fill_row = cached && !plain_load;
  const int row = gk.Local("row", DType::kFloat32, cached ? len : 1);
  // The accumulators: `wa` lanes, one vector for each of the row's chains (ChainedLoop).
  const int wa = w * ReductionChains(len, w);
  const int acc = gk.Local("acc", DType::kFloat32, wa);
  const int s1 = gk.Local("s1", DType::kFloat32, 1), s2 = gk.Local("s2", DType::kFloat32, 1);
  // online=1 only: a second vector accumulator, a copy of the lanes, the layer norm's shift.
  const int sums = knobs.online ? gk.Local("sums", DType::kFloat32, wa) : -1;
  const int lanes = knobs.online ? gk.Local("lanes", DType::kFloat32, wa) : -1;
  const int shift = knobs.online && !softmax ? gk.Local("shift", DType::kFloat32, 1) : -1;
  auto x = [&](KExpr l) { return gk.Lower(prologue, coords(l), extents); };
  auto row_value = [&](KExpr l) { return fill_row ? kir::Load(row, l) : x(l); };
  auto scalar = [](int buffer) { return kir::Load(buffer, kir::Int(0)); };
  auto fconst = [](double v) { return kir::Eval(sx::Const(v), {}); };

  std::vector<KStmt> stmts;
  auto combine_lanes = [&](double init, const ScalarExpr& combine, int dst) {
    stmts.push_back(gk.CombineLanes(acc, wa, combine, fconst(init), dst));
  };
  // acc = init; for l: (row[l] = x(l)); acc[slot] = combine(acc, value(l)); dst = combine(lanes).
  auto reduce_pass = [&](double init, const ScalarExpr& combine, bool fill,
                         const std::function<KExpr(KExpr)>& value, int dst) {
    const int l0 = gk.Var("l");
    stmts.push_back(kir::For(l0, wa, vec, kir::Store(acc, kir::Var(l0), fconst(init)), wa));
    stmts.push_back(gk.ChainedLoop(len, w, [&](KExpr slot, KExpr l) {
      std::vector<KStmt> body;
      if (fill && fill_row) body.push_back(kir::Store(row, l, x(l)));
      body.push_back(kir::Store(acc, slot, kir::Eval(combine, {kir::Load(acc, slot), value(l)})));
      return kir::Block(std::move(body));
    }));
    combine_lanes(init, combine, dst);
  };
  // The one-pass forms: acc and sums start at their inits; for l: (row[l] = x(l)); then
  // sums[slot] = sums_step(sums, x(l), extra, acc), then acc[slot] = acc_step(acc, x(l), extra):
  // the sums' step sees acc as it was before the element.
  auto paired_pass = [&](double acc_init, double sums_init, const ScalarExpr& sums_step,
                         const ScalarExpr& acc_step, const KExpr& extra) {
    const int l0 = gk.Var("l");
    stmts.push_back(kir::For(l0, wa, vec,
                             kir::Block({kir::Store(acc, kir::Var(l0), fconst(acc_init)),
                                         kir::Store(sums, kir::Var(l0), fconst(sums_init))}),
                             wa));
    stmts.push_back(gk.ChainedLoop(len, w, [&](KExpr slot, KExpr l) {
      std::vector<KStmt> body;
      if (fill_row) body.push_back(kir::Store(row, l, x(l)));
      KExpr v = row_value(l);
      body.push_back(kir::Store(
          sums, slot,
          kir::Eval(sums_step, {kir::Load(sums, slot), v, extra, kir::Load(acc, slot)})));
      body.push_back(kir::Store(acc, slot, kir::Eval(acc_step, {kir::Load(acc, slot), v, extra})));
      return kir::Block(std::move(body));
    }));
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

  if (softmax && knobs.online) {
    // Pass 1: per lane the running max (acc) and the sum rescaled to it (sums). The lowest
    // finite float starts the max, so a row's -inf entries add exp(-inf) = 0 to the sum.
    const double lowest = std::numeric_limits<float>::lowest();
    paired_pass(lowest, 0.0, OnlineSumStep(), Bin(ScalarOp::kMax, F(0), F(1)), fconst(0.0));
    // M = the lanes' max (combined in a copy: the lanes' own maxima rescale their sums), then
    // S = sum over the lanes of s * exp(m - M).
    const int c = gk.Var("l");
    stmts.push_back(
        kir::For(c, wa, vec, kir::Store(lanes, kir::Var(c), kir::Load(acc, kir::Var(c))), wa));
    stmts.push_back(gk.CombineLanes(lanes, wa, MaxCombine(), fconst(lowest), s1));
    const int r = gk.Var("l");
    ScalarExpr rescale =
        Bin(ScalarOp::kMul, F(0), sx::Unary(ScalarOp::kExp, Bin(ScalarOp::kSub, F(1), F(2))));
    stmts.push_back(
        kir::For(r, wa, vec,
                 kir::Store(sums, kir::Var(r),
                            kir::Eval(rescale, {kir::Load(sums, kir::Var(r)),
                                                kir::Load(acc, kir::Var(r)), scalar(s1)})),
                 wa));
    stmts.push_back(gk.CombineLanes(sums, wa, SumCombine(), fconst(0.0), s2));
    stmts.push_back(kir::Store(s2, kir::Int(0),
                               kir::Eval(Bin(ScalarOp::kDiv, sx::Const(1.0), F(0)), {scalar(s2)})));
    ScalarExpr normalised =
        Bin(ScalarOp::kMul, sx::Unary(ScalarOp::kExp, Bin(ScalarOp::kSub, F(0), F(1))), F(2));
    store_outputs([&](KExpr l) {
      return kir::Eval(normalised, {row_value(l), scalar(s1), scalar(s2)});
    });
  } else if (softmax) {
    reduce_pass(-std::numeric_limits<double>::infinity(), MaxCombine(), true, row_value, s1);
    // exp(x - max) is kept in the row cache for the normalising pass.
    ScalarExpr shifted_exp = sx::Unary(ScalarOp::kExp, Bin(ScalarOp::kSub, F(0), F(1)));
    auto e = [&](KExpr l) { return kir::Eval(shifted_exp, {row_value(l), scalar(s1)}); };
    if (cached) {
      const int l0 = gk.Var("l");
      stmts.push_back(kir::For(l0, wa, vec, kir::Store(acc, kir::Var(l0), fconst(0.0)), wa));
      stmts.push_back(gk.ChainedLoop(len, w, [&](KExpr slot, KExpr l) {
        return kir::Block(
            {kir::Store(row, l, e(l)),
             kir::Store(acc, slot,
                        kir::Eval(SumCombine(), {kir::Load(acc, slot), kir::Load(row, l)}))});
      }));
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
    const double eps = op_by_op ? group.row_norm.epsilon : anchor.attrs.GetFloat("epsilon");
    const bool center = !op_by_op && anchor.attrs.GetBool("center"),
               scale = !op_by_op && anchor.attrs.GetBool("scale");
    const ScalarExpr n = sx::Const(static_cast<double>(len));
    ScalarExpr square_dev =
        Bin(ScalarOp::kMul, Bin(ScalarOp::kSub, F(0), F(1)), Bin(ScalarOp::kSub, F(0), F(1)));
    if (knobs.online) {
      // One pass: sums of d = x - shift (acc) and of d^2 (sums); mean = shift + sum(d)/n,
      // variance = sum(d^2)/n - (sum(d)/n)^2, clamped at 0 against rounding. The shift is the
      // mean of the row's first vector: the difference cancels by (mean - shift)^2 / variance,
      // which a shift by x[0] alone made large when x[0] is an outlier (an outlier channel of a
      // transformer's residual stream: 60 against a spread of 1 lost 3 digits).
      const int64_t head = std::min<int64_t>(w, len);
      const int h = gk.Var("l");
      stmts.push_back(kir::For(h, head, vec, kir::Store(lanes, kir::Var(h), x(kir::Var(h))), w));
      stmts.push_back(
          gk.CombineLanes(lanes, static_cast<int>(head), SumCombine(), fconst(0.0), shift));
      stmts.push_back(
          kir::Store(shift, kir::Int(0),
                     kir::Eval(Bin(ScalarOp::kDiv, F(0), sx::Const(static_cast<double>(head))),
                               {scalar(shift)})));
      const ScalarExpr d = Bin(ScalarOp::kSub, F(1), F(2));  // x - shift
      paired_pass(0.0, 0.0, Bin(ScalarOp::kAdd, F(0), Bin(ScalarOp::kMul, d, d)),
                  Bin(ScalarOp::kAdd, F(0), d), scalar(shift));
      combine_lanes(0.0, SumCombine(), s1);
      stmts.push_back(gk.CombineLanes(sums, wa, SumCombine(), fconst(0.0), s2));
      // s2 = sum(d^2)/n - (sum(d)/n)^2 from the sums; then s1 = the mean.
      ScalarExpr mean_d = Bin(ScalarOp::kDiv, F(0), n);
      ScalarExpr var = Bin(
          ScalarOp::kMax, sx::Const(0.0),
          Bin(ScalarOp::kSub, Bin(ScalarOp::kDiv, F(1), n), Bin(ScalarOp::kMul, mean_d, mean_d)));
      stmts.push_back(kir::Store(
          s2, kir::Int(0),
          kir::Eval(sx::Unary(ScalarOp::kRsqrt, Bin(ScalarOp::kAdd, var, sx::Const(eps))),
                    {scalar(s1), scalar(s2)})));
      stmts.push_back(
          kir::Store(s1, kir::Int(0),
                     kir::Eval(Bin(ScalarOp::kAdd, F(1), mean_d), {scalar(s1), scalar(shift)})));
    } else {
      if (centred) {
        reduce_pass(0.0, SumCombine(), true, row_value, s1);
        stmts.push_back(
            kir::Store(s1, kir::Int(0), kir::Eval(Bin(ScalarOp::kDiv, F(0), n), {scalar(s1)})));
      } else {
        stmts.push_back(kir::Store(s1, kir::Int(0), fconst(0.0)));  // an RMS norm takes no mean
      }
      reduce_pass(
          0.0, SumCombine(), /*fill=*/!centred,
          [&](KExpr l) {
            return kir::Eval(square_dev, {row_value(l), scalar(s1)});
          },
          s2);
      ScalarExpr inv = sx::Unary(ScalarOp::kRsqrt,
                                 Bin(ScalarOp::kAdd, Bin(ScalarOp::kDiv, F(0), n), sx::Const(eps)));
      stmts.push_back(kir::Store(s2, kir::Int(0), kir::Eval(inv, {scalar(s2)})));
    }
    // gamma and beta along the axis (a layer norm written op by op applies them in its epilogue).
    auto along_axis = [&](int i) {
      return InlineValue(graph, group, anchor.inputs.at(i), std::vector<IndexExpr>{ix::Var(axis)});
    };
    const std::optional<InlinedExpr> gamma =
        scale ? std::optional<InlinedExpr>(along_axis(1)) : std::nullopt;
    const std::optional<InlinedExpr> beta =
        center ? std::optional<InlinedExpr>(along_axis(2)) : std::nullopt;
    store_outputs([&](KExpr l) {
      KExpr y = kir::Eval(Bin(ScalarOp::kMul, Bin(ScalarOp::kSub, F(0), F(1)), F(2)),
                          {row_value(l), scalar(s1), scalar(s2)});
      if (gamma)
        y = kir::Eval(Bin(ScalarOp::kMul, F(0), F(1)), {y, gk.Lower(*gamma, coords(l), extents)});
      if (beta)
        y = kir::Eval(Bin(ScalarOp::kAdd, F(0), F(1)), {y, gk.Lower(*beta, coords(l), extents)});
      return y;
    });
  }
  KStmt body = kir::Block(std::move(stmts));
  body = kir::Alloc(row, kir::Alloc(acc, kir::Alloc(s1, kir::Alloc(s2, body))));
  if (shift >= 0) body = kir::Alloc(shift, body);
  if (knobs.online) body = kir::Alloc(sums, kir::Alloc(lanes, body));
  k.body =
      kir::For(p, outer * inner, knobs.parallel ? LoopKind::kParallel : LoopKind::kSerial, body);
  return std::move(k);
}

}  // namespace fusetune::codegen
