#include "ir/layer_norm_pattern.h"

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "ir/norm_pattern.h"

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

  // The chain ending at `out`, if `out` is the final add of one: out = y * gamma + beta, y a
  // layer norm written op by op (ir/norm_pattern.h) over x's last axis.
  std::optional<Chain> Match(ValueId out) const {
    Chain c;
    ValueId scaled;
    if (!g_.IsOp(out, "add") || !Split(out, "multiply", &scaled, &c.beta) || !Weight(c.beta, out))
      return std::nullopt;
    // scaled = y * gamma, either order.
    std::optional<NormOpByOp> core;
    ValueId y = -1;
    for (int i = 0; i < 2 && !core; ++i) {
      y = g_.value(scaled).inputs[i];
      c.gamma = g_.value(scaled).inputs[1 - i];
      core = MatchNormOpByOp(g_, y);
    }
    if (!core || core->kind != RowNorm::kLayerNorm || !Weight(c.gamma, out)) return std::nullopt;
    c.x = core->input;
    c.epsilon = core->epsilon;
    const TensorType& xt = g_.value(c.x).type;
    if (core->axis != xt.rank() - 1 || g_.value(out).type != xt) return std::nullopt;
    c.inner = core->steps;
    c.inner.push_back(y);
    c.inner.push_back(scaled);
    // Private: each inner value is read only inside the chain (x - mean twice), never an output.
    const std::unordered_set<ValueId> chain(c.inner.begin(), c.inner.end());
    for (ValueId v : c.inner) {
      if (outputs_.count(v)) return std::nullopt;
      for (ValueId u : g_.Users(v))
        if (!chain.count(u) && u != out) return std::nullopt;
    }
    return c;
  }

 private:
  // `v` is a binary op of a `want` node `a` and some `b`, in either order.
  bool Split(ValueId v, const char* want, ValueId* a, ValueId* b) const {
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
