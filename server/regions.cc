#include "server/regions.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>
#include <optional>
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

// Whether component[i] and component[j] are the same node of two repetitions: the same op,
// attributes and type, reading values from as far back in the component (or the same values from
// outside it, e.g. a parameter shared by every layer, or a constant).
bool SameNodeOfTwoRepetitions(const Graph& graph, const std::vector<ValueId>& component, size_t i,
                              size_t j) {
  const Value& a = graph.value(component[i]);
  const Value& b = graph.value(component[j]);
  if (a.op != b.op || a.type != b.type || a.attrs != b.attrs || a.inputs.size() != b.inputs.size())
    return false;
  for (size_t k = 0; k < a.inputs.size(); ++k) {
    auto at = std::lower_bound(component.begin(), component.end(), a.inputs[k]);
    auto bt = std::lower_bound(component.begin(), component.end(), b.inputs[k]);
    const bool a_inside = at != component.end() && *at == a.inputs[k];
    const bool b_inside = bt != component.end() && *bt == b.inputs[k];
    if (a_inside != b_inside) return false;
    if (a_inside ? (component.begin() + i) - at != (component.begin() + j) - bt
                 : graph.value(a.inputs[k]).type != graph.value(b.inputs[k]).type)
      return false;
  }
  return true;
}

// A stack of identical layers is cut alike in every layer, so the layers' regions share one
// signature and are searched once. The fewest bytes alone do not do that when a layer's part of
// the component is over half of `max_nodes`: LLaMA's 26 nodes a layer were cut every 38 and 40
// nodes, through a different place of each layer, six signatures where five do. The period is
// the smallest P (at most `max_nodes`, at least three repetitions) at which every node but those
// of one repetition (the first layer reads the model's input, the last feeds its head), and at
// most a quarter of them, is the same node as the one P later. Among cuts every Q nodes (Q a
// multiple of P up to `max_nodes`) at offset o, the fewest bytes win; ties go to fewer chunks,
// then later cuts. Empty without a period: the caller cuts by bytes alone.
std::optional<std::vector<size_t>> PeriodicChunkEnds(const Graph& graph,
                                                     const std::vector<ValueId>& component,
                                                     const std::vector<int64_t>& split,
                                                     int max_nodes) {
  const size_t n = component.size();
  size_t period = 0;
  for (size_t p = 1; p <= static_cast<size_t>(max_nodes) && 3 * p <= n && period == 0; ++p) {
    size_t differ = 0;
    for (size_t i = 0; i + p < n && differ <= p; ++i)
      differ += !SameNodeOfTwoRepetitions(graph, component, i, i + p);
    if (differ <= p && 4 * differ <= n - p) period = p;
  }
  if (period == 0) return std::nullopt;
  std::optional<std::vector<size_t>> best;
  std::pair<int64_t, size_t> best_cost{INT64_MAX, 0};  // bytes, chunks
  for (size_t q = period; q <= static_cast<size_t>(max_nodes); q += period)
    for (size_t offset = 0; offset < q; ++offset) {
      std::vector<size_t> ends;
      int64_t bytes = 0;
      for (size_t cut = offset == 0 ? q : offset; cut < n; cut += q) {
        ends.push_back(cut);
        bytes += split[cut];
      }
      ends.push_back(n);
      const std::pair<int64_t, size_t> cost{bytes, ends.size()};
      if (cost <= best_cost) best_cost = cost, best = std::move(ends);  // ties: the later offset
    }
  return best;
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
  if (auto periodic = PeriodicChunkEnds(graph, component, split, max_nodes)) return *periodic;
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
