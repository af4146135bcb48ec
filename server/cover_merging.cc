#include "server/cover_merging.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace fusetune {

Partition MergeWithinNoise(const std::vector<CostedGroup>& candidates, const Partition& best,
                           double floor) {
  if (!best.found()) return best;
  std::map<std::vector<ValueId>, size_t> by_nodes;
  for (size_t i = 0; i < candidates.size(); ++i)
    if (candidates[i].recompute.empty() && std::isfinite(candidates[i].cost))
      by_nodes.emplace(candidates[i].nodes, i);
  const double limit = best.cost * (1 + floor);
  Partition cover = best;
  for (;;) {
    size_t take_a = 0, take_b = 0, take_union = 0;
    double take_cost = 0;
    bool found = false;
    for (size_t a = 0; a < cover.groups.size(); ++a) {
      const CostedGroup& ga = candidates[cover.groups[a]];
      if (!ga.recompute.empty()) continue;
      for (size_t b = a + 1; b < cover.groups.size(); ++b) {
        const CostedGroup& gb = candidates[cover.groups[b]];
        if (!gb.recompute.empty()) continue;
        std::vector<ValueId> both;
        std::merge(ga.nodes.begin(), ga.nodes.end(), gb.nodes.begin(), gb.nodes.end(),
                   std::back_inserter(both));
        auto it = by_nodes.find(both);
        if (it == by_nodes.end()) continue;
        const double cost = cover.cost - ga.cost - gb.cost + candidates[it->second].cost;
        if (cost <= limit && (!found || cost < take_cost)) {
          take_a = a, take_b = b, take_union = it->second, take_cost = cost;
          found = true;
        }
      }
    }
    if (!found) return cover;
    cover.groups.erase(cover.groups.begin() + static_cast<std::ptrdiff_t>(take_b));
    cover.groups[take_a] = take_union;
    cover.cost = take_cost;
  }
}

}  // namespace fusetune
