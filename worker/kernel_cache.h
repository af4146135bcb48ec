#pragma once
// Compiled kernels kept for the life of a worker process, so validating and re-timing plans never
// compiles a kernel that a candidate job already compiled. A kernel is found only under the exact
// key of what its code depends on (KernelKey): the group's structure in kernel-argument order, the
// schedule, the target, the thread count and the optimisation level. Bounded in kernels; the least
// recently used leave first (a plan that still holds one keeps it alive). Thread-safe: kernels
// compiled ahead on other threads (worker/prep_pool.h) are put here.
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "ir/fusion.h"
#include "ir/graph.h"
#include "ir/plan.h"
#include "worker/codegen/compile.h"
#include "worker/lru_map.h"

namespace fusetune {

// Everything the generated code of `group` depends on: the group's canonical text (ops,
// attributes, shapes, dtypes, constants), which canonical input and node each kernel argument
// and each group node is (two groups alike but for the order of their arguments get different
// keys), the schedule, the target fingerprint, the thread count and the optimisation level; and
// with wpack, whether the graph computes the matmul's B (then packed per call, not at bind time).
std::string KernelKey(const Graph& graph, const FusedGroup& group, const Schedule& schedule,
                      const std::string& target, int threads, int opt_level);

// What lets a kernel compiled for one group serve another group whose code is the same but whose
// inputs are numbered in another order: a kernel takes its arguments in ValueId order, and a
// graph that declares every layer's weights before the first layer's input (Relay text does)
// numbers the first layer's arguments unlike the others'.
struct KernelShare {
  std::string key;  // KernelKey but for the order of the inputs
  // Per group input, in argument order, its part in the code: "p<i>" (its canonical input), or
  // for a constant its text and occurrence (equal texts are equal values, so either serves).
  std::vector<std::string> roles;
};
KernelShare ShareOf(const Graph& graph, const FusedGroup& group, const Schedule& schedule,
                    const std::string& target, int threads, int opt_level);
// `group`'s inputs in the argument order of the kernel compiled for `owner`'s group, or nullopt
// when that kernel cannot serve it.
std::optional<std::vector<ValueId>> ArgumentsFor(const KernelShare& owner, const KernelShare& share,
                                                 const FusedGroup& group);

class KernelCache {
 public:
  explicit KernelCache(size_t max_kernels = 1024);

  std::shared_ptr<const codegen::CompiledKernel> Find(const std::string& key);
  bool Contains(const std::string& key) const;  // neither a hit nor a miss, nor a use
  void Put(const std::string& key, std::shared_ptr<const codegen::CompiledKernel> kernel);

  size_t size() const;
  int64_t hits() const;
  int64_t misses() const;

 private:
  mutable std::mutex mutex_;
  LruMap<std::shared_ptr<const codegen::CompiledKernel>> entries_;  // each costs 1
  int64_t hits_ = 0, misses_ = 0;
};

}  // namespace fusetune
