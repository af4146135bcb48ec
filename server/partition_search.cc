// The partition search: a dynamic program over the downward-closed node sets of a region.
//
// A state is a set S of region nodes closed under "input of" within the region (everything S
// needs from the region is in S): the nodes computed so far. From S, any candidate group G that
// is disjoint from S and whose region inputs all lie in S can run next, giving S ∪ G, again
// downward closed. Every valid ordered cover is a path from ∅ to the full set, and every path is
// one, so the cheapest path is the best partition whose group order is acyclic. States are
// visited by size (each step adds at least one node), so each is final when it is expanded.
//
//   ∅ ──{%0}──▶ {%0} ──{%1,%2}──▶ {%0,%1,%2}
//   └──{%0,%1,%2}────────────────▶ {%0,%1,%2}     keep the cheaper of the two
#include "server/partition_search.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <unordered_map>

#include "ir/error.h"

namespace fusetune {
namespace {

struct Best {
  double cost;
  int groups;
  uint64_t from;
  size_t via;
};

bool Better(double cost, int groups, size_t via, const Best& b) {
  if (cost != b.cost) return cost < b.cost;
  if (groups != b.groups) return groups < b.groups;
  return via < b.via;
}

}  // namespace

Partition FindBestPartition(const Graph& graph, const std::vector<ValueId>& region,
                            const std::vector<CostedGroup>& candidates) {
  const size_t n = region.size();
  FT_CHECK(n >= 1 && n <= 64, "partition search handles regions of 1 to 64 nodes");
  auto bit = [&](ValueId v) -> int {
    auto it = std::lower_bound(region.begin(), region.end(), v);
    return it != region.end() && *it == v ? static_cast<int>(it - region.begin()) : -1;
  };
  std::vector<uint64_t> preds(n, 0);
  for (size_t i = 0; i < n; ++i)
    for (ValueId in : graph.value(region[i]).inputs)
      if (int b = bit(in); b >= 0) preds[i] |= uint64_t{1} << b;

  struct Move {
    uint64_t mask, needs;
    double cost;
    size_t index;
  };
  std::vector<Move> moves;
  for (size_t c = 0; c < candidates.size(); ++c) {
    if (!(candidates[c].cost < std::numeric_limits<double>::infinity())) continue;
    uint64_t mask = 0, needs = 0;
    bool inside = true;
    for (ValueId v : candidates[c].nodes) {
      int b = bit(v);
      if (b < 0)
        inside = false;
      else
        mask |= uint64_t{1} << b;
    }
    if (!inside) continue;
    for (size_t i = 0; i < n; ++i)
      if (mask >> i & 1) needs |= preds[i];
    moves.push_back({mask, needs & ~mask, candidates[c].cost, c});
  }

  const uint64_t full = n == 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1;
  std::unordered_map<uint64_t, Best> best{{0, {0.0, 0, 0, 0}}};
  std::vector<std::vector<uint64_t>> by_size(n + 1);
  by_size[0].push_back(0);
  for (size_t size = 0; size < n; ++size) {
    std::sort(by_size[size].begin(), by_size[size].end());
    for (uint64_t state : by_size[size]) {
      const Best here = best.at(state);
      for (const Move& m : moves) {
        if ((m.mask & state) || (m.needs & ~state)) continue;
        uint64_t next = state | m.mask;
        double cost = here.cost + m.cost;
        auto it = best.find(next);
        if (it == best.end()) {
          best.emplace(next, Best{cost, here.groups + 1, state, m.index});
          by_size[std::popcount(next)].push_back(next);
        } else if (Better(cost, here.groups + 1, m.index, it->second)) {
          it->second = Best{cost, here.groups + 1, state, m.index};
        }
      }
    }
  }

  Partition result;
  auto it = best.find(full);
  if (it == best.end()) return result;
  result.cost = it->second.cost;
  for (uint64_t state = full; state != 0;) {
    const Best& b = best.at(state);
    result.groups.push_back(b.via);
    state = b.from;
  }
  std::reverse(result.groups.begin(), result.groups.end());
  return result;
}

}  // namespace fusetune
