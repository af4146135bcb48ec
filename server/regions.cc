#include "server/regions.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>
#include <utility>

#include "ir/error.h"

namespace fusetune {
namespace {

struct UnionFind {
  std::vector<int> parent;
  explicit UnionFind(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  int Find(int x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  }
  void Unite(int a, int b) { parent[Find(a)] = Find(b); }
};

// Components of the relation among `nodes` induced by `groups`, ordered by first node.
std::vector<std::vector<ValueId>> Components(const std::vector<ValueId>& nodes,
                                             const std::vector<const FusedGroup*>& groups,
                                             size_t value_count) {
  UnionFind uf(value_count);
  for (const FusedGroup* g : groups)
    for (ValueId v : g->nodes) uf.Unite(g->nodes[0], v);
  std::map<int, std::vector<ValueId>> by_root;
  for (ValueId v : nodes) by_root[uf.Find(v)].push_back(v);
  std::vector<std::vector<ValueId>> out;
  for (auto& [root, members] : by_root) out.push_back(std::move(members));
  std::sort(out.begin(), out.end());
  return out;
}

bool Inside(const FusedGroup& g, const std::vector<ValueId>& sorted_nodes) {
  for (ValueId v : g.nodes)
    if (!std::binary_search(sorted_nodes.begin(), sorted_nodes.end(), v)) return false;
  return true;
}

// Where to cut a component (nodes ascending) larger than `max_nodes`: chunk ends (exclusive
// indices, the last one component.size()) such that no chunk is larger than `max_nodes` and the
// cuts cost the fewest bytes. A cut costs the bytes of each value it separates from a reader that
// some candidate fuses it with: the reader must read it from memory, and unless every such
// candidate writes it anyway (another reader is outside), it is written too, which the fusion
// would have saved. Equal totals prefer fewer chunks, then later cuts, so a stack of identical
// layers is cut alike in each layer. Fixed-stride cuts fell wherever the stride landed: through
// the attention of 11 of a 12-block GPT-2's layers, which no attention kernel could then cover.
std::vector<size_t> ChunkEnds(const Graph& graph, const std::vector<ValueId>& component,
                              const std::vector<const FusedGroup*>& groups, int max_nodes) {
  const size_t n = component.size();
  auto index = [&](ValueId v) {
    return static_cast<size_t>(std::lower_bound(component.begin(), component.end(), v) -
                               component.begin());
  };
  // reach[i]: the last reader of component[i] that a candidate fuses it with; twice[i]: whether
  // some such candidate keeps it inside (a cut then costs its write and its read, else the read).
  std::vector<size_t> reach(n, 0);
  std::vector<bool> twice(n, false);
  for (const FusedGroup* g : groups) {
    if (index(g->nodes.front()) >= n || component[index(g->nodes.front())] != g->nodes.front())
      continue;  // another component's
    for (ValueId reader : g->nodes)
      for (ValueId v : graph.value(reader).inputs)
        if (std::binary_search(g->nodes.begin(), g->nodes.end(), v)) {
          reach[index(v)] = std::max(reach[index(v)], index(reader));
          // A recomputed member is stored by another group: kept inside only here.
          if (!std::binary_search(g->outputs.begin(), g->outputs.end(), v) &&
              !std::binary_search(g->recompute.begin(), g->recompute.end(), v))
            twice[index(v)] = true;
        }
  }
  // split[p]: the bytes a cut before component[p] makes the kernels move.
  std::vector<int64_t> split(n + 1, 0);
  for (size_t i = 0; i < n; ++i)
    if (reach[i] > i) {
      const int64_t bytes = graph.value(component[i]).type.NumBytes() * (twice[i] ? 2 : 1);
      split[i + 1] += bytes;
      split[reach[i] + 1] -= bytes;
    }
  for (size_t p = 1; p <= n; ++p) split[p] += split[p - 1];
  // best[j]: (bytes split, chunks) of the best cuts of component[0, j), from[j] its last cut.
  std::vector<std::pair<int64_t, int64_t>> best(n + 1, {0, 0});
  std::vector<size_t> from(n + 1, 0);
  for (size_t j = 1; j <= n; ++j) {
    const int64_t here = j < n ? split[j] : 0;
    best[j] = {INT64_MAX, INT64_MAX};
    for (size_t i = j - 1;; --i) {
      const std::pair<int64_t, int64_t> cost{best[i].first + here, best[i].second + 1};
      if (cost < best[j]) best[j] = cost, from[j] = i;  // ties keep the later i
      if (i == 0 || j - i >= static_cast<size_t>(max_nodes)) break;
    }
  }
  std::vector<size_t> ends;
  for (size_t j = n; j > 0; j = from[j]) ends.push_back(j);
  std::reverse(ends.begin(), ends.end());
  return ends;
}

}  // namespace

std::vector<Region> BuildRegions(const Graph& graph, const std::vector<FusedGroup>& candidates,
                                 int max_nodes) {
  FT_CHECK(max_nodes >= 1 && max_nodes <= 64, "region size must be 1..64");
  std::vector<ValueId> all;
  for (size_t v = 0; v < graph.values().size(); ++v)
    if (graph.values()[v].kind == ValueKind::kNode) all.push_back(static_cast<ValueId>(v));
  std::vector<const FusedGroup*> multi;
  for (const FusedGroup& g : candidates)
    if (g.nodes.size() > 1) multi.push_back(&g);

  std::vector<std::vector<ValueId>> pieces;
  for (auto& component : Components(all, multi, graph.values().size())) {
    if (static_cast<int>(component.size()) <= max_nodes) {
      pieces.push_back(std::move(component));
      continue;
    }
    // Cut into consecutive chunks, then split each chunk into what stays connected inside it.
    size_t begin = 0;
    for (size_t end : ChunkEnds(graph, component, multi, max_nodes)) {
      std::vector<ValueId> chunk(component.begin() + begin, component.begin() + end);
      begin = end;
      std::vector<const FusedGroup*> inside;
      for (const FusedGroup* g : multi)
        if (Inside(*g, chunk)) inside.push_back(g);
      for (auto& piece : Components(chunk, inside, graph.values().size()))
        pieces.push_back(std::move(piece));
    }
  }
  std::sort(pieces.begin(), pieces.end());

  std::vector<Region> regions;
  for (auto& nodes : pieces) {
    Region r;
    r.nodes = std::move(nodes);
    for (const FusedGroup& g : candidates)
      if (std::binary_search(r.nodes.begin(), r.nodes.end(), g.nodes[0]) && Inside(g, r.nodes))
        r.groups.push_back(g);
    regions.push_back(std::move(r));
  }
  return regions;
}

}  // namespace fusetune
