#include "server/regions.h"

#include <algorithm>
#include <map>
#include <numeric>

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
    for (size_t begin = 0; begin < component.size(); begin += max_nodes) {
      std::vector<ValueId> chunk(component.begin() + begin,
                                 component.begin() + std::min(component.size(), begin + max_nodes));
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
