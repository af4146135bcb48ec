#include "server/cover_merging.h"

#include <algorithm>
#include <cmath>

namespace fusetune {

Partition MergeWithinNoise(const std::vector<CostedGroup>& candidates, const Partition& best,
                           double floor) {
  if (!best.found()) return best;
  const double limit = best.cost * (1 + floor);
  Partition cover = best;
  for (;;) {
    std::vector<size_t> take_parts;  // positions in cover.groups, ascending
    size_t take_union = 0;
    double take_cost = 0;
    for (size_t c = 0; c < candidates.size(); ++c) {
      const CostedGroup& u = candidates[c];
      if (u.nodes.size() < 2 || !u.recompute.empty() || !std::isfinite(u.cost)) continue;
      // The cover's groups inside `u`; `u` is their union when they hold all of its nodes and no
      // group of the cover lies partly inside it.
      std::vector<size_t> parts;
      size_t covered = 0;
      double parts_cost = 0;
      bool exact = true;
      for (size_t g = 0; g < cover.groups.size() && exact; ++g) {
        const CostedGroup& part = candidates[cover.groups[g]];
        const size_t inside =
            static_cast<size_t>(std::count_if(part.nodes.begin(), part.nodes.end(), [&](ValueId v) {
              return std::binary_search(u.nodes.begin(), u.nodes.end(), v);
            }));
        if (inside == 0) continue;
        exact = inside == part.nodes.size() && part.recompute.empty();
        parts.push_back(g);
        covered += inside;
        parts_cost += part.cost;
      }
      if (!exact || parts.size() < 2 || covered != u.nodes.size()) continue;
      const double cost = cover.cost - parts_cost + u.cost;
      if (cost <= limit && (take_parts.empty() || cost < take_cost))
        take_parts = std::move(parts), take_union = c, take_cost = cost;
    }
    if (take_parts.empty()) return cover;
    for (auto g = take_parts.rbegin(); g != take_parts.rend(); ++g)
      cover.groups.erase(cover.groups.begin() + static_cast<std::ptrdiff_t>(*g));
    cover.groups.push_back(take_union);
    cover.cost = take_cost;
  }
}

}  // namespace fusetune
