#include "worker/buffer_plan.h"

#include <algorithm>

namespace fusetune {

BufferPlan PlanBuffers(const std::vector<BufferStep>& steps,
                       const std::function<int64_t(ValueId)>& bytes,
                       const std::unordered_set<ValueId>& own) {
  std::unordered_map<ValueId, size_t> last_use;
  for (size_t i = 0; i < steps.size(); ++i) {
    for (ValueId v : steps[i].writes) last_use.emplace(v, i);
    for (ValueId v : steps[i].reads) last_use[v] = i;
  }
  BufferPlan plan;
  struct FreeBlock {
    int block;
    int64_t freed;  // when, in releases: a larger number is more recent
  };
  std::vector<FreeBlock> free;
  int64_t releases = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    for (ValueId v : steps[i].writes) {
      if (own.count(v) || plan.block_of.count(v)) continue;
      const int64_t need = bytes(v);
      auto fits_better = [&](const FreeBlock& a, const FreeBlock& b) {
        const int64_t sa = plan.block_bytes[a.block], sb = plan.block_bytes[b.block];
        return sa != sb ? sa < sb : a.freed > b.freed;
      };
      auto best = free.end();
      for (auto it = free.begin(); it != free.end(); ++it)
        if (plan.block_bytes[it->block] >= need && (best == free.end() || fits_better(*it, *best)))
          best = it;
      if (best == free.end() && !free.empty())
        best = std::max_element(free.begin(), free.end(), [&](const auto& a, const auto& b) {
          return plan.block_bytes[a.block] < plan.block_bytes[b.block];
        });
      int block;
      if (best != free.end()) {
        block = best->block;
        plan.block_bytes[block] = std::max(plan.block_bytes[block], need);
        free.erase(best);
      } else {
        block = static_cast<int>(plan.block_bytes.size());
        plan.block_bytes.push_back(need);
      }
      plan.block_of.emplace(v, block);
    }
    // Released only now, after this step's outputs have their blocks: never one of its inputs'.
    auto release = [&](ValueId v) {
      auto it = plan.block_of.find(v);
      if (it == plan.block_of.end() || last_use.at(v) != i) return;
      const bool already = std::any_of(free.begin(), free.end(),
                                       [&](const FreeBlock& f) { return f.block == it->second; });
      if (!already) free.push_back({it->second, releases++});
    };
    for (ValueId v : steps[i].reads) release(v);
    for (ValueId v : steps[i].writes) release(v);
  }
  return plan;
}

}  // namespace fusetune
