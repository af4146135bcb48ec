#include "ir/norm_pattern.h"

#include <algorithm>
#include <cmath>

#include "ir/op.h"

namespace fusetune {
namespace {

// The one axis `reduction` reduces of its input, keeping it as a 1; nullopt otherwise.
std::optional<int> KeptSingleAxis(const Graph& g, ValueId reduction) {
  const Value& r = g.value(reduction);
  if (!r.attrs.GetBool("keepdims")) return std::nullopt;
  const std::vector<int> axes = ReduceAxes(g.value(r.inputs.at(0)).type, r.attrs);
  if (axes.size() != 1) return std::nullopt;
  return axes[0];
}

// The value of a scalar constant, if `v` is one.
std::optional<double> ScalarConst(const Graph& g, ValueId v) {
  const Value& value = g.value(v);
  if (value.kind != ValueKind::kConst || value.type.NumElements() != 1) return std::nullopt;
  return value.data->Get(0);
}

// y = e / sum(e), e = exp(x - max(x)).
std::optional<NormOpByOp> MatchSoftmax(const Graph& g, ValueId division) {
  NormOpByOp s;
  s.kind = RowNorm::kSoftmax;
  s.output = division;
  const ValueId exp = g.value(division).inputs[0], sum = g.value(division).inputs[1];
  if (!g.IsOp(exp, "exp") || !g.IsOp(sum, "sum") || g.value(sum).inputs[0] != exp)
    return std::nullopt;
  const ValueId shifted = g.value(exp).inputs[0];
  if (!g.IsOp(shifted, "subtract")) return std::nullopt;
  s.input = g.value(shifted).inputs[0];
  const ValueId max = g.value(shifted).inputs[1];
  if (!g.IsOp(max, "max") || g.value(max).inputs[0] != s.input) return std::nullopt;
  const std::optional<int> max_axis = KeptSingleAxis(g, max), sum_axis = KeptSingleAxis(g, sum);
  if (!max_axis || max_axis != sum_axis) return std::nullopt;
  s.axis = *max_axis;
  s.steps = {max, shifted, exp, sum};
  // x - max and its exp over whole rows keep x's shape (the reductions' 1 broadcast back).
  for (ValueId v : {shifted, exp})
    if (g.value(v).type.shape != g.value(s.input).type.shape) return std::nullopt;
  return s;
}

// A mean over one kept axis as exporters write it: mean(a), sum(a) * (1/n) (either order) or
// sum(a) / n, n the axis's extent. `ops` holds its nodes, the reduction first.
struct RowMean {
  ValueId of = -1;  // a
  int axis = 0;
  std::vector<ValueId> ops;
};

std::optional<RowMean> MatchRowMean(const Graph& g, ValueId v) {
  if (g.IsOp(v, "mean")) {
    const std::optional<int> axis = KeptSingleAxis(g, v);
    if (!axis) return std::nullopt;
    return RowMean{g.value(v).inputs[0], *axis, {v}};
  }
  const bool times = g.IsOp(v, "multiply"), over = g.IsOp(v, "divide");
  if (!times && !over) return std::nullopt;
  for (int i = 0; i < (times ? 2 : 1); ++i) {
    const ValueId sum = g.value(v).inputs[i];
    const std::optional<double> c = ScalarConst(g, g.value(v).inputs[1 - i]);
    if (!c || !g.IsOp(sum, "sum")) continue;
    const std::optional<int> axis = KeptSingleAxis(g, sum);
    if (!axis) continue;
    const ValueId a = g.value(sum).inputs[0];
    const double n = static_cast<double>(g.value(a).type.shape[*axis]);
    // 1/n as a float32 constant is within half an ulp of it.
    if (std::abs((times ? *c * n : n / *c) - 1.0) > 1e-6) continue;
    return RowMean{a, *axis, {sum, v}};
  }
  return std::nullopt;
}

// The norm's output as a deviation d over a root: y = d / sqrt(t), d * rsqrt(t) or
// d * (1 / sqrt(t)) (the products either order; the last is PyTorch's ONNX export of rsqrt).
struct RootDivision {
  ValueId t = -1, d = -1;
  std::vector<ValueId> ops;  // the root's nodes, innermost first
};

std::optional<RootDivision> MatchRootDivision(const Graph& g, ValueId output) {
  const Value& out = g.value(output);
  if (g.IsOp(output, "divide") && g.IsOp(out.inputs[1], "sqrt"))
    return RootDivision{g.value(out.inputs[1]).inputs[0], out.inputs[0], {out.inputs[1]}};
  if (!g.IsOp(output, "multiply")) return std::nullopt;
  for (int i = 0; i < 2; ++i) {
    const ValueId r = out.inputs[i], d = out.inputs[1 - i];
    const Value& rv = g.value(r);
    if (g.IsOp(r, "rsqrt")) return RootDivision{rv.inputs[0], d, {r}};
    if (g.IsOp(r, "divide") && ScalarConst(g, rv.inputs[0]) == 1.0 && g.IsOp(rv.inputs[1], "sqrt"))
      return RootDivision{g.value(rv.inputs[1]).inputs[0], d, {rv.inputs[1], r}};
  }
  return std::nullopt;
}

// y = d / sqrt(t) (or the other spellings of MatchRootDivision), t = mean(d²) + eps (eps a
// scalar constant, either side; the mean as MatchRowMean takes it); d = x - mean(x) for a layer
// norm, d = x for an RMS norm.
std::optional<NormOpByOp> MatchLayerNorm(const Graph& g, ValueId output) {
  NormOpByOp n;
  n.output = output;
  const std::optional<RootDivision> root = MatchRootDivision(g, output);
  if (!root || !g.IsOp(root->t, "add")) return std::nullopt;
  const ValueId plus_eps = root->t, d = root->d;
  std::optional<RowMean> var;
  for (int i = 0; i < 2 && !var; ++i) {
    const ValueId a = g.value(plus_eps).inputs[i], b = g.value(plus_eps).inputs[1 - i];
    const std::optional<double> eps = ScalarConst(g, b);
    if (eps && (var = MatchRowMean(g, a))) n.epsilon = *eps;
  }
  if (!var) return std::nullopt;
  const ValueId square = var->of;
  const Value& sq = g.value(square);
  const bool squares_d =
      (g.IsOp(square, "multiply") && sq.inputs[0] == d && sq.inputs[1] == d) ||
      (g.IsOp(square, "power") && sq.inputs[0] == d && ScalarConst(g, sq.inputs[1]) == 2.0);
  if (!squares_d) return std::nullopt;
  n.axis = var->axis;
  // x - mean(x) over the same axis: a layer norm; anything else squared is an RMS norm of itself.
  std::optional<RowMean> centre;
  if (g.IsOp(d, "subtract")) {
    centre = MatchRowMean(g, g.value(d).inputs[1]);
    if (centre && (centre->of != g.value(d).inputs[0] || centre->axis != n.axis)) centre.reset();
  }
  n.kind = centre ? RowNorm::kLayerNorm : RowNorm::kRmsNorm;
  n.input = centre ? centre->of : d;
  if (centre) {
    n.steps = centre->ops;
    n.steps.push_back(d);
  }
  n.steps.push_back(square);
  n.steps.insert(n.steps.end(), var->ops.begin(), var->ops.end());
  n.steps.push_back(plus_eps);
  n.steps.insert(n.steps.end(), root->ops.begin(), root->ops.end());
  // The steps over whole rows keep x's shape (the reductions' 1 broadcast back).
  for (ValueId v : {d, square})
    if (g.value(v).type.shape != g.value(n.input).type.shape) return std::nullopt;
  return n;
}

}  // namespace

std::vector<ValueId> NormOpByOp::Core() const {
  std::vector<ValueId> core = steps;
  core.push_back(output);
  std::sort(core.begin(), core.end());
  return core;
}

std::string_view NormOpByOp::Name() const {
  switch (kind) {
    case RowNorm::kSoftmax:
      return "softmax";
    case RowNorm::kLayerNorm:
      return "layer norm";
    case RowNorm::kRmsNorm:
      return "RMS norm";
  }
  return "";
}

std::optional<NormOpByOp> MatchNormOpByOp(const Graph& g, ValueId output) {
  if (!g.IsOp(output, "divide") && !g.IsOp(output, "multiply")) return std::nullopt;
  std::optional<NormOpByOp> n = g.IsOp(output, "divide") ? MatchSoftmax(g, output) : std::nullopt;
  if (!n) n = MatchLayerNorm(g, output);
  if (!n) return std::nullopt;
  const TensorType& x = g.value(n->input).type;
  if (x.dtype != DType::kFloat32 || x.rank() == 0) return std::nullopt;
  // y is the normalisation of x: it keeps x's shape.
  if (g.value(output).type.shape != x.shape) return std::nullopt;
  return n;
}

std::optional<NormOpByOp> NormOpByOpIn(const Graph& g, std::span<const ValueId> nodes) {
  auto member = [&](ValueId v) { return std::find(nodes.begin(), nodes.end(), v) != nodes.end(); };
  std::optional<NormOpByOp> found;
  for (ValueId v : nodes) {
    std::optional<NormOpByOp> n = MatchNormOpByOp(g, v);
    if (!n) continue;
    const std::vector<ValueId> core = n->Core();
    if (!std::all_of(core.begin(), core.end(), member)) continue;
    if (found) return std::nullopt;  // two normalisations: two row kernels
    found = n;
  }
  return found;
}

size_t OpsCounted(const Graph& g, std::span<const ValueId> nodes) {
  const std::optional<NormOpByOp> n = NormOpByOpIn(g, nodes);
  return nodes.size() - (n ? n->steps.size() - 1 : 0);
}

std::vector<NormOpByOp> FindNormOpByOp(const Graph& g) {
  std::vector<NormOpByOp> out;
  for (ValueId v = 0; v < static_cast<ValueId>(g.values().size()); ++v)
    if (std::optional<NormOpByOp> n = MatchNormOpByOp(g, v)) out.push_back(*n);
  return out;
}

}  // namespace fusetune
