#pragma once
// The reference outputs of measurement jobs, computed once per worker process and shared: every
// schedule and candidate of a group, both validation rounds of a region, and later requests with
// the same inputs get the interpreter's values without evaluating them again.
//
// Values are kept per node, keyed by what determines them: the node's op, attributes and types
// (its canonical text, ir/text/signature.h) and the keys of its operands, down to the job's
// parameters, which are the deterministic random tensors of (type, seed, position) or, for
// parameters and constants that carry data, a hash of that data. So groups that share an anchor
// (a dense with or without its bias and activation) share the anchor's value too. Bounded in
// bytes; the least recently used values leave first.
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"
#include "worker/lru_map.h"

namespace fusetune {

class ReferenceCache {
 public:
  explicit ReferenceCache(int64_t max_bytes = int64_t{256} << 20);

  struct Reference {
    std::vector<Tensor> inputs;   // RandomInputs(graph, seed)
    std::vector<Tensor> outputs;  // Interpret(graph, inputs)
    int evaluated = 0;            // nodes the interpreter evaluated (0: every output was kept)
    std::string outputs_key;      // the outputs' keys: Spread keeps its figures under it
  };
  // The tensors are shared with the cache: read them, never write.
  Reference Get(const Graph& graph, uint64_t seed);
  // RoundingSpread of Get's reference (worker/output_check.h): InterpretPerturbed(graph,
  // reference.inputs, seed) against it, kept apart from the values (a few numbers per graph, which
  // a whole graph's check asks for in every round).
  std::vector<double> Spread(const Graph& graph, const Reference& reference, uint64_t seed);

  int64_t bytes() const { return entries_.cost(); }
  size_t size() const { return entries_.size(); }

 private:
  friend class ReferenceMemo;
  const Tensor* Find(const std::string& key);
  void Keep(const std::string& key, const Tensor& value);

  LruMap<Tensor> entries_;                                        // costs in bytes
  std::unordered_map<std::string, std::vector<double>> spreads_;  // by the outputs' keys
  std::string last_input_keys_;      // the last Get's parameters' keys, in order
  std::vector<Tensor> last_inputs_;  // and their values, outside the bound
};

// The key of every value of `graph` (by ValueId) when its parameters are RandomInputs(graph, seed).
std::vector<std::string> ReferenceKeys(const Graph& graph, uint64_t seed);

}  // namespace fusetune
