#include "ir/norm_pattern.h"

#include <algorithm>

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
  return s;
}

// y = d / sqrt(t) or d * rsqrt(t) (either order), t = mean(d²) + eps (eps a scalar constant,
// either side); d = x - mean(x) for a layer norm, d = x for an RMS norm.
std::optional<NormOpByOp> MatchLayerNorm(const Graph& g, ValueId output) {
  NormOpByOp n;
  n.output = output;
  const Value& out = g.value(output);
  ValueId d = -1, root = -1;
  if (g.IsOp(output, "divide") && g.IsOp(out.inputs[1], "sqrt")) {
    d = out.inputs[0];
    root = out.inputs[1];
  } else if (g.IsOp(output, "multiply")) {
    for (int i = 0; i < 2 && root < 0; ++i)
      if (g.IsOp(out.inputs[i], "rsqrt")) {
        root = out.inputs[i];
        d = out.inputs[1 - i];
      }
  }
  if (root < 0) return std::nullopt;
  const ValueId plus_eps = g.value(root).inputs[0];
  if (!g.IsOp(plus_eps, "add")) return std::nullopt;
  ValueId var = -1;
  for (int i = 0; i < 2 && var < 0; ++i) {
    const ValueId a = g.value(plus_eps).inputs[i], b = g.value(plus_eps).inputs[1 - i];
    if (const std::optional<double> eps = ScalarConst(g, b); eps && g.IsOp(a, "mean")) {
      var = a;
      n.epsilon = *eps;
    }
  }
  if (var < 0) return std::nullopt;
  const ValueId square = g.value(var).inputs[0];
  const Value& sq = g.value(square);
  const bool squares_d =
      (g.IsOp(square, "multiply") && sq.inputs[0] == d && sq.inputs[1] == d) ||
      (g.IsOp(square, "power") && sq.inputs[0] == d && ScalarConst(g, sq.inputs[1]) == 2.0);
  if (!squares_d) return std::nullopt;
  const std::optional<int> var_axis = KeptSingleAxis(g, var);
  if (!var_axis) return std::nullopt;
  n.axis = *var_axis;
  // x - mean(x) over the same axis: a layer norm; anything else squared is an RMS norm of itself.
  const bool centred = g.IsOp(d, "subtract") && g.IsOp(g.value(d).inputs[1], "mean") &&
                       g.value(g.value(d).inputs[1]).inputs[0] == g.value(d).inputs[0] &&
                       KeptSingleAxis(g, g.value(d).inputs[1]) == var_axis;
  if (centred) {
    n.kind = RowNorm::kLayerNorm;
    n.input = g.value(d).inputs[0];
    n.steps = {g.value(d).inputs[1], d, square, var, plus_eps, root};
  } else {
    n.kind = RowNorm::kRmsNorm;
    n.input = d;
    n.steps = {square, var, plus_eps, root};
  }
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
  // The steps over whole rows (x - max and its exp; x - mean and its square; x's square) keep x's
  // shape (the reductions' 1 broadcast back), and so does y: it is the normalisation of x.
  std::vector<ValueId> whole_rows = {output};
  if (n->kind == RowNorm::kRmsNorm)
    whole_rows.push_back(n->steps[0]);
  else
    whole_rows.insert(whole_rows.end(), {n->steps[1], n->steps[2]});
  for (ValueId v : whole_rows)
    if (g.value(v).type.shape != x.shape) return std::nullopt;
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
