#include "ir/interpreter.h"

#include <cmath>

#include <fmt/format.h>

#include "ir/error.h"
#include "ir/op.h"

namespace fusetune {
namespace {

// Binds `inputs` to the parameters (see interpreter.h for the two accepted forms).
void BindParams(const Graph& graph, std::span<const Tensor> inputs, std::vector<Tensor>& values) {
  const auto& params = graph.params();
  size_t without_data = 0;
  for (ValueId p : params)
    if (!graph.value(p).data) ++without_data;
  const bool all_given = inputs.size() == params.size();
  if (!all_given && inputs.size() != without_data) {
    throw UserError(
        fmt::format("the graph has {} parameters ({} without data) but {} inputs were given",
                    params.size(), without_data, inputs.size()));
  }
  size_t next = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    const Value& param = graph.value(params[i]);
    const Tensor* given = nullptr;
    if (all_given) {
      given = &inputs[i];
      if (!given->data() && param.data) given = nullptr;
    } else if (!param.data) {
      given = &inputs[next++];
    }
    if (!given) {
      values[params[i]] = *param.data;
      continue;
    }
    if (!given->data() || given->type() != param.type) {
      throw UserError(
          fmt::format("input {} for {} has type {}, expected {}", i, graph.RefName(params[i]),
                      given->data() ? given->type().ToString() : "none", param.type.ToString()));
    }
    values[params[i]] = *given;
  }
}

// Moves each element of a float32 value by at most one ulp (InterpretPerturbed).
class UlpPerturbation {
 public:
  explicit UlpPerturbation(uint64_t seed) : state_(seed * 0x9E3779B97F4A7C15ull | 1) {}
  // Into a new tensor: an op may return its operand's storage (a parameter's weights, a value the
  // memo keeps), which must not change.
  void Apply(Tensor& value) {
    if (value.dtype() != DType::kFloat32) return;
    Tensor moved(value.type());
    const float* from = value.as<float>();
    float* x = moved.as<float>();
    const int64_t size = value.size();
    for (int64_t i = 0; i < size; ++i) {
      x[i] = from[i];
      if (!std::isfinite(x[i])) continue;  // an infinity stays one
      // xorshift64: two bits per element pick down, none, up (and none again).
      state_ ^= state_ << 13;
      state_ ^= state_ >> 7;
      state_ ^= state_ << 17;
      const unsigned move = state_ & 3;
      if (move == 1) x[i] = std::nextafter(x[i], -INFINITY);
      if (move == 2) x[i] = std::nextafter(x[i], INFINITY);
    }
    value = std::move(moved);
  }

 private:
  uint64_t state_;
};

// Evaluates every value; when `keep_all` is false, frees each intermediate after its last use.
// With a memo, only the values the outputs need and the memo lacks are evaluated; with a
// perturbation, every node's value is perturbed.
std::vector<Tensor> Run(const Graph& graph, std::span<const Tensor> inputs, bool keep_all,
                        ValueMemo* memo, UlpPerturbation* perturbation = nullptr) {
  const auto& vals = graph.values();
  const auto count = static_cast<ValueId>(vals.size());
  std::vector<Tensor> values(vals.size());
  BindParams(graph, inputs, values);

  std::vector<bool> needed(vals.size(), true);
  if (memo) {
    // Backwards from the outputs: a node the memo has needs none of its inputs.
    needed.assign(vals.size(), false);
    for (ValueId out : graph.outputs()) needed[out] = true;
    for (ValueId id = count - 1; id >= 0; --id) {
      if (!needed[id] || vals[id].kind != ValueKind::kNode) continue;
      if (const Tensor* known = memo->Find(id)) {
        FT_CHECK(known->type() == vals[id].type, "a memo offered a value of another type");
        values[id] = *known;
        continue;
      }
      for (ValueId in : vals[id].inputs) needed[in] = true;
    }
  }
  std::vector<ValueId> last_use(vals.size(), -1);
  if (!keep_all) {
    for (ValueId id = 0; id < count; ++id)
      if (needed[id] && !values[id].data())
        for (ValueId in : vals[id].inputs) last_use[in] = id;
    for (ValueId out : graph.outputs()) last_use[out] = count;
  }
  std::vector<const Tensor*> args;
  for (ValueId id = 0; id < count; ++id) {
    const Value& v = vals[id];
    if (v.kind == ValueKind::kConst) {
      values[id] = *v.data;
      continue;
    }
    if (v.kind != ValueKind::kNode || !needed[id] || values[id].data()) continue;
    args.clear();
    for (ValueId in : v.inputs) args.push_back(&values[in]);
    values[id] = EvalOp(*v.op, args, v.type, v.attrs);
    FT_CHECK(values[id].type() == v.type,
             fmt::format("{} produced {} instead of {}", v.op->name, values[id].type().ToString(),
                         v.type.ToString()));
    if (perturbation) perturbation->Apply(values[id]);
    if (memo) memo->Keep(id, values[id]);
    if (!keep_all) {
      for (ValueId in : v.inputs)
        if (last_use[in] == id) values[in] = Tensor();
    }
  }
  return values;
}

}  // namespace

std::vector<Tensor> Interpret(const Graph& graph, std::span<const Tensor> inputs) {
  std::vector<Tensor> values = Run(graph, inputs, /*keep_all=*/false, nullptr);
  std::vector<Tensor> outputs;
  for (ValueId out : graph.outputs()) outputs.push_back(values[out]);
  return outputs;
}

std::vector<Tensor> Interpret(const Graph& graph, std::span<const Tensor> inputs, ValueMemo& memo) {
  std::vector<Tensor> values = Run(graph, inputs, /*keep_all=*/false, &memo);
  std::vector<Tensor> outputs;
  for (ValueId out : graph.outputs()) outputs.push_back(values[out]);
  return outputs;
}

std::vector<Tensor> InterpretPerturbed(const Graph& graph, std::span<const Tensor> inputs,
                                       uint64_t seed) {
  UlpPerturbation perturbation(seed);
  std::vector<Tensor> values = Run(graph, inputs, /*keep_all=*/false, nullptr, &perturbation);
  std::vector<Tensor> outputs;
  for (ValueId out : graph.outputs()) outputs.push_back(values[out]);
  return outputs;
}

std::vector<Tensor> InterpretAll(const Graph& graph, std::span<const Tensor> inputs) {
  return Run(graph, inputs, /*keep_all=*/true, nullptr);
}

Tensor RandomInput(const Graph& graph, size_t index, uint64_t seed) {
  const Value& p = graph.value(graph.params().at(index));
  if (p.data) return *p.data;
  return Tensor::Random(p.type, seed * 1000003ull + index);
}

std::vector<Tensor> RandomInputs(const Graph& graph, uint64_t seed) {
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < graph.params().size(); ++i) inputs.push_back(RandomInput(graph, i, seed));
  return inputs;
}

}  // namespace fusetune
