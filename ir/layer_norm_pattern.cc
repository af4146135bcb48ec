#include "ir/layer_norm_pattern.h"

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <unordered_set>

namespace fusetune {
namespace {

struct Chain {
  ValueId x, gamma, beta;
  double epsilon;
  std::vector<ValueId> inner;  // every op of the chain but the last
};

class Matcher {
 public:
  explicit Matcher(const Graph& g) : g_(g), outputs_(g.outputs().begin(), g.outputs().end()) {}

  // The chain ending at `out`, if `out` is the final add of one.
  std::optional<Chain> Match(ValueId out) const {
    Chain c;
    ValueId scaled;
    if (!g_.IsOp(out, "add") || !Split(out, "multiply", &scaled, &c.beta) || !Weight(c.beta, out))
      return std::nullopt;
    ValueId y;
    if (!Split(scaled, "divide", &y, &c.gamma) || !Weight(c.gamma, out)) return std::nullopt;
    // y = d / sqrt(v + eps)
    const Value& div = g_.value(y);
    const ValueId d = div.inputs[0], sd = div.inputs[1];
    if (!g_.IsOp(sd, "sqrt")) return std::nullopt;
    ValueId var, eps;
    if (!Split(g_.value(sd).inputs[0], "mean", &var, &eps, "add")) return std::nullopt;
    const ValueId shifted = g_.value(sd).inputs[0];
    const Value& eps_value = g_.value(eps);
    if (eps_value.kind != ValueKind::kConst || eps_value.type.NumElements() != 1)
      return std::nullopt;
    c.epsilon = eps_value.data->Get(0);
    // v = mean(d * d), d = x - mean(x)
    const ValueId sq = g_.value(var).inputs[0];
    if (!LastAxisMean(var) || !g_.IsOp(sq, "multiply") || g_.value(sq).inputs[0] != d ||
        g_.value(sq).inputs[1] != d || !g_.IsOp(d, "subtract"))
      return std::nullopt;
    c.x = g_.value(d).inputs[0];
    const ValueId mean = g_.value(d).inputs[1];
    if (!LastAxisMean(mean) || g_.value(mean).inputs[0] != c.x) return std::nullopt;
    const TensorType& xt = g_.value(c.x).type;
    if (xt.dtype != DType::kFloat32 || xt.rank() < 1 || g_.value(out).type != xt)
      return std::nullopt;
    c.inner = {mean, d, sq, var, shifted, sd, y, scaled};
    // Private: each inner value is read only inside the chain (d twice), never an output.
    const std::unordered_set<ValueId> chain(c.inner.begin(), c.inner.end());
    for (ValueId v : c.inner) {
      if (outputs_.count(v)) return std::nullopt;
      for (ValueId u : g_.Users(v))
        if (!chain.count(u) && u != out) return std::nullopt;
    }
    return c;
  }

 private:
  // `v` is a binary op (`op`, when given) of a `want` node `a` and some `b`, in either order.
  bool Split(ValueId v, const char* want, ValueId* a, ValueId* b, const char* op = nullptr) const {
    if (op && !g_.IsOp(v, op)) return false;
    const Value& value = g_.value(v);
    if (value.kind != ValueKind::kNode || value.inputs.size() != 2) return false;
    for (int i = 0; i < 2; ++i) {
      if (g_.IsOp(value.inputs[i], want)) {
        *a = value.inputs[i];
        *b = value.inputs[1 - i];
        return true;
      }
    }
    return false;
  }

  // A parameter or constant of shape [K], K the last axis of `out`.
  bool Weight(ValueId w, ValueId out) const {
    const Value& v = g_.value(w);
    return v.kind != ValueKind::kNode && v.type.rank() == 1 &&
           v.type.shape[0] == g_.value(out).type.shape.back() && v.type.dtype == DType::kFloat32;
  }

  // mean over the last axis only, dims kept.
  bool LastAxisMean(ValueId v) const {
    if (!g_.IsOp(v, "mean")) return false;
    const Value& m = g_.value(v);
    const int rank = g_.value(m.inputs[0]).type.rank();
    if (m.attrs.IsNone("axis") || !m.attrs.GetBool("keepdims") || m.attrs.GetBool("exclude"))
      return false;
    const IntList& axes = m.attrs.GetIntList("axis");
    return axes.size() == 1 && (axes[0] == rank - 1 || axes[0] == -1);
  }

  const Graph& g_;
  std::unordered_set<ValueId> outputs_;
};

}  // namespace

Graph FuseDecomposedLayerNorms(const Graph& graph, const Limits& limits, int* fused) {
  const Matcher matcher(graph);
  std::unordered_map<ValueId, Chain> at;  // by the chain's last op
  std::unordered_set<ValueId> dropped;
  for (ValueId v = 0; v < static_cast<ValueId>(graph.values().size()); ++v) {
    if (graph.value(v).kind != ValueKind::kNode) continue;
    if (std::optional<Chain> c = matcher.Match(v)) {
      dropped.insert(c->inner.begin(), c->inner.end());
      at.emplace(v, std::move(*c));
    }
  }
  if (fused) *fused = static_cast<int>(at.size());
  if (at.empty()) return graph;

  // Constants only the dropped ops read (the epsilons) go too.
  auto unused = [&](ValueId v) {
    if (graph.value(v).kind != ValueKind::kConst) return false;
    for (ValueId u : graph.Users(v))
      if (!dropped.count(u)) return false;
    return std::find(graph.outputs().begin(), graph.outputs().end(), v) == graph.outputs().end();
  };
  GraphBuilder b(limits);
  std::vector<ValueId> map(graph.values().size(), -1);
  for (ValueId v = 0; v < static_cast<ValueId>(graph.values().size()); ++v) {
    const Value& value = graph.value(v);
    switch (value.kind) {
      case ValueKind::kParam:
        map[v] = value.data ? b.AddParamWithData(value.name, value.data)
                            : b.AddParam(value.name, value.type);
        break;
      case ValueKind::kConst:
        if (!unused(v)) map[v] = b.AddConst(value.data, value.name);
        break;
      case ValueKind::kNode: {
        if (dropped.count(v)) break;
        if (auto it = at.find(v); it != at.end()) {
          const Chain& c = it->second;
          map[v] = b.AddNode("nn.layer_norm", {map[c.x], map[c.gamma], map[c.beta]},
                             Attrs({{"axis", int64_t{-1}}, {"epsilon", c.epsilon}}), value.name);
          break;
        }
        std::vector<ValueId> inputs;
        for (ValueId in : value.inputs) inputs.push_back(map[in]);
        map[v] = b.AddNode(value.op->name, std::move(inputs), value.attrs, value.name);
        break;
      }
    }
  }
  std::vector<ValueId> outputs;
  for (ValueId o : graph.outputs()) outputs.push_back(map[o]);
  b.SetOutputs(std::move(outputs), graph.tuple_output());
  return std::move(b).Build();
}

}  // namespace fusetune
