#include "ir/softmax_pattern.h"

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

}  // namespace

std::vector<ValueId> SoftmaxOpByOp::Core() const {
  std::vector<ValueId> core = {max, shifted, exp, sum, output};
  std::sort(core.begin(), core.end());
  return core;
}

std::optional<SoftmaxOpByOp> MatchSoftmaxOpByOp(const Graph& g, ValueId division) {
  if (!g.IsOp(division, "divide")) return std::nullopt;
  SoftmaxOpByOp s;
  s.output = division;
  s.exp = g.value(division).inputs[0];
  s.sum = g.value(division).inputs[1];
  if (!g.IsOp(s.exp, "exp") || !g.IsOp(s.sum, "sum") || g.value(s.sum).inputs[0] != s.exp)
    return std::nullopt;
  s.shifted = g.value(s.exp).inputs[0];
  if (!g.IsOp(s.shifted, "subtract")) return std::nullopt;
  s.input = g.value(s.shifted).inputs[0];
  s.max = g.value(s.shifted).inputs[1];
  if (!g.IsOp(s.max, "max") || g.value(s.max).inputs[0] != s.input) return std::nullopt;
  const TensorType& x = g.value(s.input).type;
  if (x.dtype != DType::kFloat32 || x.rank() == 0) return std::nullopt;
  const std::optional<int> max_axis = KeptSingleAxis(g, s.max);
  const std::optional<int> sum_axis = KeptSingleAxis(g, s.sum);
  if (!max_axis || max_axis != sum_axis) return std::nullopt;
  s.axis = *max_axis;
  // The steps keep x's shape (the reductions' 1 broadcast back), so y is x's softmax.
  for (ValueId v : {s.shifted, s.exp, s.output})
    if (g.value(v).type.shape != x.shape) return std::nullopt;
  return s;
}

std::optional<SoftmaxOpByOp> SoftmaxOpByOpIn(const Graph& g, std::span<const ValueId> nodes) {
  auto member = [&](ValueId v) { return std::find(nodes.begin(), nodes.end(), v) != nodes.end(); };
  std::optional<SoftmaxOpByOp> found;
  for (ValueId v : nodes) {
    std::optional<SoftmaxOpByOp> s = MatchSoftmaxOpByOp(g, v);
    if (!s) continue;
    const std::vector<ValueId> core = s->Core();
    if (!std::all_of(core.begin(), core.end(), member)) continue;
    if (found) return std::nullopt;  // two softmaxes: two row kernels
    found = s;
  }
  return found;
}

std::vector<SoftmaxOpByOp> FindSoftmaxOpByOp(const Graph& g) {
  std::vector<SoftmaxOpByOp> out;
  for (ValueId v = 0; v < static_cast<ValueId>(g.values().size()); ++v)
    if (std::optional<SoftmaxOpByOp> s = MatchSoftmaxOpByOp(g, v)) out.push_back(*s);
  return out;
}

}  // namespace fusetune
