#include "worker/reference_cache.h"

#include <fmt/format.h>

#include "ir/interpreter.h"
#include "ir/text/signature.h"

namespace fusetune {
namespace {

std::string DataKey(const Tensor& data) {
  std::string_view bytes(static_cast<const char*>(data.data()),
                         static_cast<size_t>(data.type().NumBytes()));
  return fmt::format("data({}, {})", data.type().ToString(), Hash128Hex(bytes));
}

}  // namespace

std::vector<std::string> ReferenceKeys(const Graph& graph, uint64_t seed) {
  std::vector<std::string> keys(graph.values().size());
  const std::vector<ValueId>& params = graph.params();
  for (size_t i = 0; i < params.size(); ++i) {
    const Value& p = graph.value(params[i]);
    // As RandomInputs draws them: by seed and position.
    keys[params[i]] =
        p.data ? DataKey(*p.data)
               : fmt::format("random({}, seed {}, parameter {})", p.type.ToString(), seed, i);
  }
  for (ValueId v = 0; v < static_cast<ValueId>(graph.values().size()); ++v) {
    const Value& value = graph.value(v);
    if (value.kind == ValueKind::kConst) {
      keys[v] = DataKey(*value.data);
    } else if (value.kind == ValueKind::kNode) {
      // The node alone, its operands as inputs p0, p1, ... in the order the canonical form lists
      // them; then what each of those inputs is.
      const ValueId one[] = {v};
      CanonicalForm form = Canonicalize(graph, one);
      std::string text = form.text;
      for (ValueId in : form.inputs) text += "\n" + keys[in];
      keys[v] = Hash128Hex(text);
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

ReferenceCache::ReferenceCache(int64_t max_bytes) : max_bytes_(max_bytes) {}

const Tensor* ReferenceCache::Find(const std::string& key) {
  auto it = entries_.find(key);
  if (it == entries_.end()) return nullptr;
  recency_.splice(recency_.begin(), recency_, it->second.position);
  return &it->second.value;
}

void ReferenceCache::Keep(const std::string& key, const Tensor& value) {
  const int64_t size = value.type().NumBytes();
  if (size > max_bytes_ || entries_.count(key)) return;
  while (bytes_ + size > max_bytes_ && !recency_.empty()) {
    auto last = entries_.find(recency_.back());
    bytes_ -= last->second.value.type().NumBytes();
    entries_.erase(last);
    recency_.pop_back();
  }
  recency_.push_front(key);
  entries_.emplace(key, Entry{value, recency_.begin()});
  bytes_ += size;
}

ReferenceCache::Reference ReferenceCache::Get(const Graph& graph, uint64_t seed) {
  const std::vector<std::string> keys = ReferenceKeys(graph, seed);
  Reference r;
  const std::vector<ValueId>& params = graph.params();
  for (size_t i = 0; i < params.size(); ++i) {
    if (const Tensor* known = Find(keys[params[i]])) {
      r.inputs.push_back(*known);
    } else {
      r.inputs.push_back(RandomInput(graph, i, seed));
      if (!graph.value(params[i]).data) Keep(keys[params[i]], r.inputs.back());
    }
  }
  ReferenceMemo memo(*this, keys);
  r.outputs = Interpret(graph, r.inputs, memo);
  r.evaluated = memo.evaluated;
  return r;
}

}  // namespace fusetune
