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
//
// The runner-up. Each state also keeps its second-best cover whose set of groups differs from
// the best's (a hash of the group set tells covers apart; the same groups reached in another order
// are one cover). That suffices: take the true second-best cover C2 of a state and a group m it
// can run last, from state S'. C2 without m is a cover of S'; if it is not S''s best or second,
// both of those plus m are at least as cheap as C2, and at most one of them is the best cover, so
// the other is a second-best as good as C2. The best of each state is chosen exactly as without
// the runner-up (from best entries only).
//
// Recomputation. A node some candidate recomputes may be declared unstored by a move of its own
// (no cost, no group); the state then also records which done nodes are unstored. A group may read
// only stored nodes from memory and may recompute only unstored ones, so once a node is declared
// unstored every group that reads it recomputes it. Covers end in any state with every node done.
#include "server/partition_search.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <optional>
#include <unordered_map>

#include "ir/error.h"

namespace fusetune {
namespace {

// One way to reach a state: its cost, group count, the identity of its group set, and the step
// that led here (the previous state, which of its two entries, and the candidate taken).
struct Entry {
  double cost = std::numeric_limits<double>::infinity();
  int groups = 0;
  uint64_t cover = 0;  // sum of a hash of each candidate index: the same set gives the same sum
  uint64_t from = 0;   // the previous state's nodes done
  uint64_t from_unstored = 0;
  int from_rank = 0;
  size_t via = 0;
  bool found() const { return cost < std::numeric_limits<double>::infinity(); }
};

bool Better(const Entry& a, const Entry& b) {
  if (a.cost != b.cost) return a.cost < b.cost;
  if (a.groups != b.groups) return a.groups < b.groups;
  return a.via < b.via;
}

uint64_t Mix(uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The best and second-best entries of a state.
using Ranked = std::array<Entry, 2>;

// An entry built on a state's second-best never becomes a best: the best is chosen from best
// entries only, exactly as a search without the runner-up chooses it.
void Offer(Ranked& r, const Entry& e, bool may_be_best) {
  if (may_be_best && (!r[0].found() || Better(e, r[0]))) {
    const Entry old = r[0];
    r[0] = e;
    if (r[1].found() && r[1].cover == e.cover) r[1] = Entry{};
    if (old.found() && old.cover != e.cover && (!r[1].found() || Better(old, r[1]))) r[1] = old;
  } else if ((!r[0].found() || e.cover != r[0].cover) && (!r[1].found() || Better(e, r[1]))) {
    r[1] = e;
  }
}

}  // namespace

RankedPartitions FindBestPartitions(const Graph& graph, const std::vector<ValueId>& region,
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
  // Nodes that may go unstored: nothing outside the region reads them.
  uint64_t private_nodes = 0;
  for (size_t i = 0; i < n; ++i) {
    const std::vector<ValueId>& readers = graph.Users(region[i]);
    if (std::all_of(readers.begin(), readers.end(), [&](ValueId u) { return bit(u) >= 0; }))
      private_nodes |= uint64_t{1} << i;
  }
  for (ValueId o : graph.outputs())
    if (int b = bit(o); b >= 0) private_nodes &= ~(uint64_t{1} << b);

  // A move stores `mask`, reads `needs` from memory (stored earlier) and recomputes `virt`
  // (unstored: some earlier move declared it so). Declaring node i unstored is a move of its
  // own, at no cost, possible at any time: what i reads is read by each group recomputing it, so
  // it is among that group's needs (or stored by that group itself).
  struct Move {
    uint64_t mask, needs, virt;
    bool declares;  // the move that declares `mask` unstored
    double cost;
    size_t index;  // the candidate; candidates.size() + i for the declaration of node i
  };
  std::vector<Move> moves;
  uint64_t recomputable = 0;
  // The nodes' bits, or nullopt when one lies outside the region.
  auto mask_of = [&](const std::vector<ValueId>& nodes) -> std::optional<uint64_t> {
    uint64_t mask = 0;
    for (ValueId v : nodes) {
      const int b = bit(v);
      if (b < 0) return std::nullopt;
      mask |= uint64_t{1} << b;
    }
    return mask;
  };
  for (size_t c = 0; c < candidates.size(); ++c) {
    if (!(candidates[c].cost < std::numeric_limits<double>::infinity())) continue;
    const std::optional<uint64_t> held_bits = mask_of(candidates[c].nodes),
                                  virt_bits = mask_of(candidates[c].recompute);
    if (!held_bits || !virt_bits || (*virt_bits & ~private_nodes)) continue;
    const uint64_t held = *held_bits, virt = *virt_bits;
    uint64_t needs = 0;
    recomputable |= virt;
    for (size_t i = 0; i < n; ++i)
      if (held >> i & 1) needs |= preds[i];
    moves.push_back({held & ~virt, needs & ~held, virt, false, candidates[c].cost, c});
  }
  for (size_t i = 0; i < n; ++i)
    if (recomputable >> i & 1)
      moves.push_back({uint64_t{1} << i, 0, 0, true, 0.0, candidates.size() + i});

  // A state: the nodes done (stored or declared unstored) and, among them, the unstored ones.
  struct Key {
    uint64_t done, unstored;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const { return Mix(k.done ^ Mix(k.unstored)); }
  };
  Ranked start;
  start[0] = Entry{0.0, 0, 0, 0, 0, 0, 0};
  std::unordered_map<Key, Ranked, KeyHash> states{{Key{0, 0}, start}};
  std::vector<std::vector<Key>> by_size(n + 1);
  by_size[0].push_back({0, 0});
  for (size_t size = 0; size < n; ++size) {
    std::sort(by_size[size].begin(), by_size[size].end(), [](const Key& a, const Key& b) {
      return a.done != b.done ? a.done < b.done : a.unstored < b.unstored;
    });
    for (const Key& state : by_size[size]) {
      const Ranked here = states.at(state);
      const uint64_t stored = state.done & ~state.unstored;
      for (const Move& m : moves) {
        if (m.mask & state.done) continue;
        if ((m.needs & ~stored) || (m.virt & ~state.unstored)) continue;
        const Key next{state.done | m.mask, m.declares ? state.unstored | m.mask : state.unstored};
        auto [it, fresh] = states.try_emplace(next);
        if (fresh) by_size[std::popcount(next.done)].push_back(next);
        for (int rank = 0; rank < 2; ++rank) {
          if (!here[rank].found()) continue;
          Offer(it->second,
                Entry{here[rank].cost + m.cost, here[rank].groups + (m.declares ? 0 : 1),
                      here[rank].cover + Mix(m.index), state.done, state.unstored, rank, m.index},
                rank == 0);
        }
      }
    }
  }

  // Every state with all nodes done ends a cover; the best and runner-up over all of them.
  Ranked ends;
  for (const Key& state : by_size[n])
    for (int rank = 0; rank < 2; ++rank)
      if (const Entry& e = states.at(state)[rank]; e.found()) {
        Entry end = e;
        end.from = state.done;
        end.from_unstored = state.unstored;
        end.from_rank = rank;
        Offer(ends, end, rank == 0);
      }
  auto walk_back = [&](int rank) {
    Partition p;
    if (!ends[rank].found()) return p;
    p.cost = ends[rank].cost;
    Key state{ends[rank].from, ends[rank].from_unstored};
    for (int r = ends[rank].from_rank; state.done != 0;) {
      const Entry& e = states.at(state)[r];
      if (e.via < candidates.size()) p.groups.push_back(e.via);
      state = Key{e.from, e.from_unstored};
      r = e.from_rank;
    }
    std::reverse(p.groups.begin(), p.groups.end());
    return p;
  };
  return {walk_back(0), walk_back(1)};
}

Partition FindBestPartition(const Graph& graph, const std::vector<ValueId>& region,
                            const std::vector<CostedGroup>& candidates) {
  return FindBestPartitions(graph, region, candidates).best;
}

}  // namespace fusetune
