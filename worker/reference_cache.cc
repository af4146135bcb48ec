#include "worker/reference_cache.h"

#include <fmt/format.h>

#include "ir/interpreter.h"
#include "ir/text/signature.h"
#include "worker/output_check.h"

namespace fusetune {
namespace {

std::string DataKey(const Tensor& data) {
  std::string_view bytes(static_cast<const char*>(data.data()),
                         static_cast<size_t>(data.type().NumBytes()));
  return fmt::format("data({}, {})", data.type().ToString(), Hash128Hex(bytes));
}

// Ops whose output holds the elements of their one operand in the same order, under another shape.
bool IsView(const Graph& graph, const Value& node) {
  const std::string& op = node.op->name;
  return (op == "reshape" || op == "squeeze" || op == "expand_dims") && node.inputs.size() == 1 &&
         graph.value(node.inputs[0]).type.dtype == node.type.dtype;
}

}  // namespace

std::vector<std::string> ReferenceKeys(const Graph& graph, uint64_t seed) {
  // A key is what a value holds, its flat elements in order ("content"), and its type. A view
  // (reshape, squeeze, expand_dims) keeps its operand's content under another type; a random
  // parameter's content depends on its dtype, element count, seed and position, not its shape
  // (Tensor::Random fills elements in order). So a dense whose input is a reshaped parameter and
  // the same dense whose input is a parameter of the reshaped type get one key: their inputs hold
  // the same numbers (BERT's groups with and without the reshape before a projection).
  const size_t n = graph.values().size();
  std::vector<std::string> content(n), keys(n);
  auto key_of = [&](ValueId v, const TensorType& type) {
    return content[v] + " as " + type.ToString();
  };
  const std::vector<ValueId>& params = graph.params();
  for (size_t i = 0; i < params.size(); ++i) {
    const Value& p = graph.value(params[i]);
    if (p.data) {
      content[params[i]] = keys[params[i]] = DataKey(*p.data);
      continue;
    }
    content[params[i]] = fmt::format("random({} x {}, seed {}, parameter {})",
                                     DTypeName(p.type.dtype), p.type.NumElements(), seed, i);
    keys[params[i]] = key_of(params[i], p.type);
  }
  for (ValueId v = 0; v < static_cast<ValueId>(n); ++v) {
    const Value& value = graph.value(v);
    if (value.kind == ValueKind::kConst) {
      content[v] = keys[v] = DataKey(*value.data);
    } else if (value.kind == ValueKind::kNode) {
      if (IsView(graph, value)) {
        content[v] = content[value.inputs[0]];
        keys[v] = key_of(v, value.type);
        continue;
      }
      // The node alone, its operands as inputs p0, p1, ... in the order the canonical form lists
      // them; then what each of those inputs is.
      const ValueId one[] = {v};
      CanonicalForm form = Canonicalize(graph, one);
      std::string text = form.text;
      for (ValueId in : form.inputs) text += "\n" + keys[in];
      content[v] = keys[v] = Hash128Hex(text);
    }
  }
  return keys;
}

// The interpreter's view of the cache for one graph: values by ValueId, through their keys.
class ReferenceMemo : public ValueMemo {
 public:
  ReferenceMemo(ReferenceCache& cache, const std::vector<std::string>& keys)
      : cache_(cache), keys_(keys) {}
  const Tensor* Find(ValueId node) override { return cache_.Find(keys_[node]); }
  void Keep(ValueId node, const Tensor& value) override {
    ++evaluated;
    cache_.Keep(keys_[node], value);
  }
  int evaluated = 0;

 private:
  ReferenceCache& cache_;
  const std::vector<std::string>& keys_;
};

ReferenceCache::ReferenceCache(int64_t max_bytes) : entries_(max_bytes) {}

const Tensor* ReferenceCache::Find(const std::string& key) { return entries_.Find(key); }

void ReferenceCache::Keep(const std::string& key, const Tensor& value) {
  if (!entries_.Contains(key)) entries_.Put(key, value, value.type().NumBytes());
}

ReferenceCache::Reference ReferenceCache::Get(const Graph& graph, uint64_t seed) {
  const std::vector<std::string> keys = ReferenceKeys(graph, seed);
  Reference r;
  // With every output known the parameters are only the job's inputs: keeping them could evict
  // the outputs (a 12-block GPT-2 stack's random weights are 340 MB, more than the cache holds,
  // and its reference took 4 s to compute again in every round of the whole graph's timing).
  bool outputs_known = true;
  for (ValueId out : graph.outputs()) outputs_known = outputs_known && Find(keys[out]);
  const std::vector<ValueId>& params = graph.params();
  // The previous job's inputs when they are the same (the rounds of one validation or of the
  // whole graph's timing): drawing the stack's 340 MB again took 1.4 s a round.
  std::string input_keys;
  for (ValueId p : params) input_keys += keys[p] + "\n";
  if (input_keys == last_input_keys_) {
    r.inputs = last_inputs_;
  } else {  // dropped before the new ones are drawn: a stack's weights are not held twice
    last_input_keys_.clear();
    last_inputs_.clear();
  }
  for (size_t i = r.inputs.size(); i < params.size(); ++i) {
    if (const Tensor* known = Find(keys[params[i]])) {
      r.inputs.push_back(*known);
    } else {
      r.inputs.push_back(RandomInput(graph, i, seed));
      if (!graph.value(params[i]).data && !outputs_known) Keep(keys[params[i]], r.inputs.back());
    }
  }
  last_input_keys_ = std::move(input_keys);
  last_inputs_ = r.inputs;
  for (ValueId out : graph.outputs()) r.outputs_key += keys[out] + "\n";
  ReferenceMemo memo(*this, keys);
  r.outputs = Interpret(graph, r.inputs, memo);
  r.evaluated = memo.evaluated;
  return r;
}

std::vector<double> ReferenceCache::Spread(const Graph& graph, const Reference& reference,
                                           uint64_t seed) {
  auto [it, added] = spreads_.try_emplace(reference.outputs_key);
  if (added)
    it->second =
        RoundingSpread(InterpretPerturbed(graph, reference.inputs, seed), reference.outputs);
  return it->second;
}

}  // namespace fusetune
